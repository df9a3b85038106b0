-- zever.threads: worker threads with their own states and loops (fixtures in spec/fixtures/).

local loop = require "zever.loop"
local threads = require "zever.threads"

local run_until = require("zever.testing").run_until

local fs = require "spec.support.files"
local handles = require "spec.support.handles"
local slurp, tmpdir = fs.slurp, fs.tmpdir

-- Stops and joins pool when the spec ends, passed or failed: a pool whose workers still run
-- when it is collected blocks the collector (it joins them), which hangs the whole run.
local function stop_at_end(pool)
  finally(function()
    pcall(pool.send, pool, 0, "stop")
    pcall(pool.join, pool)
  end)
  return pool
end

describe("zever.threads", function()
  it("starts workers that get the payload, their index and the count", function()
    local dir = tmpdir()
    local pool = stop_at_end(threads.start(2, "spec.fixtures.threads_worker", dir))
    assert.are.equal(2, pool:size())
    assert.is_true(run_until(function() return slurp(dir .. "/w1") and slurp(dir .. "/w2") end))
    assert.are.equal("1/2", slurp(dir .. "/w1"))
    assert.are.equal("2/2", slurp(dir .. "/w2"))
    pool:send(0, "stop")
    pool:join()
    os.execute("rm -rf " .. dir)
  end)

  it("delivers messages to one worker or to all, in order", function()
    local dir = tmpdir()
    local pool = stop_at_end(threads.start(2, "spec.fixtures.threads_worker", dir))
    assert.is_true(pool:send(1, "one"))
    assert.is_true(pool:send(0, "all"))
    pool:send(0, "stop")
    pool:join()
    assert.are.equal("one\nall\nstop\n", slurp(dir .. "/m1"))
    assert.are.equal("all\nstop\n", slurp(dir .. "/m2"))
    assert.is_false(pool:send(1, "too late"))
    os.execute("rm -rf " .. dir)
  end)

  it("reports each worker's end through on_exit in the owner's loop", function()
    local dir = tmpdir()
    local pool = stop_at_end(threads.start(2, "spec.fixtures.threads_worker", dir))
    local exits = {}
    pool:on_exit(function(index, ok, err) exits[index] = { ok, err } end)
    pool:send(0, "stop")
    assert.is_true(run_until(function() return exits[1] and exits[2] end))
    assert.same({ true, nil }, exits[1])
    assert.same({ true, nil }, exits[2])
    pool:join()
    os.execute("rm -rf " .. dir)
  end)

  it("reports a worker that raised with its error", function()
    local pool = stop_at_end(threads.start(1, "spec.fixtures.threads_worker", "raise"))
    local exit
    pool:on_exit(function(index, ok, err) exit = { index, ok, err } end)
    assert.is_true(run_until(function() return exit end))
    assert.are.equal(1, exit[1])
    assert.is_false(exit[2])
    assert.matches("worker failed on purpose", exit[3])
    pool:join()
  end)

  it("reports a module that cannot be loaded", function()
    local pool = stop_at_end(threads.start(1, "spec.fixtures.no_such_module", ""))
    local exit
    pool:on_exit(function(_, ok, err) exit = { ok, err } end)
    assert.is_true(run_until(function() return exit end))
    assert.is_false(exit[1])
    assert.matches("no_such_module", exit[2])
    pool:join()
  end)

  it("lets the owner's loop end once every worker has ended", function()
    -- Counted against what the loop held before the pool: a handle some other part of the
    -- process keeps open is not the pool's to release.
    local before = loop.handles()
    local pool = stop_at_end(threads.start(1, "spec.fixtures.threads_worker", "raise"))
    assert.is_true(#handles.extra(before) > 0)
    -- No timer here (a timer would keep the loop going): spin the loop without blocking.
    handles.settle(before, 5)
    assert.are.same({}, handles.extra(before))
    pool:join()
  end)

  it("lets the loop go at join when nobody waits for the exits, and still reports them later", function()
    local before = loop.handles()
    local pool = stop_at_end(threads.start(1, "spec.fixtures.threads_worker", "raise"))
    pool:join()
    assert.are.same({}, handles.extra(before))
    local exit
    pool:on_exit(function(index, ok) exit = { index, ok } end)
    assert.is_true(run_until(function() return exit end))
    assert.are.same({ 1, false }, exit)
    assert.are.same({}, handles.extra(before))
  end)

  it("serves HTTP from two workers on one port", function()
    local http = require "zever.http"
    local probe = assert(http.listen({ port = 0 }, function(req) req:respond(200) end))
    local port = probe:port()
    probe:close()
    local pool = stop_at_end(threads.start(2, "spec.fixtures.http_worker", tostring(port)))
    -- Wait until a worker listens (a loaded machine may take a while to start the threads).
    assert.is_true(require("spec.support.process").wait_for(function()
      return os.execute(("curl -s -o /dev/null http://127.0.0.1:%d/"):format(port)) == 0
    end, 20))
    local cmd = ("for i in 1 2 3 4 5 6 7 8; do curl -s --retry 20 --retry-connrefused --retry-delay 0 "
      .. "http://127.0.0.1:%d/; echo; done"):format(port)
    local p = io.popen(cmd)
    local out = p:read("*a")
    p:close()
    assert.matches("^worker [12]\n", out)
    local _, count = out:gsub("worker [12]\n", "")
    assert.are.equal(8, count)
    local ended = 0
    pool:on_exit(function(_, ok) if ok then ended = ended + 1 end end)
    pool:send(0, "stop")
    assert.is_true(run_until(function() return ended == 2 end))
    pool:join()
  end)

  it("raises when on_message is called outside a worker", function()
    assert.has_error(function() threads.on_message(function() end) end,
      "threads.on_message: not in a worker thread")
  end)
end)
