-- adapters.breaker.memory: the breakers of one Lua state (one worker of `zever serve`), by
-- name. zever.breaker keeps each breaker's state machine; this adapter only finds and stores
-- them.
--
--   impl:find(name) -> breaker | nil ;  impl:store(name, breaker) ;  impl:close()
--   memory.open(section) -> impl (the adapter contract)

local M = {}

local Memory = {}
Memory.__index = Memory

function Memory:find(name)
  return self.by_name[name]
end

function Memory:store(name, cb)
  self.by_name[name] = cb
end

function Memory:stats()
  local n = 0
  for _ in pairs(self.by_name) do n = n + 1 end
  return { breakers = n }
end

function Memory:close()
  self.by_name = {}
  return true
end

function M.new()
  return setmetatable({ by_name = {} }, Memory)
end

function M.open()
  return M.new()
end

return M
