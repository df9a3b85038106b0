-- zever.battery: the skeleton every battery front-end is declared with.
--
--   local battery = require "zever.battery"
--   local Cache = battery.define("cache", "the cache is closed")
--   function Cache:get(key)
--     battery.string(key, "cache:get", "key")           -- misuse raises, the caller blamed
--     if self.closed then return nil, Cache.CLOSED end  -- the closed guard
--     return self.impl:get(key)
--   end
--   function M.wrap(impl, opts) return battery.object(Cache, impl, { ttl_default = ... }) end
--   function M.new(opts) return battery.default(M.wrap, "adapters.cache.memory", "cache.new", opts) end
--
-- define(name, closed_message) returns the method table of the battery's objects, with:
--   Class.battery               the battery's name ("cache"), also read through every object
--   Class.CLOSED                the zever error every call returns after close (code "closed")
--   Class.error(code, message)  a zever error of this battery (zever.errors)
--   obj:close()                 idempotent: the first call closes the adapter (impl:close() when
--                               it has one) and returns what it returns (or true); later: true
--   obj:stats()                 { battery, closed } plus impl:stats() and obj.counters, when
--                               they exist (a fresh table: callers may keep it)
-- object(Class, impl, fields) makes one object over an adapter: fields plus impl and closed.
-- default(wrap, module, fname, opts) is the front-end's new(): the zero-infrastructure adapter
-- module's new(opts), wrapped; a raising new is re-raised with the caller of new blamed.
--
-- The checkers raise "<fname>: <what> must be ..." at the caller of the front-end method
-- (level 3): string, opt_table, seconds, count. They are plain functions of constant arguments,
-- so a front-end's hot path (cache:get, limiter:allow) stays one trace with no closure or
-- vararg per call. A front-end still writes its guard inline (`if self.closed then`): it is one
-- field read, and where it stands in the method is part of the battery's contract (argument
-- misuse raises even after close).
--
-- It must not know any battery or adapter: front-ends require it, never the other way round.

local errors = require "zever.errors"

local type, error, setmetatable, pairs, pcall, require, tostring = type, error, setmetatable,
  pairs, pcall, require, tostring

local M = {}

local function close(self)
  if self.closed then return true end
  self.closed = true
  local impl = self.impl
  if impl.close then
    local r, err = impl:close()
    if r == nil and err ~= nil then return nil, err end
  end
  return true
end

local function stats(self)
  local out = { battery = self.battery, closed = self.closed }
  local impl = self.impl
  if type(impl.stats) == "function" then
    for k, v in pairs(impl:stats()) do out[k] = v end
  end
  local counters = self.counters
  if counters then
    for k, v in pairs(counters) do out[k] = v end
  end
  return out
end

function M.define(name, closed_message)
  if type(name) ~= "string" or name == "" then error("battery.define: name must be a string", 2) end
  if type(closed_message) ~= "string" then
    error("battery.define: closed_message must be a string", 2)
  end
  local Class = { battery = name, close = close, stats = stats,
    CLOSED = errors.new(name, "closed", closed_message) }
  Class.__index = Class
  function Class.error(code, message, fields) return errors.new(name, code, message, fields) end
  return Class
end

function M.object(Class, impl, fields)
  if type(impl) ~= "table" then error(Class.battery .. ".wrap: expects an adapter object", 3) end
  fields = fields or {}
  fields.impl, fields.closed = impl, false
  return setmetatable(fields, Class)
end

function M.default(wrap, module, fname, opts)
  if opts ~= nil and type(opts) ~= "table" then error(fname .. ": opts must be a table", 3) end
  local ok, impl = pcall(require(module).new, opts or {})
  if not ok then error(impl, 3) end
  return wrap(impl, opts)
end

-- --- argument checkers: raise at the caller of the front-end method -------------------------

function M.string(v, fname, what)
  if type(v) ~= "string" then error(fname .. ": " .. what .. " must be a string", 3) end
end

-- nil or a table.
function M.opt_table(v, fname, what)
  if v ~= nil and type(v) ~= "table" then error(fname .. ": " .. what .. " must be a table", 3) end
end

-- A duration string's seconds, or nil, err: zever.duration's units ("30s", "1h30m", "1.5s") and
-- ISO 8601 ("PT30S", "P1D") formats, as configuration durations read. Not its nano format: a
-- bare "30" in a seconds argument would be 30 ns. The codec is made on first use (battery.lua
-- is loaded by every battery; most calls pass numbers).
local codec

local function duration_seconds(s)
  if not codec then
    codec = require("zever.duration").codec{ write = "units", accept = { "units", "iso8601" },
      days = true }
  end
  return codec:decode(s)
end

-- default when v is nil; v when it is a number >= 0 (> 0 when positive; not infinite when
-- finite), or a duration string worth that many seconds ("10s", "PT1M"); raises else.
function M.seconds(v, default, fname, what, positive, finite)
  if v == nil then return default end
  if type(v) == "string" then
    local s, err = duration_seconds(v)
    if not s then error(fname .. ": " .. what .. ": " .. tostring(err), 3) end
    v = s
  end
  if type(v) ~= "number" or v ~= v or v < 0 or (positive and v == 0) or (finite and v == 1 / 0) then
    error(fname .. ": " .. what .. (positive and " must be a positive number of seconds"
      or " must be a number of seconds >= 0"), 3)
  end
  return v
end

-- default when v is nil; v when it is an integer >= min; raises else.
function M.count(v, default, fname, what, min)
  if v == nil then return default end
  if type(v) ~= "number" or v % 1 ~= 0 or v < min then
    error(fname .. ": " .. what .. " must be an integer >= " .. min, 3)
  end
  return v
end

return M
