-- zever.loop: timers, signals and the loop's lifetime.

local loop = require "zever.loop"
local sys = require "zever.sys"
local process = require "spec.support.process"
local alloc = require "spec.support.alloc"
local hs = require "spec.support.http_script"

describe("zever.loop", function()
  describe("after", function()
    it("calls the function once after the delay", function()
      local calls, t0 = 0, loop.now()
      local at
      loop.after(0.02, function() calls = calls + 1; at = loop.now() end)
      loop.run()
      assert.are.equal(1, calls)
      assert.is_true(at - t0 >= 0.0199)
    end)

    it("runs timers in the order of their deadlines", function()
      local order = {}
      loop.after(0.03, function() order[#order + 1] = "c" end)
      loop.after(0.01, function() order[#order + 1] = "a" end)
      loop.after(0.02, function() order[#order + 1] = "b" end)
      loop.run()
      assert.same({ "a", "b", "c" }, order)
    end)

    it("does not call a timer stopped before its deadline", function()
      local called = false
      local t = loop.after(0.01, function() called = true end)
      assert.is_true(t:active())
      t:stop()
      t:stop()
      assert.is_false(t:active())
      loop.run()
      assert.is_false(called)
    end)

    it("keeps a timer whose object was collected", function()
      local called = false
      loop.after(0.01, function() called = true end)
      collectgarbage()
      collectgarbage()
      loop.run()
      assert.is_true(called)
    end)

    it("goes on after a callback raises", function()
      local after = false
      loop.after(0.001, function() error("expected in this spec") end)
      loop.after(0.01, function() after = true end)
      loop.run()
      assert.is_true(after)
    end)

    it("rejects a negative delay and a missing function", function()
      assert.has_error(function() loop.after(-1, function() end) end)
      assert.has_error(function() loop.after(1) end)
    end)
  end)

  describe("every", function()
    it("repeats until stopped", function()
      local n = 0
      local t
      t = loop.every(0.005, function()
        n = n + 1
        if n == 3 then t:stop() end
      end)
      loop.run()
      assert.are.equal(3, n)
    end)
  end)

  describe("timer", function()
    it("is created stopped and calls the function once per start", function()
      local calls, t0, at = 0, loop.now(), nil
      local t = loop.timer(function() calls = calls + 1; at = loop.now() end)
      assert.is_false(t:active())
      assert.is_false(loop.run())            -- a stopped timer does not keep run() going
      t:start(0.02)
      assert.is_true(t:active())
      loop.run()
      assert.are.equal(1, calls)
      assert.is_true(at - t0 >= 0.0199)
      assert.is_false(t:active())
      t:start(0.001)
      loop.run()
      assert.are.equal(2, calls)
      t:close()
    end)

    it("can be re-armed from its own callback", function()
      local n = 0
      local t
      t = loop.timer(function()
        n = n + 1
        if n < 5 then t:start(0.001) end
      end)
      t:start(0)
      loop.run()
      assert.are.equal(5, n)
      t:close()
    end)

    it("moves the deadline when started again while armed, and fires once", function()
      local calls, t0, at = 0, loop.now(), nil
      local t = loop.timer(function() calls = calls + 1; at = loop.now() end)
      t:start(0.005)
      t:start(0.04)
      loop.run()
      assert.are.equal(1, calls)
      assert.is_true(at - t0 >= 0.0399)
      t:start(1)
      t:start(0.002)
      loop.run()
      assert.are.equal(2, calls)
      assert.is_true(loop.now() - t0 < 0.9)
      t:close()
    end)

    it("does not fire after stop, and starts again after it", function()
      local calls = 0
      local t = loop.timer(function() calls = calls + 1 end)
      t:start(0.005)
      t:stop()
      t:stop()
      assert.is_false(t:active())
      loop.run()
      assert.are.equal(0, calls)
      t:start(0.001)
      loop.run()
      assert.are.equal(1, calls)
      t:close()
    end)

    it("raises on start after close; stop and close are harmless then", function()
      local t = loop.timer(function() end)
      t:close()
      t:close()
      t:stop()
      assert.is_false(t:active())
      assert.matches("closed", tostring(t))
      assert.has_error(function() t:start(0.001) end)
    end)

    it("closes when its object is collected", function()
      local called = false
      do
        local t = loop.timer(function() called = true end)
        t:start(0.01)
      end
      collectgarbage()
      collectgarbage()
      assert.is_false(loop.run())
      assert.is_false(called)
    end)

    it("rejects a negative delay and a missing function", function()
      local t = loop.timer(function() end)
      assert.has_error(function() t:start(-1) end)
      assert.has_error(function() t:start("soon") end)
      assert.has_error(function() loop.timer() end)
      t:close()
    end)

    it("unref: armed, it does not keep run() going, yet fires while the loop runs", function()
      local calls = 0
      local t = loop.timer(function() calls = calls + 1 end)
      t:unref()
      t:start(30)
      assert.is_true(t:active())
      assert.is_false(loop.run())            -- returns at once: nothing referenced is active
      assert.are.equal(0, calls)
      t:start(0.001)                         -- still unref'd after a re-arm
      local guard = loop.after(0.05, function() end)
      loop.run()                             -- the referenced guard keeps the loop running
      assert.are.equal(1, calls)
      guard:stop()
      t:close()
      t:unref()                              -- harmless once closed
    end)

    it("allocates nothing to re-arm", function()
      local t = loop.timer(function() end)
      local function arms(k) for i = 1, k do t:start(i % 7 * 0.001 + 1) end end
      local grown = alloc.settled(function() arms(10000) end, { below = 1 })
      t:close()
      assert.is_true(grown < 1, "grew " .. grown .. " KiB")
    end)
  end)

  describe("run and stop", function()
    it("returns when nothing is active", function()
      local started = sys.now()
      assert.is_false(loop.run())
      assert.is_true(sys.now() - started < 1)
    end)

    it("returns after stop with the handles still active", function()
      local t = loop.every(0.005, function() loop.stop() end)
      assert.is_true(loop.run())
      t:stop()
    end)

    it("raises when run is called from inside a callback", function()
      local err
      loop.after(0, function() err = select(2, pcall(loop.run)) end)
      loop.run()
      assert.matches("already running", err)
    end)

    it("tells the loop time in seconds", function()
      local a = loop.now()
      loop.after(0.02, function() end)
      loop.run()
      assert.is_true(loop.now() - a >= 0.0199)
    end)
  end)

  describe("signal", function()
    it("calls the function when the process receives the signal", function()
      local got
      local h = loop.signal("SIGUSR1", function(name) got = name; loop.stop() end)
      os.execute("kill -USR1 " .. sys.getpid())
      local guard = loop.after(5, function() loop.stop() end)
      loop.run()
      guard:stop()
      h:stop()
      assert.are.equal("SIGUSR1", got)
    end)

    it("does not keep run() going on its own", function()
      local h = loop.signal("SIGUSR2", function() end)
      assert.is_false(loop.run())
      h:stop()
    end)

    it("rejects an unknown signal name", function()
      assert.has_error(function() loop.signal("SIGNOPE", function() end) end)
    end)
  end)
  describe("spawn and resume: the one coroutine pool", function()
    it("runs the function at once with its arguments and returns its coroutine", function()
      local got
      local co = loop.spawn(function(a, b) got = { a, b, coroutine.running() } end, 1, "x")
      assert.are.equal("thread", type(co))
      assert.same({ 1, "x", co }, got)
    end)

    it("gives a coroutine whose function returned to the next spawn", function()
      local first, second
      loop.spawn(function() first = coroutine.running() end)
      loop.spawn(function() second = coroutine.running() end)
      assert.are.equal(first, second)
    end)

    it("takes a waiting coroutine out of the pool and puts it back when resume finishes it", function()
      local waiter, got
      loop.spawn(function() waiter = coroutine.running(); got = { coroutine.yield() } end)
      local other
      loop.spawn(function() other = coroutine.running() end)
      assert.are_not.equal(waiter, other)
      loop.resume(waiter, "a", "b")
      assert.same({ "a", "b" }, got)
      local again
      loop.spawn(function() again = coroutine.running() end)
      assert.are.equal(waiter, again)
    end)

    it("serves HTTP requests from the same pool as spawn", function()
      local set = hs.server_set()
      local handler_co
      local _, port = set.serve({}, function(req)
        handler_co = coroutine.running()
        req:respond(200, "ok")
      end)
      local ok, out = pcall(hs.curl, "http://127.0.0.1:" .. port .. "/")
      set.close()
      assert(ok, out)
      assert.are.equal("ok", out)
      local spawned
      loop.spawn(function() spawned = coroutine.running() end)
      assert.are.equal(handler_co, spawned)
    end)

    it("reports a failure with its traceback instead of raising, and refuses an idle coroutine",
      function()
        local script = os.tmpname()
        local f = assert(io.open(script, "w"))
        f:write([[
local loop = require "zever.loop"
local idle = loop.spawn(function() end)
loop.spawn(function() error("boom in spawn") end)
loop.resume(idle, "never called")
print("still running")
]])
        f:close()
        local r = process.run(process.quote(sys.exe()) .. " run " .. process.quote(script))
        os.remove(script)
        assert.are.equal(0, r.code)
        assert.are.equal("still running\n", r.stdout)
        assert.matches("zever: a coroutine failed: [^\n]*boom in spawn\nstack traceback:", r.stderr)
        assert.matches("zever: a coroutine failed: cannot resume a coroutine that does not wait",
          r.stderr, 1, true)
      end)

    it("rejects a spawn without a function", function()
      assert.has_error(function() loop.spawn(42) end)
    end)
  end)

  describe("complete", function()
    it("resumes a waiting coroutine with the values, and it goes back to the pool", function()
      local got
      local co = loop.spawn(function() got = { coroutine.yield() } end)
      assert.are.equal("suspended", coroutine.status(co))
      loop.complete(co, true, "code", 3)
      assert.same({ true, "code", 3 }, got)
      assert.are.equal(co, loop.spawn(function() end)) -- the pool's next coroutine
    end)

    it("fills a box token and marks it done", function()
      local box = { done = false }
      loop.complete(box, false, "unavailable", "gone")
      assert.same({ false, "unavailable", "gone", done = true }, box)
      local empty = { done = false }
      loop.complete(empty)
      assert.same({ done = true }, empty)
    end)

    it("is what zever.sched.complete is: one wake-up path", function()
      assert.are.equal(loop.complete, require("zever.sched").complete)
    end)

    it("reports a coroutine that does not wait or a value that is not a token, and goes on",
      function()
        local script = os.tmpname()
        local f = assert(io.open(script, "w"))
        f:write([[
local loop = require "zever.loop"
local idle = loop.spawn(function() end)
loop.complete(idle, "never called")
loop.complete(42)
print("still running")
]])
        f:close()
        local r = process.run(process.quote(sys.exe()) .. " run " .. process.quote(script))
        os.remove(script)
        assert.are.equal(0, r.code)
        assert.are.equal("still running\n", r.stdout)
        assert.matches("zever: a coroutine failed: cannot resume a coroutine that does not wait",
          r.stderr, 1, true)
        assert.matches("zever: a coroutine failed: a token is a coroutine or a box, got a number",
          r.stderr, 1, true)
      end)
  end)

  describe("poll", function()
    local ffi = require "ffi"
    require "zever.cdef.libc"
    local C = ffi.C
    local fds

    before_each(function()
      fds = ffi.new("int[2]")
      assert(C.pipe(fds) == 0)
    end)

    after_each(function()
      C.close(fds[0])
      C.close(fds[1])
    end)

    it("calls the function each time the fd is readable, until stopped", function()
      local calls = {}
      local h = assert(loop.poll(fds[0], "r", function(ready) calls[#calls + 1] = ready end))
      assert.is_true(h:active())
      loop.run("nowait")
      assert.same({}, calls) -- nothing to read yet
      assert(C.write(fds[1], "x", 1) == 1)
      loop.run("once")
      assert.same({ "r" }, calls)
      h:stop()
      assert.is_false(h:active())
      loop.run("nowait")
      assert.same({ "r" }, calls) -- still readable, but stopped
    end)

    it("keeps run() going while active and lets it return once stopped", function()
      local h
      h = assert(loop.poll(fds[1], "w", function(ready)
        assert.are.equal("w", ready)
        h:stop()
      end))
      loop.run() -- returns: the callback stopped the only handle
      assert.is_false(h:active())
    end)

    it("rejects a bad fd, events name or function", function()
      assert.has_error(function() loop.poll(-1, "r", function() end) end)
      assert.has_error(function() loop.poll(fds[0], "x", function() end) end)
      assert.has_error(function() loop.poll(fds[0], "r") end)
    end)
  end)
end)
