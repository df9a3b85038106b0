-- adapters.webhook.memory: the endpoints of zever.webhook in a Lua table (one process; a
-- restart forgets them: use the db adapter to keep them).
--
--   impl:add(event, url, secret) -> id ;  impl:remove(id) -> boolean ;  impl:get(id) -> e | nil
--   impl:list(event) -> endpoints of event and of "*" (nil: all), by id
--   memory.open(section) -> impl (the adapter contract)

local M = {}

local Memory = {}
Memory.__index = Memory

function Memory:add(event, url, secret)
  self.n = self.n + 1
  self.by_id[self.n] = { id = self.n, event = event, url = url, secret = secret }
  return self.n
end

function Memory:remove(id)
  local had = self.by_id[id] ~= nil
  self.by_id[id] = nil
  return had
end

function Memory:get(id)
  return self.by_id[id]
end

function Memory:list(event)
  local out = {}
  for i = 1, self.n do
    local e = self.by_id[i]
    if e and (event == nil or e.event == event or e.event == "*") then out[#out + 1] = e end
  end
  return out
end

function Memory.close()
  return true
end

function M.new()
  return setmetatable({ by_id = {}, n = 0 }, Memory)
end

function M.open()
  return M.new()
end

return M
