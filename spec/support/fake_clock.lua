-- spec.support.fake_clock: a clock a spec moves itself, for code that takes an injected clock
-- { now, timer } in place of the event loop's (zever.worker's opts.clock): timers fire when the
-- spec advances time past their deadline, in deadline order, never on the wall clock.
--
--   local clock = fake_clock.new([{ record = false }])   -- time starts at 0; record = false
--                                           keeps no list of delays (nothing allocated per start)
--   clock.now()                          -> the current fake time (seconds)
--   clock.timer(fn) -> timer             -- timer:start(s), stop(), close(), active(), as loop.timer
--   clock.advance(dt)                    -- moves time by dt, firing every timer due on the way
--                                           (one at a time, each at its own deadline); returns
--                                           how many fired
--   clock.next()                         -> the deadline of the nearest armed timer, or nil
--   clock.armed                          -- every delay passed to a start(), in order

local M = {}

function M.new(opts)
  local record = not (opts and opts.record == false)
  local clock = { t = 0, timers = {}, armed = {} }

  function clock.now() return clock.t end

  function clock.timer(fn)
    local tm = { fn = fn, at = nil, closed = false }
    function tm.start(self, s)
      if self.closed then error("timer:start: the timer is closed", 2) end
      if record then clock.armed[#clock.armed + 1] = s end
      self.at = clock.t + s
    end
    function tm.stop(self) self.at = nil end
    function tm.close(self) self.at, self.closed = nil, true end
    function tm.active(self) return self.at ~= nil end
    clock.timers[#clock.timers + 1] = tm
    return tm
  end

  local function nearest()
    local best
    for _, tm in ipairs(clock.timers) do
      if tm.at and (not best or tm.at < best.at) then best = tm end
    end
    return best
  end

  function clock.next()
    local tm = nearest()
    return tm and tm.at
  end

  function clock.advance(dt)
    local target, fired = clock.t + dt, 0
    while true do
      local tm = nearest()
      if not tm or tm.at > target then break end
      if tm.at > clock.t then clock.t = tm.at end
      tm.at = nil
      fired = fired + 1
      tm.fn()
    end
    clock.t = target
    return fired
  end

  return clock
end

return M
