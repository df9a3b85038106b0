-- zever.middleware.idempotency: Stripe's Idempotency-Key contract over an idempotency store.
--
--   app:use(idempotency())                                        -- its own memory store
--   app:use(idempotency{ store = function() return app.idempotency end })   -- the app's
--
-- A POST or PATCH with an Idempotency-Key header runs once: its response (status, headers,
-- content type, body) is stored under the key and replayed, byte for byte, to every later
-- request with the same key and the same fingerprint, with `Idempotent-Replayed: true` added.
-- The same key with another request answers 422 {"error":"idempotency_key_mismatch"}; while
-- the first request is still running, a duplicate answers 409 {"error":"idempotency_key_in_use"}
-- (with Retry-After: 1). A key that is empty or over 256 bytes answers 400
-- {"error":"invalid_idempotency_key"}. Requests without the header, and other methods, pass.
--
-- A handler that raises, or answers 5xx, stores nothing: the key is released (forget with the
-- reservation's token, so a later holder is never released) and a retry runs again; the error
-- goes on to the app's error handling. A store that fails otherwise (closed, a remote store
-- down) answers 503 {"error":"idempotency_unavailable"}: the middleware fails closed, since
-- running a request twice is what it exists to prevent. A response too big for the store is
-- sent but not stored (the key is released).
--
-- Options: store (a zever.idempotency, or a function returning one, resolved on the first
-- request; default: a memory store of its own named `name`, "idempotency:middleware", shared
-- by every worker; max_keys and max_bytes pass through); header ("Idempotency-Key"); methods
-- ({"POST", "PATCH"}); ttl (seconds a response is replayed; the store's default, 24 h);
-- pending_ttl (seconds a running request holds its key; the store's default, 60); scope
-- fn(req) -> string|nil, prepended to the key (say, the user: keys are per client);
-- fingerprint fn(req) -> string (default: a 128-bit hash of method, path, query and body).
-- It must not keep per-request state.

local idempotency = require "zever.idempotency"
local core = require "zever.idempotency_core"

local type, error, tostring, tonumber, ipairs, setmetatable = type, error, tostring, tonumber,
  ipairs, setmetatable
local concat, xpcall, traceback, format, sub, find = table.concat, xpcall, debug.traceback,
  string.format, string.sub, string.find
local fingerprint_of = core.fingerprint

local M = {}

M.REPLAYED = "Idempotent-Replayed"

-- A response as one string: length-prefixed fields "<n>:<bytes>", in the order status,
-- content type, body, then header name, value pairs. Binary-safe and byte-exact.
function M.encode(res)
  local h = res.headers
  local body, ctype = res.body or "", res.ctype or ""
  local code = tostring(res.code)
  local parts = { #code, ":", code, #ctype, ":", ctype, #body, ":", body }
  for i = 1, #h do
    local s = tostring(h[i])
    parts[#parts + 1] = #s
    parts[#parts + 1] = ":"
    parts[#parts + 1] = s
  end
  return concat(parts)
end

-- The fields of M.encode's string, or nil when it is not one.
function M.decode(s)
  local fields, pos, n = {}, 1, #s
  while pos <= n do
    local colon = find(s, ":", pos, true)
    if not colon then return nil end
    local len = tonumber(sub(s, pos, colon - 1))
    if not len or colon + len > n then return nil end
    fields[#fields + 1] = sub(s, colon + 1, colon + len)
    pos = colon + len + 1
  end
  if #fields < 3 or #fields % 2 == 0 then return nil end
  return fields
end

local function replay(res, stored)
  local f = M.decode(stored)
  if not f then return nil end
  res.code = tonumber(f[1])
  res.ctype = f[2] ~= "" and f[2] or nil
  res.body = f[3]
  local h = {}
  for i = 4, #f do h[i - 3] = f[i] end
  res.headers = h
  res:header(M.REPLAYED, "true")
  return res
end

local function default_fingerprint(req)
  return fingerprint_of(req.method, req.path, req.query_string or "", req.body or "")
end

local function answer(res, status, code)
  return res:status(status):json({ error = code })
end

local function rethrow(e)
  if type(e) == "string" then return traceback(e, 2) end
  return e
end

function M.new(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("idempotency middleware: expects an options table", 2) end
  local header = opts.header or "Idempotency-Key"
  if type(header) ~= "string" then error("idempotency middleware: header must be a string", 2) end
  local methods = {}
  for _, m in ipairs(opts.methods or { "POST", "PATCH" }) do
    if type(m) ~= "string" then error("idempotency middleware: methods must be strings", 2) end
    methods[m:upper()] = true
  end
  local scope, fingerprint = opts.scope, opts.fingerprint or default_fingerprint
  if scope ~= nil and type(scope) ~= "function" then
    error("idempotency middleware: scope must be a function of the request", 2)
  end
  if type(fingerprint) ~= "function" then
    error("idempotency middleware: fingerprint must be a function of the request", 2)
  end
  local ttl, pending_ttl = opts.ttl, opts.pending_ttl
  for _, k in ipairs({ "ttl", "pending_ttl" }) do
    local v = opts[k]
    if v ~= nil and (type(v) ~= "number" or v ~= v or v <= 0) then
      error(format("idempotency middleware: %s must be a positive number of seconds", k), 2)
    end
  end

  local store = opts.store
  if store == nil then
    store = idempotency.new{ name = opts.name or "idempotency:middleware",
      max_keys = opts.max_keys, max_bytes = opts.max_bytes }
  elseif type(store) ~= "table" and type(store) ~= "function" then
    error("idempotency middleware: store must be a store or a function returning one", 2)
  end

  return function(req, res, nxt)
    if not methods[req.method] then return nxt() end
    local key = req:header(header)
    if key == nil then return nxt() end
    if key == "" then return answer(res, 400, "invalid_idempotency_key") end
    if scope then
      local s = scope(req)
      if s ~= nil then key = tostring(s) .. "\n" .. key end
    end
    if type(store) == "function" then store = store() end
    local r, err = store:begin(key, { fingerprint = fingerprint(req), ttl = ttl,
      pending_ttl = pending_ttl })
    if not r then
      local code = err and err.code
      if code == "in_progress" then
        res:header("Retry-After", "1")
        return answer(res, 409, "idempotency_key_in_use")
      elseif code == "key_mismatch" then
        return answer(res, 422, "idempotency_key_mismatch")
      elseif code == "invalid" then
        return answer(res, 400, "invalid_idempotency_key")
      end
      return answer(res, 503, "idempotency_unavailable")
    end
    if r.replay then
      if type(r.result) == "string" and replay(res, r.result) then return res end
      -- Not a response this middleware stored (another user of the store): refuse rather
      -- than run the request a second time.
      return answer(res, 422, "idempotency_key_mismatch")
    end
    local token = r.token
    local ok, out = xpcall(nxt, rethrow)
    if not ok then
      store:forget(key, token)
      error(out, 0)
    end
    if out.code >= 500 or not store:complete(key, M.encode(out), token) then
      store:forget(key, token)
    end
    return out
  end
end

return setmetatable(M, { __call = function(_, opts) return M.new(opts) end })
