-- zever.errors: the one error type of the framework.
--
--   local errors = require "zever.errors"
--   local err = errors.new("cache", "closed", "the cache is closed")
--   err.code, err.message, err.battery        -- "closed", "the cache is closed", "cache"
--   tostring(err)                             -- "cache: closed: the cache is closed"
--   errors.new("db", "constraint", msg, { sql = sql, cause = e })   -- extra fields are kept
--   errors.is(v[, code])                      -- true when v is a zever error (with that code)
--   errors.wrap(battery, code, cause)         -- a zever error whose message is tostring(cause)
--   errors.adopt(battery, err)                -- err's code (else "unavailable") and message,
--                                             -- as an error of this battery
--   errors.binding(battery, kind, message)    -- a binding's failure (its kind and message) as an error
--   errors.E.TOOLONG                          -- a C core code by name (zever.sys.E, built from
--                                             -- ZV_ERRNO_MAP in host/core/zv.h): never a literal
--   errors.core(battery, rc[, message])       -- the zever error of a core code (a negative
--                                             -- number or its name, "TOOLONG"): the one mapping
--                                             -- from core codes to battery codes (CODE below)
--
-- A binding reports an expected failure one way, whatever the C side does: the Lua side turns it
-- into one of these (errors.core for a core code, errors.wrap for a message) before a front-end
-- sees it. An error prints as "battery: code: message"; a message that already starts with its
-- battery's name (a sentence the container or the mailer built for people, "cache: connection
-- refused") prints as it is, so the name is never said twice.
--
-- Every battery, adapter and binding reports failures with this type: a battery never defines
-- its own error class or __tostring (STYLE: one message catalogue, as LuaJIT's lj_errmsg.h).
-- The codes a caller can branch on are short words: "not_found", "closed", "in_progress",
-- "key_mismatch", "invalid", "unavailable", "conflict", "timeout", "internal", and the db's own
-- ("constraint", "syntax", ...). A message never carries a secret: callers redact DSNs and URLs
-- before they build one (zever.config's redact_url).
--
-- It must not require any other zever module (only the zever.sys binding, for the codes):
-- everything else requires it.

local sys = require "zever.sys"

local type, setmetatable, getmetatable, tostring, error, pairs, sub, rawget, rawset =
  type, setmetatable, getmetatable, tostring, error, pairs, string.sub, rawget, rawset

local M = {}

local Error = {}
M.Error = Error

-- A field an error does not hold is nil, unless the error was made by M.lazy: then it comes
-- from its kind (battery, code, as_is), or its kind's fill computes it on first read (and the
-- error keeps it).
function Error.__index(e, key)
  local kind = rawget(e, 4)
  if kind == nil then return nil end
  local v = kind[key]
  if v ~= nil or key == "fill" then return v end
  v = kind.fill(e, key)
  if v ~= nil then rawset(e, key, v) end
  return v
end

function Error.__tostring(e)
  local b, m = e.battery, e.message
  if e.as_is then return m end
  if b then
    if sub(m, 1, #b + 2) == b .. ": " then return m end
    return b .. ": " .. e.code .. ": " .. m
  end
  return e.code .. ": " .. m
end

-- A new error. battery may be nil (a framework-level error); code and message are strings;
-- fields (optional) are copied in (sql, cause, status, field, ...) but never override the three.
-- fields.as_is = true: the message is a whole report for people (a configuration's problems,
-- one a line; "invalid duration ..."), and tostring shows it alone, without battery and code.
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

-- Errors whose costly fields (the message, a cause text) are computed only when read, for
-- failures a hot path returns and callers often drop (zever.duration's parse):
--   local KIND = errors.kind(battery, code, fill[, as_is])   once per module
--   return nil, errors.lazy(KIND, a, b, c)                   per failure
-- The error holds a, b, c as err[1..3] (and its kind as err[4]): one table of four slots,
-- which LuaJIT can sink when the caller drops the error. fill(err, key) returns the value of
-- any other field (message, ...), or nil. as_is: tostring shows the message alone (see M.new).
function M.kind(battery, code, fill, as_is)
  if type(code) ~= "string" or code == "" then error("errors.kind: code must be a string", 2) end
  if type(fill) ~= "function" then error("errors.kind: fill must be a function", 2) end
  return { battery = battery, code = code, fill = fill, as_is = as_is or nil }
end

function M.lazy(kind, a, b, c)
  return setmetatable({ a, b, c, kind }, Error)
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

-- A zever error of battery for a failure something else returned (another battery's error, a
-- db error, a string): its code when it has one, else "unavailable"; its message.
function M.adopt(battery, err)
  if type(err) == "table" and err.code then
    return M.new(battery, err.code, tostring(err.message or err))
  end
  return M.new(battery, "unavailable", tostring(err))
end

-- The zever error of a binding's failure of a given kind (zever.mime_core's nil, message, kind;
-- zever.smtp_core's sends): code kind, the message said with the battery's name ("mailer:
-- ..."), the binding's own words kept as err.detail.
function M.binding(battery, kind, message)
  message = tostring(message)
  return M.new(battery, kind, battery .. ": " .. message, { detail = message })
end

-- The core's codes by name, and the battery code each one means to a caller.
local E = sys.E
M.E = E

local CODE = {
  NOMEM = "unavailable", INVAL = "invalid", RANGE = "invalid", TOOLONG = "invalid",
  CONFLICT = "conflict", NOTFOUND = "not_found", SYNTAX = "invalid", IO = "unavailable",
}
M.CODE = CODE

local NAME = {}
for name, rc in pairs(E) do NAME[rc] = name end

-- The zever error of a core code: rc is the negative number a core function returned or its
-- name as a classic binding reports it ("TOOLONG"); message defaults to the core's own.
function M.core(battery, rc, message)
  local name = type(rc) == "number" and NAME[rc] or rc
  local code = CODE[name]
  if code == nil then error("errors.core: not a core error code: " .. tostring(rc), 2) end
  return M.new(battery, code, message or sys.strerror(E[name]), { core = name })
end

return M
