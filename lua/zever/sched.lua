-- zever.sched: coroutines on the event loop. Requests, jobs and timers run their Lua code in a
-- coroutine so that code which waits (zever.sleep, Redis, SMTP) yields to the loop and reads
-- straight-line.
--
--   sched.spawn(fn, a, b, c, d)   runs fn(a, b, c, d) in a coroutine now, until it first waits
--   sched.sleep(seconds)          waits without blocking the worker
--   sched.wake(co, ...)           resumes a coroutine that yielded (its failure is reported)
--   sched.wait_until(pred[, timeout]) -> true | false   runs the loop (or yields) until pred()
--   sched.periodic(step, interval[, opts]) -> runner   step() now, then every interval seconds
--
-- The one way to wait (no module writes "yield inside a coroutine, else run the loop" again):
--   local token = sched.token()   the running coroutine, or a fresh box outside any coroutine
--   ...hand token to whatever completes the wait (a binding's callback, a timer)...
--   local a, b, c = sched.await(token)   yields, or pumps the loop until the token completes
--   sched.complete(token, a, b, c)       from a loop callback: wakes the waiter with a, b, c
-- A token completes once (a caller with two possible completers, a result and a timeout,
-- guards the second itself). Inside a coroutine the token is the coroutine: a wait allocates
-- nothing. A plain caller must not be a loop callback itself (spawn a coroutine there).
--
-- Coroutines come from the state's one pool, kept in C beside the event loop (zever.loop.spawn
-- and loop.resume; host/runtime/runtime.h), the pool HTTP requests take theirs from too: when
-- fn returns, its coroutine serves the next spawn or request, so work costs no coroutine
-- allocation once the pool is warm. fn must catch its own errors (dispatch does); one that
-- escapes is reported on stderr with its traceback (the one reporter, in the runtime) and that
-- coroutine is dropped.
--
-- A coroutine that waits is resumed by whatever it waits on (the timer of sleep, say) through
-- complete or wake, which give it back to the pool when it finishes. Outside any coroutine (a
-- script, the CLI), sleep runs the loop until it is over.

local loop = require "zever.loop"

local yield, running = coroutine.yield, coroutine.running
local type, tostring = type, tostring
local run, resume = loop.run, loop.resume

local M = {}

M.spawn = loop.spawn

-- Resumes a waiting coroutine with the given values (for bindings that complete a wait).
M.wake = resume

function M.token()
  return running() or { done = false }
end

-- A waiting coroutine is resumed with a, b, c; a box gets them and done = true. In C
-- (zever.loop.complete: runtime.h's zv_token_complete), the same function bindings call when
-- they finish a wait in C (zever.pg's reply): one wake-up path, whoever completes.
M.complete = loop.complete
local complete = M.complete

function M.await(token)
  if type(token) == "thread" then return yield() end
  while not token.done do run("once") end
  return token[1], token[2], token[3]
end
local await = M.await

function M.sleep(seconds)
  if type(seconds) ~= "number" or seconds ~= seconds or seconds < 0 then
    error("sleep wants a non-negative number of seconds, got " .. tostring(seconds), 2)
  end
  local token = M.token()
  local t = loop.after(seconds, function() complete(token) end)
  await(token)
  if type(token) ~= "thread" then t:stop() end
end

-- Waits until pred() returns true, checking after every turn of the loop (in a coroutine: it
-- yields between checks, every poll seconds, 1 ms by default). Returns true, or false when
-- timeout seconds (default: no limit) passed first. A script drives its spawned coroutines
-- with it: `sched.spawn(a); sched.spawn(b); sched.wait_until(function() return done == 2 end, 10)`.
function M.wait_until(pred, timeout, poll)
  if type(pred) ~= "function" then error("wait_until: pred must be a function", 2) end
  if timeout ~= nil and (type(timeout) ~= "number" or timeout ~= timeout or timeout < 0) then
    error("wait_until: timeout must be a number of seconds >= 0", 2)
  end
  poll = poll or 0.001
  local deadline = timeout and loop.now() + timeout
  while not pred() do
    if deadline and loop.now() >= deadline then return false end
    M.sleep(poll)
  end
  return true
end

-- A periodic runner: the shape of a relay or a sweeper (zever worker's outbox relay, workflow
-- sweep). runner:start() runs step() at once in a coroutine of the pool (step may wait), then
-- again interval seconds after each run returned, or after M.NEXT_TURN (1 ms) when step returned
-- true (a full batch: more is due). Not 0: libuv 1.44 (Debian 12) runs a timer re-armed with 0
-- inside its own callback again in the same pass, so a step that never waits (SQLite is
-- synchronous) would keep the worker from polling I/O or firing any other timer until the
-- backlog is gone; 1 ms lets one loop turn in between. One re-armable timer paces the runs,
-- so an idle runner costs one timer wake-up per interval and allocates nothing to wait. A step
-- that raises is caught and handed to opts.on_error(err) (default: written to stderr), and the
-- runner goes on.
--
--   local r = sched.periodic(step, 60, { timer = fn(callback) -> timer, on_error = fn(err) })
--   r:start() -> r       r:stop([on_done])   on_done once the run in flight returned (now, when
--                                            none is); a run in flight does not re-arm
--   r:close()            stops and closes the timer      r.running  true while step runs
--
-- opts.timer makes the timer (start(seconds), stop(), close()); zever.loop's by default (specs
-- pass their own and fire it).
M.NEXT_TURN = 0.001

function M.periodic(step, interval, opts)
  if type(step) ~= "function" then error("sched.periodic: step must be a function", 2) end
  if type(interval) ~= "number" or interval ~= interval or interval < 0 then
    error("sched.periodic: interval must be a number of seconds >= 0", 2)
  end
  opts = opts or {}
  local on_error = opts.on_error or function(err)
    io.stderr:write("zever: periodic step failed: ", tostring(err), "\n")
  end
  local r = { running = false, stopped = true }
  local function run_step()
    r.running = true
    local ok, again = pcall(step)
    r.running = false
    if not ok then
      on_error(again)
      again = false
    end
    if r.stopped then
      local done = r.on_done
      r.on_done = nil
      if done then done() end
      return
    end
    r.timer:start(again and M.NEXT_TURN or interval)
  end
  r.timer = (opts.timer or loop.timer)(function() M.spawn(run_step) end)
  function r.start()
    r.stopped = false
    r.timer:start(0)
    return r
  end
  function r.stop(_, on_done)
    r.stopped = true
    r.timer:stop()
    if r.running then r.on_done = on_done elseif on_done then on_done() end
  end
  function r.close()
    r.stop()
    r.timer:close()
  end
  return r
end

return M
