-- zever.errors: the one error type of the framework.
--
--   local errors = require "zever.errors"
--   local err = errors.new("cache", "closed", "the cache is closed")
--   err.code, err.message, err.battery        -- "closed", "the cache is closed", "cache"
--   tostring(err)                             -- "cache: closed: the cache is closed"
--   errors.new("db", "constraint", msg, { sql = sql, cause = e })   -- extra fields are kept
--   errors.is(v[, code])                      -- true when v is a zever error (with that code)
--   errors.wrap(battery, code, cause)         -- a zever error whose message is tostring(cause)
--
-- Every battery, adapter and binding reports failures with this type: a battery never defines
-- its own error class or __tostring (STYLE: one message catalogue, as LuaJIT's lj_errmsg.h).
-- The codes a caller can branch on are short words: "not_found", "closed", "in_progress",
-- "key_mismatch", "invalid", "unavailable", "conflict", "timeout", "internal", and the db's own
-- ("constraint", "syntax", ...). A message never carries a secret: callers redact DSNs and URLs
-- before they build one (zever.config's redact_url).
--
-- It must not require any other zever module: everything else requires it.

local type, setmetatable, getmetatable, tostring, error, pairs =
  type, setmetatable, getmetatable, tostring, error, pairs

local M = {}

local Error = {}
Error.__index = Error
M.Error = Error

function Error.__tostring(e)
  if e.battery then return e.battery .. ": " .. e.code .. ": " .. e.message end
  return e.code .. ": " .. e.message
end

-- A new error. battery may be nil (a framework-level error); code and message are strings;
-- fields (optional) are copied in (sql, cause, status, field, ...) but never override the three.
function M.new(battery, code, message, fields)
  if battery ~= nil and type(battery) ~= "string" then
    error("errors.new: battery must be a string or nil", 2)
  end
  if type(code) ~= "string" or code == "" then error("errors.new: code must be a string", 2) end
  if type(message) ~= "string" then error("errors.new: message must be a string", 2) end
  local e = { battery = battery, code = code, message = message }
  if fields ~= nil then
    if type(fields) ~= "table" then error("errors.new: fields must be a table", 2) end
    for k, v in pairs(fields) do
      if e[k] == nil then e[k] = v end
    end
  end
  return setmetatable(e, Error)
end

-- True when v is a zever error, and (when code is given) has that code.
function M.is(v, code)
  if type(v) ~= "table" or getmetatable(v) ~= Error then return false end
  return code == nil or v.code == code
end

-- A zever error around any other failure value (a string from pcall, a C message): the cause is
-- kept as err.cause; a zever error passed in is returned as it is.
function M.wrap(battery, code, cause)
  if M.is(cause) then return cause end
  return M.new(battery, code, tostring(cause), { cause = cause })
end

return M
