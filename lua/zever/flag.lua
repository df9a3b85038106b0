-- zever.flag: the front-end of the feature-flag battery (app.flag): typed getters with
-- fallbacks, percentage rollouts by a stable hash of a key, and per-tenant overrides.
--
--   local flags = flag.new{ flags = { beta = true, limit = 10 } }   -- the memory adapter
--   flags:bool(name, fallback[, ctx])    -> value | fallback[, err]
--   flags:string / flags:int / flags:number / flags:json   the same for the other types
--   flags:enabled(name[, ctx])           -> boolean   flags:bool(name, false, ctx) without err
--   flags:names()                        -> sorted array of the flag names
--   flags:reload()                       -> true | nil, err   (file adapter: read it now)
--   flag.bucket(name, key)               -> 0..9999   the rollout bucket (adapters.flag.rules)
--   flags:close()                        -> true; getters then return fallback, CLOSED
--
-- ctx says who asks: nil, a string (the rollout key: a user id, a session id), or a table
-- { key = "user-42", tenant = "acme" } (a request works too: req.tenant, set by the tenant
-- battery, is read when ctx.tenant is absent, and its key is ctx.key or ctx.user_id).
-- Resolution: a tenant override for ctx's tenant wins; else a flag with a rollout is true for
-- keys whose bucket (a stable hash of the flag name and the key, 0..9999) is below the rollout
-- in basis points, false for the others, and its plain value when ctx has no key; else the
-- flag's value. The same key always lands in the same bucket (on every worker, machine and
-- build), and raising a rollout from 10 % to 20 % keeps the first 10 % on.
--
-- A missing flag returns the fallback and no error: code can ship before its flag. A flag of
-- another type returns the fallback plus an error ("invalid", naming both types): a typo in
-- the flag file never turns into a wrong value. int wants a whole number; number any number;
-- json any value (tables are shared with the adapter: read them, do not change them). A name
-- that is not a string raises.
--
-- flag.wrap(impl) puts this front-end over an adapter object whose impl.flags is the table
-- adapters.flag.rules.compile makes (the adapter replaces it whole on reload, so a getter
-- never sees half a file). This module holds no state and knows no adapter but new()'s default.

local battery = require "zever.battery"
local rules = require "adapters.flag.rules"

local type, error, pairs, tostring, sort, format, floor = type, error, pairs, tostring,
  table.sort, string.format, math.floor
local bucket = rules.bucket

local M = {}

M.bucket = rules.bucket

local Flags = battery.define("flag", "the flags are closed")
M.error = Flags.error

local CLOSED = Flags.CLOSED

-- The value of flag f (named name) for ctx.
local function resolve(f, name, ctx)
  if ctx == nil then return f.value end
  local key, tenant
  if type(ctx) == "string" then
    key = ctx
  elseif type(ctx) == "table" then
    key, tenant = ctx.key or ctx.user_id, ctx.tenant
  else
    error("flag: ctx must be a string or a table", 3)
  end
  local tenants = f.tenants
  if tenants ~= nil and tenant ~= nil then
    local id = type(tenant) == "table" and tenant.id or tenant
    local v = tenants[id]
    if v ~= nil then return v end
  end
  local rollout = f.rollout
  if rollout ~= nil and key ~= nil then
    if type(key) ~= "string" then key = tostring(key) end
    return bucket(name, key) < rollout
  end
  return f.value
end

local function mismatch(name, v, want)
  return Flags.error("invalid", format("flag %q is a %s, not a %s", name, type(v), want),
    { flag = name })
end

-- One getter per type; lua_type nil accepts any value (json), int wants a whole number. Written
-- without a per-call closure so that a lookup stays a few instructions in the caller's trace.
local function getter(want, lua_type, int)
  local fname = "flag:" .. want
  return function(self, name, fallback, ctx)
    if type(name) ~= "string" then error(fname .. ": name must be a string", 2) end
    if self.closed then return fallback, CLOSED end
    local f = self.impl.flags[name]
    if f == nil then return fallback end
    local v = f.value
    if ctx ~= nil then v = resolve(f, name, ctx) end
    if lua_type ~= nil and (type(v) ~= lua_type or (int and floor(v) ~= v)) then
      return fallback, mismatch(name, v, want)
    end
    return v
  end
end

Flags.bool = getter("bool", "boolean")
Flags.string = getter("string", "string")
Flags.number = getter("number", "number")
Flags.int = getter("int", "number", true)
Flags.json = getter("json", nil)

function Flags:enabled(name, ctx)
  if type(name) ~= "string" then error("flag:enabled: name must be a string", 2) end
  if self.closed then return false end
  local f = self.impl.flags[name]
  if f == nil then return false end
  return resolve(f, name, ctx) == true
end

function Flags:names()
  local out = {}
  if self.closed then return out end
  for name in pairs(self.impl.flags) do out[#out + 1] = name end
  sort(out)
  return out
end

function Flags:reload()
  if self.closed then return nil, CLOSED end
  local impl = self.impl
  if not impl.reload then return true end
  return impl:reload()
end

function M.wrap(impl)
  if type(impl) ~= "table" or type(impl.flags) ~= "table" then
    error("flag.wrap: expects an adapter object with a flags table", 2)
  end
  return battery.object(Flags, impl, {})
end

-- A memory flag set: opts.flags is a flag tree (adapters.flag.rules).
function M.new(opts)
  return battery.default(M.wrap, "adapters.flag.memory", "flag.new", opts)
end

return M
