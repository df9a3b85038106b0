-- zever.cookie: the Cookie request header read, and Set-Cookie header values written
-- (RFC 6265; the Partitioned attribute of CHIPS; the __Secure- and __Host- name prefixes).
--
--   cookie.parse(header)                 -> { name = value, ... }  (first of a name wins)
--   cookie.get(header, name)             -> value | nil
--   cookie.serialize(name, value, opts)  -> "name=value; Path=/; HttpOnly; SameSite=Lax"
--
-- Parsing is the C core (host/cookie/): any header parses, a pair it cannot trust is dropped
-- (no "=", a name that is not a token, a control byte or a DQUOTE in the value), so nothing a
-- client sends raises. Values are returned as sent, without percent-decoding (as Go's net/http);
-- surrounding DQUOTEs are removed.
--
-- serialize validates everything it writes and raises (the caller blamed, level 2 of its own
-- caller) on anything that could change the header's meaning: a name that is not a token, a
-- value outside RFC 6265's cookie-octets (no space, DQUOTE, comma, semicolon, backslash or
-- control byte: encode such values, or use a signed/encrypted cookie, which is base64url), a
-- path or domain with ";" or a control byte, a non-integer max_age, SameSite=None or
-- Partitioned without Secure, and a __Host-/__Secure- name without what its prefix demands.
-- Options: path, domain, max_age (seconds; 0 or less deletes), expires (Unix seconds, written
-- as an IMF-fixdate), secure, http_only, same_site ("strict" | "lax" | "none", any case),
-- partitioned.
--
-- It must not know requests, responses or keys: zever.request/zever.response call it, and
-- signing lives in zever.crypto.

local core = require "zever.cookie_core"
local ffi = require "ffi"

local type, error, tostring, pairs, floor, format, find, lower, sub, date, concat =
  type, error, tostring, pairs, math.floor, string.format, string.find, string.lower, string.sub,
  os.date, table.concat

local M = {}

local parse = core.parse

-- get goes through the FFI (a classic C API call stops the request's trace): the value's span
-- comes back in span[0], span[1], and string.sub copies it.
require "zever.cdef.cookie"
local c_find = ffi.C.zv_cookie_find
local span = ffi.new("size_t[2]")
local span_len = span + 1

local function get(header, name)
  if c_find(header, #header, name, #name, span, span_len) == 0 then return nil end
  local at = tonumber(span[0])
  return sub(header, at + 1, at + tonumber(span[1]))
end
local is_token, is_value = core.is_token, core.is_value

-- A table of the cookies of a Cookie header (nil or "" give an empty table).
function M.parse(header)
  if header == nil then return {} end
  if type(header) ~= "string" then error("cookie.parse: header must be a string", 2) end
  return parse(header)
end

-- The value of one cookie, or nil; builds no table.
function M.get(header, name)
  if type(name) ~= "string" then error("cookie.get: name must be a string", 2) end
  if header == nil then return nil end
  if type(header) ~= "string" then error("cookie.get: header must be a string", 2) end
  return get(header, name)
end

local SAME_SITE = { strict = "Strict", lax = "Lax", none = "None" }
local KNOWN = { path = true, domain = true, max_age = true, expires = true, secure = true,
  http_only = true, same_site = true, partitioned = true }

-- An attribute value may not end the attribute early (";") or the header (CR, LF, NUL, CTL).
local function attr(what, v, level)
  if type(v) ~= "string" then error(format("%s must be a string", what), level + 1) end
  if find(v, "[%c;]") then
    error(format("%s contains ';' or a control character", what), level + 1)
  end
  return v
end

-- The Set-Cookie value of one cookie; raises (at level) on anything invalid. opts may carry
-- keys the caller uses itself (signed, encrypted, crypto): those are listed in extra.
function M.build(name, value, opts, level, extra)
  level = (level or 1) + 1
  if type(name) ~= "string" or not is_token(name) then
    error("cookie: invalid cookie name " .. format("%q", tostring(name)) ..
      " (want an RFC 7230 token)", level)
  end
  if type(value) == "number" then value = tostring(value) end
  if type(value) ~= "string" then
    error(format("cookie %s: value must be a string, got a %s", name, type(value)), level)
  end
  if not is_value(value) then
    error(format("cookie %s: value has a byte RFC 6265 does not allow (space, DQUOTE, comma, " ..
      "';', backslash or a control byte): encode it first, or use {signed = true}", name), level)
  end
  opts = opts or {}
  if type(opts) ~= "table" then error("cookie " .. name .. ": opts must be a table", level) end
  for k in pairs(opts) do
    if not KNOWN[k] and not (extra and extra[k]) then
      error(format("cookie %s: unknown option %s", name, tostring(k)), level)
    end
  end
  local out = { name .. "=" .. value }
  local path, domain = opts.path, opts.domain
  if path ~= nil then out[#out + 1] = "Path=" .. attr("cookie " .. name .. ": path", path, level) end
  if domain ~= nil then
    domain = attr("cookie " .. name .. ": domain", domain, level)
    if domain == "" or find(domain, "[^%w%.%-]") then
      error(format("cookie %s: invalid domain %q", name, domain), level)
    end
    out[#out + 1] = "Domain=" .. domain
  end
  local max_age = opts.max_age
  if max_age ~= nil then
    if type(max_age) ~= "number" or max_age ~= max_age or max_age % 1 ~= 0 or
       max_age == 1 / 0 or max_age == -1 / 0 then
      error(format("cookie %s: max_age must be a whole number of seconds", name), level)
    end
    out[#out + 1] = "Max-Age=" .. format("%d", max_age > 0 and max_age or 0)
  end
  local expires = opts.expires
  if expires ~= nil then
    if type(expires) ~= "number" or expires ~= expires or expires < 0 or expires > 253402300799 then
      error(format("cookie %s: expires must be a Unix time in seconds", name), level)
    end
    out[#out + 1] = "Expires=" .. date("!%a, %d %b %Y %H:%M:%S GMT", floor(expires))
  end
  local secure = opts.secure and true or false
  if secure then out[#out + 1] = "Secure" end
  if opts.http_only then out[#out + 1] = "HttpOnly" end
  local ss = opts.same_site
  if ss ~= nil then
    local v = type(ss) == "string" and SAME_SITE[lower(ss)]
    if not v then
      error(format("cookie %s: same_site must be \"strict\", \"lax\" or \"none\"", name), level)
    end
    if v == "None" and not secure then
      error(format("cookie %s: same_site = \"none\" needs secure = true (browsers drop it)", name),
        level)
    end
    out[#out + 1] = "SameSite=" .. v
  end
  if opts.partitioned then
    if not secure then error(format("cookie %s: partitioned needs secure = true", name), level) end
    out[#out + 1] = "Partitioned"
  end
  if sub(name, 1, 9) == "__Secure-" and not secure then
    error(format("cookie %s: a __Secure- cookie needs secure = true", name), level)
  end
  if sub(name, 1, 7) == "__Host-" and (not secure or path ~= "/" or domain ~= nil) then
    error(format("cookie %s: a __Host- cookie needs secure = true, path = \"/\" and no domain",
      name), level)
  end
  return concat(out, "; ")
end

function M.serialize(name, value, opts)
  local s = M.build(name, value, opts, 2) -- not a tail call: level 2 must be our caller
  return s
end

M.is_token, M.is_value = is_token, is_value
return M
