-- adapters.lock.memory: leases in a process-wide C table (host/lock/), shared by every worker
-- thread that opens the same name: exclusive across the threads of one `zever serve`, not
-- across processes (use db or redis for that).
--
--   local impl = memory.new{ name = "default", clock = nil }
--   impl:acquire(key, ttl)        -> fence, fence | false | nil, err   (valid arguments)
--   impl:extend(key, token, ttl)  -> true | false
--   impl:unlock(key, token)       -> true | false
--   impl:holder(key)              -> fence, ttl_left | false
--   impl:sweep([max_steps])       -> removed, more     drops free and expired entries
--   impl:stats()                  -> { entries, acquired, contended, expired }
--   impl:clear()                  drops every entry of the named table
--   impl:close()                  releases this state's reference
--   memory.open(section)          -> impl (the adapter contract)
--
-- The fence is the owner token too (the table hands each lease a fence no other lease had).
-- clock is for specs: a function returning seconds; without it the core reads CLOCK_MONOTONIC.
-- Argument checks belong to the front-end (zever.lock), not here.

local core = require "zever.lock_core"
local errors = require "zever.errors"
local stripes = require "adapters.stripes"

local setmetatable = setmetatable

local M = {}

local Memory = {}
Memory.__index = Memory

local now_of = stripes.now

local function fail(msg, code)
  return nil, errors.core("lock", code, msg)
end

function Memory:acquire(key, ttl)
  local fence, msg, code = self.handle:acquire(key, ttl * 1e9, now_of(self))
  if fence == nil then return fail(msg, code) end
  if not fence then return false end
  return fence, fence
end

function Memory:extend(key, token, ttl)
  local ok, msg, code = self.handle:extend(key, token, ttl * 1e9, now_of(self))
  if ok == nil then return fail(msg, code) end
  return ok
end

function Memory:unlock(key, token)
  local ok, msg, code = self.handle:unlock(key, token, now_of(self))
  if ok == nil then return fail(msg, code) end
  return ok
end

function Memory:holder(key)
  local fence, left = self.handle:holder(key, now_of(self))
  if not fence then return false end
  return fence, left / 1e9
end

stripes.methods(Memory, 256)

-- opts: name (tables are shared by name across the worker threads; "default"), clock.
function M.new(opts)
  if type(opts) ~= "table" then error("lock.memory.new: expects an options table", 2) end
  local handle, name = stripes.open("lock", opts, "default", "", core.open)
  return setmetatable({ handle = handle, clock = opts.clock, name = name }, Memory)
end

-- The adapter contract: section is the config's lock section.
function M.open()
  return M.new{}
end

return M
