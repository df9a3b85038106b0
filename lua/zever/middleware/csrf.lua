-- zever.middleware.csrf: cross-site request forgery protection for cookie-authenticated apps,
-- with the synchronizer token pattern (OWASP): a random token kept in the session, sent back
-- by the page with every state-changing request and compared in constant time.
--
--   local csrf = zever.middleware.csrf
--   app:use(zever.middleware.session{ app = app })
--   app:use(csrf{})                                       -- after the session middleware
--   app:get("/form", function(req) return { csrf = csrf.token(req) } end)   -- put it in the form
--
-- Options: header (default "x-csrf-token"), field (default "_csrf", in an urlencoded body),
-- skip = fn(req) -> true to exempt a request (an API authenticated by bearer tokens, which a
-- browser never sends on its own), trusted_origins = { "https://app.example.com", ... }.
--
-- GET, HEAD, OPTIONS and TRACE pass (they must not change state). Any other method needs the
-- token, from the header or the form field; a missing or wrong token answers 403
-- {"error":"csrf"} and the rest of the chain does not run. An Origin header (browsers send one
-- on cross-site POSTs) must also name this host (the Host header) or a trusted origin: a
-- cross-site form is refused even before the token is looked at.
--
-- csrf.token(req) returns the token for a page: the session's secret (32 random bytes, made on
-- first use) masked with fresh random bytes each call (mask .. mask XOR secret, base64url), so
-- the token in a page differs every response (BREACH cannot recover it from compressed pages),
-- and any of them verifies while the session lives. A regenerated session keeps its token; a
-- destroyed one (logout) loses it.

local crypto = require "zever.crypto"
local request = require "zever.request"

local type, error, ipairs, tostring, rawget, setmetatable = type, error, ipairs, tostring,
  rawget, setmetatable
local char, byte, concat, lower, find, sub, match = string.char, string.byte, table.concat,
  string.lower, string.find, string.sub, string.match
local bxor = bit.bxor

local SAFE = { GET = true, HEAD = true, OPTIONS = true, TRACE = true }
local KEY = "_csrf_secret"
local SIZE = 32

local function xor(a, b)
  local out = {}
  for i = 1, SIZE do out[i] = char(bxor(byte(a, i), byte(b, i))) end
  return concat(out)
end

local function session_of(req)
  local s = rawget(req, "session")
  if s == nil then
    error("csrf: needs zever.middleware.session before it (req.session is missing)", 3)
  end
  return s
end

-- The session's secret, made on first use.
local function secret(req)
  local s = session_of(req)
  local v = s[KEY]
  local raw = type(v) == "string" and crypto.unb64url(v)
  if raw and #raw == SIZE then return raw end
  raw = crypto.random_bytes(SIZE)
  s[KEY] = crypto.b64url(raw)
  return raw
end

local M = {}

function M.token(req)
  if type(req) ~= "table" then error("csrf.token: want a request", 2) end
  local mask = crypto.random_bytes(SIZE)
  return crypto.b64url(mask .. xor(mask, secret(req)))
end

-- True when the presented token unmasks to the session's secret.
local function valid(req, presented)
  if type(presented) ~= "string" or #presented > 128 then return false end
  local raw = crypto.unb64url(presented)
  if not raw or #raw ~= 2 * SIZE then return false end
  local s = session_of(req)
  local v = s[KEY]
  local want = type(v) == "string" and crypto.unb64url(v)
  if not want or #want ~= SIZE then return false end
  return crypto.equal(xor(sub(raw, 1, SIZE), sub(raw, SIZE + 1)), want)
end

-- "https://host:port" -> "host:port" as a Host header would say it (default ports dropped).
local function origin_host(origin)
  local scheme, host = match(lower(origin), "^(%a[%w+.-]*)://([^/]+)$")
  if not scheme then return nil end
  if (scheme == "http" and sub(host, -3) == ":80") then host = sub(host, 1, -4) end
  if (scheme == "https" and sub(host, -4) == ":443") then host = sub(host, 1, -5) end
  return host
end

-- The value of field in a multipart/form-data body (an HTML form with a file input): the part
-- whose headers name it and that is not a file, found by plain finds over the part boundaries
-- (RFC 7578), without parsing the rest, which stays req:form()'s (with the handler's limits).
-- A part that cannot be found is nil: the request is then refused, never let through.
local function multipart_field(body, ctype, field)
  local boundary = match(ctype, '[Bb][Oo][Uu][Nn][Dd][Aa][Rr][Yy]="([^"]+)"')
    or match(ctype, "[Bb][Oo][Uu][Nn][Dd][Aa][Rr][Yy]=([^;%s]+)")
  if not boundary or type(body) ~= "string" then return nil end
  local delim, want = "\r\n--" .. boundary, lower('name="' .. field .. '"')
  -- The first delimiter may open the body (no CRLF before it).
  local pos = sub(body, 1, #delim - 2) == sub(delim, 3) and -1 or find(body, delim, 1, true)
  while pos do
    local head = pos + #delim
    if sub(body, head, head + 1) == "--" then return nil end -- the closing delimiter
    local stop = find(body, "\r\n\r\n", head, true)
    if not stop then return nil end
    local next_pos = find(body, delim, stop + 4, true)
    if not next_pos then return nil end
    local headers = lower(sub(body, head, stop - 1))
    if find(headers, want, 1, true) and not find(headers, "filename", 1, true) then
      return sub(body, stop + 4, next_pos - 1)
    end
    pos = next_pos
  end
end

-- A stream_body route's body still arriving is the handler's to read (req.body raises there):
-- its forms send the header.
local streamed = require("zever.request.body").streamed

local function form_field(req, field)
  local ct = req:header("content-type")
  if not ct or streamed(req) then return nil end
  local lct = lower(ct)
  if find(lct, "multipart/form-data", 1, true) then return multipart_field(req.body, ct, field) end
  if not find(lct, "application/x-www-form-urlencoded", 1, true) then return nil end
  local v = request.parse_query(req.body)[field]
  return type(v) == "string" and v or nil
end

local function construct(_, opts)
  if opts ~= nil and type(opts) ~= "table" then error("middleware.csrf: expects an options table", 2) end
  opts = opts or {}
  local header, field, skip = opts.header or "x-csrf-token", opts.field or "_csrf", opts.skip
  if skip ~= nil and type(skip) ~= "function" then error("middleware.csrf: skip must be a function", 2) end
  local trusted = {}
  for _, o in ipairs(opts.trusted_origins or {}) do
    local h = origin_host(o)
    if not h then error("middleware.csrf: trusted origin " .. tostring(o) .. " is not scheme://host", 2) end
    trusted[h] = true
  end

  return function(req, res, nxt)
    if SAFE[req.method] or (skip and skip(req)) then return nxt() end
    session_of(req)   -- a missing session middleware is a bug: raise, never a silent 403
    local origin = req:header("origin")
    if origin and origin ~= "null" then
      local h = origin_host(origin)
      local host = req:header("host")
      if not h or not (trusted[h] or (host and h == lower(host))) then
        return res:status(403):json({ error = "csrf", message = "cross-origin request refused" })
      end
    elseif origin == "null" then
      return res:status(403):json({ error = "csrf", message = "cross-origin request refused" })
    end
    local presented = req:header(header) or form_field(req, field)
    if not valid(req, presented) then
      return res:status(403):json({ error = "csrf", message = "missing or invalid CSRF token" })
    end
    return nxt()
  end
end

return setmetatable(M, { __call = construct })
