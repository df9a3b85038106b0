-- adapters.scheduler.memory: the one-run-per-slot lock in this process: a set-if-absent in a
-- process-wide C table (the memory cache's core, host/cache/), so the worker threads of one
-- process share it and one of them wins each slot. Processes do not share it: use the db
-- adapter when more than one `zever worker` process runs the schedules.
--
--   local lock = memory.new{ name = "zever:scheduler" }
--   lock:acquire(key, slot, horizon) -> true (this caller won the slot) | false (taken)
--                                      | nil, err
--   lock:close()
--   memory.open(section, ctx)         -> impl over it (the adapter contract)
--
-- A key lives `horizon` seconds (then the table forgets it; slots are never revisited, so that
-- is safe). The table has a 4 MiB budget: ~20 000 live keys; eviction of a live key could only
-- let the same slot fire twice in this process if one process held more than that. This file
-- must not compute slots or dispatch jobs (zever.scheduler does).

local cache_memory = require "adapters.cache.memory"
local errors = require "zever.errors"

local setmetatable, error, type, tostring = setmetatable, error, type, tostring

local M = {}

local L = {}
L.__index = L

local CLOSED = errors.new("scheduler", "closed", "lock closed")

function L:acquire(key, _, horizon)
  if self.closed then return nil, CLOSED end
  local ok, err = self.impl:set(key, true, horizon or 86400, true)
  if ok == nil then return nil, errors.new("scheduler", "unavailable", tostring(err)) end
  return ok
end

function L:close()
  if not self.closed then
    self.closed = true
    self.impl:close()
  end
end

function M.new(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("scheduler.memory.new: expects an options table", 2) end
  local impl = cache_memory.new{ name = opts.name or "zever:scheduler", max_bytes = 4 * 1024 * 1024,
    clock = opts.clock }
  return setmetatable({ impl = impl, closed = false }, L)
end

function M.open()
  return M.new()
end

return M
