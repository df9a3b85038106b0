-- spec.support.lock_contenders: the body of the multi-process lock fixtures
-- (spec/fixtures/lock_contender.lua on redis, lock_pg_contender.lua on PostgreSQL). Each process
-- runs it with its own lock table and a counter shared by every process:
--
--   local overlaps, leases = contenders.run(locks, enter, leave, contenders, rounds)
--
-- It starts <contenders> coroutines that each take the lease on "k" <rounds> times (acquire
-- waits up to 60 s); while holding it a coroutine calls enter() (which adds 1 to the shared
-- "inside" and returns the new value), yields for a millisecond, and calls leave(): a value
-- other than 1 means two holders at once, across every process. It returns when all are done
-- (or 120 s passed).

local sched = require "zever.sched"

local M = {}

function M.run(locks, enter, leave, contenders, rounds)
  local overlaps, leases, left = 0, 0, contenders
  for _ = 1, contenders do
    sched.spawn(function()
      for _ = 1, rounds do
        local lease = assert(locks:acquire("k", 30, 60))
        if enter() ~= 1 then overlaps = overlaps + 1 end
        sched.sleep(0.001)
        leave()
        assert(lease:unlock())
        leases = leases + 1
      end
      left = left - 1
    end)
  end
  sched.wait_until(function() return left == 0 end, 120)
  return overlaps, leases
end

return M
