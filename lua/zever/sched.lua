-- zever.sched: coroutines on the event loop. Requests, jobs and timers run their Lua code in a
-- coroutine so that code which waits (zever.sleep, Redis, SMTP) yields to the loop and reads
-- straight-line.
--
--   sched.spawn(fn, a, b, c, d)   runs fn(a, b, c, d) in a coroutine now, until it first waits
--   sched.sleep(seconds)          waits without blocking the worker
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

function M.sleep(seconds)
  if type(seconds) ~= "number" or seconds ~= seconds or seconds < 0 then
    error("sleep wants a non-negative number of seconds, got " .. tostring(seconds), 2)
  end
  local co = running()
  if not co then
    local done = false
    local t = loop.after(seconds, function() done = true end)
    while not done do loop.run("once") end
    t:stop()
    return
  end
  loop.after(seconds, function() report(co, resume(co)) end)
  return yield()
end

return M
