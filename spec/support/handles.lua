-- spec.support.handles: what a spec left on the loop, by kind of handle.
--
--   local handles = require "spec.support.handles"
--   local before = loop.handles()
--   ... the spec's work ...
--   assert.is_true(handles.settle(before, 10))      -- spins the loop (nowait) up to 10 s
--   assert.are.same({}, handles.extra(before))
--
-- A spec's handles are gone when, of each kind ("timer", "tcp", ...), the loop holds no more
-- than it did before. Fewer is fine: a handle of an earlier spec (a closed server's connection
-- winding down its grace, say) may close meanwhile, which a comparison of counts took for a
-- leak.
local loop = require "zever.loop"
local sys = require "zever.sys"

local M = {}

-- The handles open now beyond `before` (a list from loop.handles()), by kind.
function M.extra(before)
  local count = {}
  for _, h in ipairs(before) do count[h] = (count[h] or 0) + 1 end
  local more = {}
  for _, h in ipairs(loop.handles()) do
    count[h] = (count[h] or 0) - 1
    if count[h] < 0 then more[#more + 1] = h end
  end
  return more
end

-- Runs the loop without blocking until nothing beyond `before` is open or secs passed;
-- returns whether it got there.
function M.settle(before, secs)
  local deadline = sys.now() + (secs or 10)
  while #M.extra(before) > 0 and sys.now() < deadline do loop.run("nowait") end
  return #M.extra(before) == 0
end

return M
