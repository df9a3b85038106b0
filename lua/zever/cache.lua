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
-- impl:delete(k); impl:incr(k, n, ttl); impl:exists(k); impl:close() (zever.battery: the
-- closed guard, close, stats). Adapters build their errors with zever.errors ("cache").
-- It keeps no state beyond the wrapped object.

local battery = require "zever.battery"

local type, error = type, error
local check_string, seconds = battery.string, battery.seconds

local M = {}

M.MAX_KEY = 65535

local Cache = battery.define("cache", "the cache is closed")
M.error = Cache.error

local CLOSED = Cache.CLOSED
local TOO_LONG = Cache.error("invalid", "the key is longer than 65535 bytes")

local VALUE = { string = true, number = true, boolean = true, table = true }

function Cache:get(key)
  check_string(key, "cache:get", "key")
  if self.closed then return nil, CLOSED end
  if #key > 65535 then return nil end
  return self.impl:get(key)
end

local function store(self, key, value, ttl, add, fname)
  check_string(key, fname, "key")
  if not VALUE[type(value)] then
    error(fname .. ": value must be a string, number, boolean or table", 3)
  end
  ttl = seconds(ttl, self.ttl_default, fname, "ttl")
  if self.closed then return nil, CLOSED end
  if #key > 65535 then return nil, TOO_LONG end
  return self.impl:set(key, value, ttl, add)
end

function Cache:set(key, value, ttl)
  return store(self, key, value, ttl, false, "cache:set")
end

function Cache:add(key, value, ttl)
  return store(self, key, value, ttl, true, "cache:add")
end

function Cache:delete(key)
  check_string(key, "cache:delete", "key")
  if self.closed then return nil, CLOSED end
  if #key > 65535 then return false end
  return self.impl:delete(key)
end

function Cache:exists(key)
  check_string(key, "cache:exists", "key")
  if self.closed then return nil, CLOSED end
  if #key > 65535 then return false end
  return self.impl:exists(key)
end

function Cache:incr(key, n, ttl)
  check_string(key, "cache:incr", "key")
  if n == nil then
    n = 1
  elseif type(n) ~= "number" or n ~= n then
    error("cache:incr: n must be a number", 2)
  end
  ttl = seconds(ttl, self.ttl_default, "cache:incr", "ttl")
  if self.closed then return nil, CLOSED end
  if #key > 65535 then return nil, TOO_LONG end
  return self.impl:incr(key, n, ttl)
end

-- opts.ttl_default: seconds used when set/add/incr get no ttl (default 0: no expiry).
function M.wrap(impl, opts)
  local ttl_default = opts and opts.ttl_default or 0
  if type(ttl_default) ~= "number" or (ttl_default ~= ttl_default or ttl_default < 0) then
    error("cache.wrap: ttl_default must be a number >= 0", 2)
  end
  return battery.object(Cache, impl, { ttl_default = ttl_default })
end

-- A memory cache: opts as adapters.cache.memory.new, plus ttl_default.
function M.new(opts)
  return battery.default(M.wrap, "adapters.cache.memory", "cache.new", opts)
end

return M
