-- adapters.eventbus.memory: the in-process event bus: publish hands the message to this Lua
-- state's subscribers (one worker of `zever serve`, or a script); nothing crosses a thread or a
-- process (use redis or postgres for that).
--
--   local impl = memory.new{}
--   impl:start(deliver) / impl:publish(topic, msg) / impl:close()   (the eventbus contract)
--   memory.open(section)  -> impl (the adapter contract)

local M = {}

local Memory = {}
Memory.__index = Memory

local function none() end

function Memory:start(deliver)
  self.deliver = deliver
  return true
end

function Memory:publish(topic, msg)
  self.deliver(topic, msg)
  return true
end

function Memory:close()
  self.deliver = none
  return true
end

function M.new(opts)
  if opts ~= nil and type(opts) ~= "table" then
    error("eventbus.memory.new: expects an options table", 2)
  end
  return setmetatable({ deliver = none }, Memory)
end

function M.open()
  return M.new{}
end

return M
