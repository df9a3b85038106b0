-- zever.sched: coroutines on the event loop. Requests, jobs and timers run their Lua code in a
-- coroutine so that code which waits (zever.sleep, Redis, SMTP) yields to the loop and reads
-- straight-line.
--
--   sched.spawn(fn, a, b, c, d)   runs fn(a, b, c, d) in a coroutine now, until it first waits
--   sched.sleep(seconds)          waits without blocking the worker
--   sched.wake(co, ...)           resumes a coroutine that yielded (its failure is reported)
--   sched.wait_until(pred[, timeout]) -> true | false   runs the loop (or yields) until pred()
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

function M.complete(token, a, b, c)
  if type(token) == "thread" then
    resume(token, a, b, c)
  else
    token[1], token[2], token[3], token.done = a, b, c, true
  end
end
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

return M
