-- adapters.workflow.memory: workflow runs, step results and signals in this process's memory
-- (tests, development; a restart forgets them). zever.workflow is its front-end; the values it
-- stores are JSON texts, as the db adapter's.
--
--   impl:create(id, name, input, now[, retention]) -> true | false (the id exists)
--   impl:get(id) -> run | nil      run: { id, name, status, input, output, error, attempts,
--                                         state, wake_at, created_at, updated_at, retention,
--                                         ended_at, expire_at }
--   impl:update(id, fields)        impl:steps(id) -> { [key] = result }
--   impl:put_step(id, key, result) -> true | false (recorded already: the first one stays)
--   impl:record_step(id, key, result, fields) -> put_step, then update(id, fields) when it
--                                   recorded: atomically (one script, one transaction)
--   impl:add_signal(id, name, value) -> seq       impl:signals(id) -> { { seq, name, value } }
--   impl:list(status, limit) -> runs
--   impl:sweep(field, cutoff, limit) -> deleted, remaining   deletes at most limit runs whose
--                                   field ("expire_at" or "ended_at") is <= cutoff, oldest first,
--                                   with their steps and signals; remaining: how many more match
--   impl:count_ended(field, cutoff) -> how many runs sweep(field, cutoff, ...) would delete

local M = {}

local D = {}
D.__index = D

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

function D:create(id, name, input, now, retention)
  if self.runs[id] then return false end
  self.runs[id] = { id = id, name = name, status = "pending", input = input, attempts = 0,
    created_at = now, updated_at = now, retention = retention }
  self.steps_of[id], self.signals_of[id] = {}, {}
  return true
end

function D:get(id)
  local r = self.runs[id]
  return r and copy(r) or nil
end

function D:update(id, fields)
  local r = self.runs[id]
  if not r then return false end
  for k, v in pairs(fields) do
    if v == self.null then r[k] = nil else r[k] = v end
  end
  return true
end

function D:steps(id)
  return copy(self.steps_of[id] or {})
end

function D:put_step(id, key, result)
  local s = self.steps_of[id]
  if s[key] ~= nil then return false end
  s[key] = result
  return true
end

-- put_step and update together: false (and no update) when the step was recorded already.
function D:record_step(id, key, result, fields)
  if not self:put_step(id, key, result) then return false end
  self:update(id, fields)
  return true
end

function D:add_signal(id, name, value)
  local list = self.signals_of[id]
  self.seq = self.seq + 1
  list[#list + 1] = { seq = self.seq, name = name, value = value }
  return self.seq
end

function D:signals(id)
  local out = {}
  for i, s in ipairs(self.signals_of[id] or {}) do out[i] = copy(s) end
  return out
end

function D:list(status, limit)
  local out = {}
  for _, r in pairs(self.runs) do
    if (not status or r.status == status) and #out < limit then out[#out + 1] = copy(r) end
  end
  table.sort(out, function(a, b) return a.created_at < b.created_at end)
  return out
end

-- The ids of the runs whose field is <= cutoff, oldest first (a scan: this store is for tests
-- and development).
local function due(self, field, cutoff)
  local ids = {}
  for id, r in pairs(self.runs) do
    local v = r[field]
    if v and v <= cutoff then ids[#ids + 1] = id end
  end
  table.sort(ids, function(a, b) return self.runs[a][field] < self.runs[b][field] end)
  return ids
end

function D:sweep(field, cutoff, limit)
  local ids = due(self, field, cutoff)
  local n = math.min(#ids, limit)
  for i = 1, n do
    local id = ids[i]
    self.runs[id], self.steps_of[id], self.signals_of[id] = nil, nil, nil
  end
  return n, #ids - n
end

function D:count_ended(field, cutoff)
  return #due(self, field, cutoff)
end

function D.close() return true end

function M.new()
  return setmetatable({ runs = {}, steps_of = {}, signals_of = {}, seq = 0, null = {} }, D)
end

function M.open() return M.new() end

return M
