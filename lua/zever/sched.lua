-- zever.sched: coroutines on the event loop. Requests, jobs and timers run their Lua code in a
-- coroutine so that code which waits (zever.sleep, Redis, SMTP) yields to the loop and reads
-- straight-line.
--
--   sched.spawn(fn, a, b, c, d)   runs fn(a, b, c, d) in a coroutine now, until it first waits
--   sched.sleep(seconds)          waits without blocking the worker
--   sched.wake(co, ...)           resumes a coroutine that yielded (its failure is reported)
--   sched.report(co, ok, err)     the one failure reporter: a traceback on stderr when not ok
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
-- Coroutines are reused: when fn returns, its coroutine parks in a pool and serves the next
-- spawn, so a request costs no coroutine allocation once the pool is warm. fn must catch its
-- own errors (dispatch does); one that escapes is logged and that coroutine is dropped.
--
-- A coroutine that waits is resumed by whatever it waits on (the timer of sleep, say), never by
-- the pool. Outside any coroutine (a script, the CLI), sleep runs the loop until it is over.

local loop = require "zever.loop"

local create, resume, yield, running = coroutine.create, coroutine.resume, coroutine.yield,
  coroutine.running
local type, tostring = type, tostring
local run = loop.run

local M = {}

local pool, npool = {}, 0
local MAX_POOL = 1024

local function body(fn, a, b, c, d)
  while true do
    fn(a, b, c, d)
    if npool >= MAX_POOL then return end
    npool = npool + 1
    pool[npool] = running()
    fn, a, b, c, d = yield()
  end
end

local function report(co, ok, err)
  if not ok then
    io.stderr:write("zever: a coroutine failed: ", debug.traceback(co, tostring(err)), "\n")
  end
end
M.report = report

function M.spawn(fn, a, b, c, d)
  local co
  if npool > 0 then
    co = pool[npool]
    pool[npool] = nil
    npool = npool - 1
  else
    co = create(body)
  end
  report(co, resume(co, fn, a, b, c, d))
  return co
end

-- Resumes a waiting coroutine with the given values (for bindings that complete a wait).
function M.wake(co, ...)
  report(co, resume(co, ...))
end

function M.token()
  return running() or { done = false }
end

function M.complete(token, a, b, c)
  if type(token) == "thread" then
    report(token, resume(token, a, b, c))
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

return M
