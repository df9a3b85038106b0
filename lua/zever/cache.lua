-- zever.cache: the front-end of the cache battery.
--
--   local cache = require("zever.cache").new{ max_bytes = 1 << 20 }   -- a memory cache
--   cache:get(key)               -> value | nil                      (absent or expired: nil)
--   cache:set(key, value[, ttl]) -> true | nil, err
--   cache:add(key, value[, ttl]) -> true (stored) | false (a live value is there) | nil, err
--   cache:delete(key)            -> true (it was there) | false
--   cache:incr(key[, n[, ttl]])  -> the new number | nil, err (code "invalid": not a number)
--   cache:exists(key)            -> boolean
--   cache:close()                -> true; every later call returns nil, err (code "closed")
--
-- Values are strings, numbers, booleans or tables (stored as JSON: the table you get back is a
-- new one, decoded); whatever goes in or comes out is a copy. ttl is in seconds, 0 = no expiry;
-- a missing ttl is the cache's default (config cache.ttl_default). add claims a key that is
-- absent or expired. incr starts a missing key at 0 (n defaults to 1; ttl applies only when it
-- creates the key) and refuses a value that is not a number, even a numeric-looking string.
-- Misuse raises: a key that is not a string, a nil/function/userdata value, a negative ttl.
-- Expected failures are nil, err with err.code ("invalid": a key over 65535 bytes or a value
-- over the memory budget; "closed"; "unavailable" from remote adapters).
--
-- cache.wrap(impl, opts) puts this front-end over an adapter object whose methods take valid
-- arguments: impl:get(k) -> value|nil[, err]; impl:set(k, v, ttl, add) -> true|false|nil, err;
-- impl:delete(k); impl:incr(k, n, ttl); impl:exists(k); impl:close(). cache.error(code, message)
-- builds the error objects adapters return. It keeps no state beyond the wrapped object.

local type, error, setmetatable = type, error, setmetatable

local M = {}

M.MAX_KEY = 65535

local Error = {}
Error.__index = Error
Error.__tostring = function(e) return "cache: " .. e.code .. ": " .. e.message end

function M.error(code, message)
  return setmetatable({ code = code, message = message }, Error)
end

local CLOSED = M.error("closed", "the cache is closed")
local TOO_LONG = M.error("invalid", "the key is longer than 65535 bytes")

local VALUE = { string = true, number = true, boolean = true, table = true }

local Cache = {}
Cache.__index = Cache

local function check_key(key, what)
  if type(key) ~= "string" then error("cache:" .. what .. ": key must be a string", 3) end
end

local function check_ttl(self, ttl, what)
  if ttl == nil then return self.ttl_default end
  if type(ttl) ~= "number" or (ttl ~= ttl or ttl < 0) then
    error("cache:" .. what .. ": ttl must be a number of seconds >= 0", 3)
  end
  return ttl
end

function Cache:get(key)
  check_key(key, "get")
  if self.closed then return nil, CLOSED end
  if #key > 65535 then return nil end
  return self.impl:get(key)
end

local function store(self, key, value, ttl, add, what)
  check_key(key, what)
  if not VALUE[type(value)] then
    error("cache:" .. what .. ": value must be a string, number, boolean or table", 3)
  end
  ttl = check_ttl(self, ttl, what)
  if self.closed then return nil, CLOSED end
  if #key > 65535 then return nil, TOO_LONG end
  return self.impl:set(key, value, ttl, add)
end

function Cache:set(key, value, ttl)
  return store(self, key, value, ttl, false, "set")
end

function Cache:add(key, value, ttl)
  return store(self, key, value, ttl, true, "add")
end

function Cache:delete(key)
  check_key(key, "delete")
  if self.closed then return nil, CLOSED end
  if #key > 65535 then return false end
  return self.impl:delete(key)
end

function Cache:exists(key)
  check_key(key, "exists")
  if self.closed then return nil, CLOSED end
  if #key > 65535 then return false end
  return self.impl:exists(key)
end

function Cache:incr(key, n, ttl)
  check_key(key, "incr")
  if n == nil then
    n = 1
  elseif type(n) ~= "number" or n ~= n then
    error("cache:incr: n must be a number", 2)
  end
  ttl = check_ttl(self, ttl, "incr")
  if self.closed then return nil, CLOSED end
  if #key > 65535 then return nil, TOO_LONG end
  return self.impl:incr(key, n, ttl)
end

function Cache:close()
  if self.closed then return true end
  self.closed = true
  return self.impl:close()
end

-- opts.ttl_default: seconds used when set/add/incr get no ttl (default 0: no expiry).
function M.wrap(impl, opts)
  if type(impl) ~= "table" then error("cache.wrap: expects an adapter object", 2) end
  local ttl_default = opts and opts.ttl_default or 0
  if type(ttl_default) ~= "number" or (ttl_default ~= ttl_default or ttl_default < 0) then
    error("cache.wrap: ttl_default must be a number >= 0", 2)
  end
  return setmetatable({ impl = impl, ttl_default = ttl_default, closed = false }, Cache)
end

-- A memory cache: opts as adapters.cache.memory.new, plus ttl_default.
function M.new(opts)
  if opts ~= nil and type(opts) ~= "table" then error("cache.new: opts must be a table", 2) end
  local ok, impl = pcall(require("adapters.cache.memory").new, opts or {})
  if not ok then error(impl, 2) end
  return M.wrap(impl, opts)
end

return M
