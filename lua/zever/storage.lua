-- zever.storage: the front-end of the storage battery (app.storage): objects by key, presigned
-- upload and download URLs (HMAC-SHA256, expiry, single-use uploads) served by zever itself,
-- ranged downloads, and content types sniffed from the bytes.
--
--   local store = storage.new{ root = "/srv/app/storage", secret = "..." }    -- local adapter
--   store:put(key, data)                    -> { key, size, content_type } | nil, err
--   store:get(key[, { first, last }])       -> data, info | nil, err ("not_found")
--   store:stat(key)                         -> { key, size, modified, content_type } | nil, err
--   store:exists(key)                       -> boolean
--   store:delete(key)                       -> true | nil, err ("not_found")
--   store:move(from, to)                    -> true | nil, err ("not_found")
--   store:presign(method, key[, { expires = 900, content_type =, max_bytes =, once = }])
--                                           -> url (a path: prefix .. "/" .. key .. "?...")
--   store:verify(method, key, query[, now]) -> true | nil, err ("invalid", "expired", "replayed")
--   store:mount(app)                        serves GET and PUT under the prefix (/_storage)
--   storage.sniff(bytes, key)               -> a content type
--
-- Keys: 1..1024 bytes of path segments ("avatars/42.png") of letters, digits and "-_.=+@,~";
-- no empty segment, none that is "." or "..", no leading "/": a bad key is "invalid" (keys come
-- from requests), a key that is not a string raises.
--
-- Presigned URLs: s = base64url(HMAC-SHA256(secret, method \n key \n e \n n \n t \n m)) where e
-- is the Unix expiry, n a random nonce behind one character that says whether the URL works once
-- ("1") or until it expires ("0"; a bare random nonce that happened to begin with "1" made a
-- download URL single-use, 1 time in 64), t the content type an upload must declare ("" = any),
-- m the largest upload ("" = http.max_body_bytes). The secret is storage.secret, else the
-- app's crypto keyring (crypto.keys: rotation verifies with every key), else a process key
-- (URLs then die with the process). verify checks the signature in constant time first (a
-- tampered URL is "invalid" whatever its expiry), then the expiry ("expired"), then for an
-- upload (or a URL presigned with once = true) that the nonce was not used before ("replayed"):
-- nonces live in a process-wide memory table (zever.cache's C table, shared by the workers of
-- one `zever serve`) until their URL expires. Several processes behind a balancer each keep
-- their own: a replay to another process is not seen (say so where it matters).
--
-- mount(app) answers GET <prefix>/<key> with the object (Range: bytes=a-b, a-, -n give 206 and
-- Content-Range; an unsatisfiable range 416), its sniffed Content-Type and nosniff, and PUT
-- <prefix>/<key> with 201 { key, size } after storing the body (the URL's content type must
-- match the request's; a body over max_bytes is 413). A bad signature, an expired or replayed
-- URL: 403 { error = "invalid_signature" | "expired" | "replayed" }; a missing object 404, a
-- backend that did not answer the stat 503 { error = "unavailable" }. A ranged body is read
-- whole into memory: serve large public files with app:static.
--
-- storage.wrap(impl, opts) puts this front-end over an adapter (adapters.storage.local's
-- interface). opts: secret, prefix, expires (default presign lifetime), clock (Unix seconds).

local battery = require "zever.battery"
local crypto = require "zever.crypto"
local sys = require "zever.sys"

local type, error, tostring, tonumber, floor, format, find, sub, byte, gsub, match, concat =
  type, error, tostring, tonumber, math.floor, string.format, string.find, string.sub,
  string.byte, string.gsub, string.match, table.concat

local M = {}

local Store = battery.define("storage", "the storage is closed")
M.error = Store.error

local CLOSED = Store.CLOSED
local NOT_FOUND = Store.error("not_found", "no object has this key")
local BAD_KEY = Store.error("invalid", "the key is not a valid object key")
local TAMPERED = Store.error("invalid", "the URL's signature does not match")
local EXPIRED = Store.error("expired", "the URL has expired")
local REPLAYED = Store.error("replayed", "the URL was already used")

M.MAX_KEY = 1024

-- --- keys and content types ------------------------------------------------------------------

local function valid_key(key)
  if #key == 0 or #key > M.MAX_KEY then return false end
  if find(key, "[^%w%-_.=+@,~/]") then return false end
  for seg in (key .. "/"):gmatch("([^/]*)/") do
    if seg == "" or seg == "." or seg == ".." then return false end
  end
  return true
end
M.valid_key = valid_key

-- Magic numbers first (what the bytes are), then the key's extension, then octet-stream.
local MAGIC = {
  { "\137PNG\r\n\26\n", "image/png" }, { "\255\216\255", "image/jpeg" },
  { "GIF87a", "image/gif" }, { "GIF89a", "image/gif" }, { "%PDF-", "application/pdf" },
  { "PK\3\4", "application/zip" }, { "\31\139", "application/gzip" },
  { "\26\69\223\163", "video/webm" }, { "ID3", "audio/mpeg" }, { "OggS", "audio/ogg" },
  { "\0\0\1\0", "image/x-icon" }, { "wOF2", "font/woff2" }, { "wOFF", "font/woff" },
}
local EXT = {
  txt = "text/plain; charset=utf-8", csv = "text/csv; charset=utf-8",
  json = "application/json", html = "text/html; charset=utf-8", css = "text/css; charset=utf-8",
  js = "text/javascript; charset=utf-8", svg = "image/svg+xml", xml = "application/xml",
  md = "text/markdown; charset=utf-8", png = "image/png", jpg = "image/jpeg", jpeg = "image/jpeg",
  gif = "image/gif", webp = "image/webp", pdf = "application/pdf", mp4 = "video/mp4",
  mp3 = "audio/mpeg", zip = "application/zip",
}

function M.sniff(bytes, key)
  bytes = bytes or ""
  for i = 1, #MAGIC do
    local m = MAGIC[i][1]
    if sub(bytes, 1, #m) == m then return MAGIC[i][2] end
  end
  if sub(bytes, 1, 4) == "RIFF" and sub(bytes, 9, 12) == "WEBP" then return "image/webp" end
  if sub(bytes, 1, 4) == "RIFF" and sub(bytes, 9, 12) == "WAVE" then return "audio/wav" end
  if sub(bytes, 5, 8) == "ftyp" then return "video/mp4" end
  local ext = key and match(key, "%.([%w]+)$")
  local by_ext = ext and EXT[ext:lower()]
  if by_ext then return by_ext end
  if #bytes > 0 and not find(bytes, "%z") then return "text/plain; charset=utf-8" end
  return "application/octet-stream"
end

-- --- objects ---------------------------------------------------------------------------------

local function check_key(self, key, fname)
  if type(key) ~= "string" then error(fname .. ": key must be a string", 3) end
  if self.closed then return CLOSED end
  if not valid_key(key) then return BAD_KEY end
  return nil
end

local function info_of(self, key, st)
  return { key = key, size = st.size, modified = st.modified,
    content_type = M.sniff(self.impl:head(key, 512), key) }
end

function Store:put(key, data)
  local bad = check_key(self, key, "storage:put")
  if type(data) ~= "string" then error("storage:put: data must be a string", 2) end
  if bad then return nil, bad end
  local size, err = self.impl:put(key, data)
  if not size then return nil, err end
  return { key = key, size = size, content_type = M.sniff(sub(data, 1, 512), key) }
end

function Store:stat(key)
  local bad = check_key(self, key, "storage:stat")
  if bad then return nil, bad end
  local st, err = self.impl:stat(key)
  if not st then return nil, err or NOT_FOUND end
  return info_of(self, key, st)
end

function Store:get(key, range)
  local bad = check_key(self, key, "storage:get")
  battery.opt_table(range, "storage:get", "range")
  if bad then return nil, bad end
  local st, err = self.impl:stat(key)
  if not st then return nil, err or NOT_FOUND end
  local data
  if range then
    local first, last = range[1] or range.first, range[2] or range.last
    if type(first) ~= "number" or type(last) ~= "number" or first < 0 or last < first then
      error("storage:get: range must be { first, last } with 0 <= first <= last", 2)
    end
    if first >= st.size then return nil, Store.error("invalid", "the range starts past the end") end
    if last >= st.size then last = st.size - 1 end
    data = self.impl:get(key, first, last)
  else
    data = self.impl:get(key)
  end
  if data == nil then return nil, NOT_FOUND end
  return data, info_of(self, key, st)
end

function Store:exists(key)
  local bad = check_key(self, key, "storage:exists")
  if bad then return false end
  return self.impl:stat(key) ~= nil
end

function Store:delete(key)
  local bad = check_key(self, key, "storage:delete")
  if bad then return nil, bad end
  if not self.impl:delete(key) then return nil, NOT_FOUND end
  return true
end

function Store:move(from, to)
  local bad = check_key(self, from, "storage:move") or check_key(self, to, "storage:move")
  if bad then return nil, bad end
  local ok, err = self.impl:move(from, to)
  if ok == nil then return nil, err end
  if not ok then return nil, NOT_FOUND end
  return true
end

-- --- presigned URLs --------------------------------------------------------------------------

local function escape(s)
  return (gsub(s, "[^%w%-_.~/]", function(c) return format("%%%02X", byte(c)) end))
end

local function payload(method, key, e, n, t, m)
  return concat({ method, key, e, n, t, m }, "\n")
end

local function sign(self, msg)
  if self.secret then return crypto.hmac("sha256", self.secret, msg) end
  return crypto.default():sign(msg)
end

local function signed_by(self, msg, mac)
  if self.secret then return crypto.equal(crypto.hmac("sha256", self.secret, msg), mac) end
  return crypto.default():verify(msg, mac)
end

local METHODS = { GET = true, PUT = true }

function Store:presign(method, key, opts)
  if not METHODS[method] then error('storage:presign: method must be "GET" or "PUT"', 2) end
  local bad = check_key(self, key, "storage:presign")
  battery.opt_table(opts, "storage:presign", "opts")
  if bad then return nil, bad end
  opts = opts or {}
  local ttl = battery.seconds(opts.expires, self.expires, "storage:presign", "expires", true, true)
  local e = tostring(floor(self.clock() + ttl))
  local n = crypto.b64url(crypto.random_bytes(12))
  n = (opts.once and "1" or "0") .. n
  local t = opts.content_type or ""
  local m = opts.max_bytes and tostring(floor(opts.max_bytes)) or ""
  local s = crypto.b64url(sign(self, payload(method, key, e, n, t, m)))
  local q = { "e=" .. e, "n=" .. n, "s=" .. s }
  if t ~= "" then q[#q + 1] = "t=" .. escape(t) end
  if m ~= "" then q[#q + 1] = "m=" .. m end
  return self.prefix .. "/" .. escape(key) .. "?" .. concat(q, "&")
end

-- query: the URL's parameters (req.query). now: Unix seconds (default: the clock).
function Store:verify(method, key, query, now)
  if not METHODS[method] then error('storage:verify: method must be "GET" or "PUT"', 2) end
  local bad = check_key(self, key, "storage:verify")
  if type(query) ~= "table" then error("storage:verify: query must be a table", 2) end
  if bad then return nil, bad end
  local e, n, s = query.e, query.n, query.s
  local t, m = query.t or "", query.m or ""
  if type(e) ~= "string" or type(n) ~= "string" or type(s) ~= "string" or type(t) ~= "string"
    or type(m) ~= "string" or not match(e, "^%d+$") or #n > 64 then
    return nil, TAMPERED
  end
  local mac = crypto.unb64url(s)
  if not mac or not signed_by(self, payload(method, key, e, n, t, m), mac) then
    return nil, TAMPERED
  end
  now = now or self.clock()
  local expiry = tonumber(e)
  if now > expiry then return nil, EXPIRED end
  if method == "PUT" or sub(n, 1, 1) == "1" then
    local ttl = floor(expiry - now) + 1
    if not self.nonces:add(n, "1", ttl) then return nil, REPLAYED end
  end
  return true
end

-- --- serving -------------------------------------------------------------------------------

local DENIED = { invalid = "invalid_signature", expired = "expired", replayed = "replayed" }

local function deny(res, err)
  return res:status(403):json({ error = DENIED[err.code] or "invalid_signature", message = err.message })
end

-- The first..last of a Range header for an object of size bytes: first, last | nil (no or an
-- ignored header) | false (unsatisfiable).
local function range_of(header, size)
  if not header then return nil end
  local a, b = match(header, "^bytes=(%d*)%-(%d*)$")
  if not a or (a == "" and b == "") then return nil end
  local first, last
  if a == "" then
    local n = tonumber(b)
    if n == 0 then return false end
    first, last = size - n, size - 1
    if first < 0 then first = 0 end
  else
    first = tonumber(a)
    last = b == "" and size - 1 or tonumber(b)
    if b ~= "" and last < first then return nil end
    if first >= size then return false end
    if last >= size then last = size - 1 end
  end
  if first >= size then return false end
  return first, last
end
M.range_of = range_of

local function unescape(s)
  return (gsub(s, "%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

function Store:mount(app)
  local prefix = self.prefix
  app:get(prefix .. "/*key", function(req, res)
    local key = unescape(req.params.key)
    local ok, err = self:verify("GET", key, req.query)
    if not ok then
      if err.code == "invalid" and err ~= TAMPERED then
        return res:status(404):json({ error = "not_found" })
      end
      return deny(res, err)
    end
    local st, serr = self.impl:stat(key)
    if not st then
      -- A backend that did not answer (an S3 endpoint down, a timeout) is not a missing object.
      if serr then return res:status(503):json({ error = "unavailable" }) end
      return res:status(404):json({ error = "not_found" })
    end
    res:header("content-type", M.sniff(self.impl:head(key, 512), key))
    res:header("x-content-type-options", "nosniff")
    res:header("accept-ranges", "bytes")
    local first, last = range_of(req:header("range"), st.size)
    if first == false then
      res:header("content-range", "bytes */" .. st.size)
      return res:status(416):send("")
    end
    if first then
      res:header("content-range", format("bytes %d-%d/%d", first, last, st.size))
      return res:status(206):send(self.impl:get(key, first, last) or "")
    end
    return res:status(200):send(self.impl:get(key) or "")
  end)
  app:put(prefix .. "/*key", function(req, res)
    local key = unescape(req.params.key)
    local ok, err = self:verify("PUT", key, req.query)
    if not ok then
      if err.code == "invalid" and err ~= TAMPERED then
        return res:status(404):json({ error = "not_found" })
      end
      return deny(res, err)
    end
    local t, m = req.query.t, tonumber(req.query.m)
    if t and t ~= "" and req:header("content-type") ~= t then
      return res:status(415):json({ error = "content_type", message = "the upload must be " .. t })
    end
    local body = req.body
    if m and #body > m then return res:status(413):json({ error = "too_large" }) end
    local info, perr = self:put(key, body)
    if not info then return res:status(503):json({ error = perr.code, message = perr.message }) end
    return res:status(201):json({ key = key, size = info.size, content_type = info.content_type })
  end)
  return app
end

-- --- construction ----------------------------------------------------------------------------

local close = Store.close
function Store:close()
  if not self.closed then self.nonces:close() end
  return close(self)
end

function M.wrap(impl, opts)
  opts = opts or {}
  local prefix = opts.prefix or "/_storage"
  if type(prefix) ~= "string" or not match(prefix, "^/[%w%-_./]*[^/]$") then
    error("storage.wrap: prefix must be a path like /_storage", 2)
  end
  local secret = opts.secret
  if secret == "" then secret = nil end
  if secret ~= nil and (type(secret) ~= "string" or #secret < 32) then
    error("storage.wrap: secret must be at least 32 bytes", 2)
  end
  local nonces = require("zever.cache").new{ name = "zever:storage:nonces:" .. prefix,
    max_bytes = 8 * 1024 * 1024 }
  return battery.object(Store, impl, { secret = secret, prefix = prefix,
    expires = battery.seconds(opts.expires, 900, "storage.wrap", "expires", true, true),
    clock = opts.clock or sys.wall, nonces = nonces })
end

function M.wrap_config(impl, section, ctx)
  -- Without a secret the app's keyring signs: resolving it makes it crypto.default().
  if (section.secret or "") == "" and ctx then ctx:get("crypto") end
  return M.wrap(impl, { secret = section.secret, prefix = section.prefix, expires = section.expires })
end

-- A local store: opts.root (required), and wrap's opts.
function M.new(opts)
  if type(opts) ~= "table" then error("storage.new: opts must be a table with root", 2) end
  local impl, err = require("adapters.storage.local").new(opts)
  if not impl then error("storage.new: " .. tostring(err), 2) end
  return M.wrap(impl, opts)
end

return M
