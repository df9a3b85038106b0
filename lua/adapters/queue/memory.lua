-- adapters.queue.memory: the in-process queue: a process-wide C structure (host/queue/) shared by
-- every worker thread that opens the same name. For one process only: `zever serve` and
-- `zever worker` are two processes and need the db adapter.
--
--   local impl = memory.new{ name = "default", clock = nil }
--   impl:push / pop / ack / nack / len / close     (zever.queue's adapter interface)
--   memory.open(section)    -> impl over it (the adapter contract)
--
-- clock is for specs: a function returning seconds, used for delays, leases and enqueued_at;
-- without it the core reads CLOCK_MONOTONIC and enqueued_at is the wall clock.

local core = require "zever.queue_core"
local errors = require "zever.errors"
local sys = require "zever.sys"

local type, error, format, setmetatable = type, error, string.format, setmetatable

local M = {}

local NO_MEMORY = errors.core("queue", errors.E.NOMEM)

local Memory = {}
Memory.__index = Memory

function Memory:push(topic, data, kind, headers, delay)
  local clock, now = self.clock, 0
  local at = clock and clock() or sys.wall()
  if clock then now = at * 1e9 + 1 end
  local id = self.handle:push(topic, data, kind, headers, delay * 1e9, at * 1e9, now)
  if id then return id end
  return nil, NO_MEMORY
end

function Memory:pop(topic, visibility)
  local clock = self.clock
  local id, lease, attempt, kind, at, data, headers =
    self.handle:pop(topic, visibility * 1e9, clock and clock() * 1e9 + 1 or 0)
  if id == nil then return nil end
  return id, lease, attempt, kind, at / 1e9, data, headers
end

function Memory:ack(id, lease)
  return self.handle:ack(id, lease)
end

function Memory:nack(id, lease, requeue, delay)
  local clock = self.clock
  return self.handle:nack(id, lease, requeue, delay * 1e9, clock and clock() * 1e9 + 1 or 0)
end

function Memory:len(topic)
  return self.handle:len(topic)
end

function Memory:close()
  self.handle:release()
  return true
end

function M.new(opts)
  if type(opts) ~= "table" then error("queue.memory.new: expects an options table", 2) end
  if opts.clock ~= nil and type(opts.clock) ~= "function" then
    error("queue: clock must be a function", 2)
  end
  local name = opts.name or "default"
  if type(name) ~= "string" then error("queue: name must be a string", 2) end
  local handle, msg = core.open(name)
  if not handle then error(format("queue: %s", msg), 2) end
  return setmetatable({ handle = handle, clock = opts.clock, name = name }, Memory)
end

-- The adapter contract: section is the config's queue section.
function M.open()
  return M.new{}
end

return M
