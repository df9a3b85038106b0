-- zever.worker's timers: the poller sleeps exactly its backoff delay on one re-armable timer
-- (an idle worker wakes a few times a second, not every millisecond), a job that finishes at
-- full concurrency resumes the poller at once, and job timeouts fire from a timer armed for the
-- nearest deadline. Jobs over a memory queue, dead letters in a :memory: database. The specs of
-- delays run on a fake clock (spec/support/fake_clock.lua, the worker's opts.clock): the spec
-- moves time and fires the timers the worker armed, so no wall-clock window can flake.

local jobs = require "zever.jobs"
local worker = require "zever.worker"
local queue = require "zever.queue"
local zdb = require "zever.db"
local jq = require "adapters.jobs.queue"
local loop = require "zever.loop"
local sched = require "zever.sched"
local testing = require "zever.testing"
local fake_clock = require "spec.support.fake_clock"
local process = require "spec.support.process"
local sys = require "zever.sys"

local n = 0
local function fresh()
  n = n + 1
  local db = assert(zdb.open("sqlite::memory:"))
  local q = queue.new{ name = "worker-spec-" .. n }
  return jobs.wrap(jq.new(q, { db = db }), { attempts = 1, base = 0.01, cap = 0.1,
    jitter = false, timeout = 5 })
end

local function stop(w)
  local drained = false
  w:drain(0, function() drained = true end)
  testing.run_until(function() return drained end, 5)
  return drained
end

-- Drains a worker on a fake clock: the drain arms the wake timer for 0, which the clock fires.
local function stop_fake(w, clock)
  local drained = false
  w:drain(0, function() drained = true end)
  clock.advance(0)
  return drained
end

-- Runs the loop for `seconds`.
local function run_for(seconds)
  local t = loop.after(seconds, function() loop.stop() end)
  loop.run()
  t:stop()
end

describe("zever.worker timers", function()
  it("closes its timers on drain", function()
    local j = fresh()
    local w = worker.new(j, { poll_max = 0.01 })
    w:start()
    local wake, guard = w.timer, w.guard
    run_for(0.05)
    assert.is_true(stop(w))
    -- Closed timers refuse to start (other spec files may leave handles of their own on this
    -- loop, so "the loop has nothing left to run" is not asked of the whole loop).
    assert.is_false(pcall(wake.start, wake, 1))
    assert.is_false(pcall(guard.start, guard, 1))
    assert.has_no_error(function() w:start() end)   -- and it can start again
    assert.is_true(stop(w))
  end)

  it("wakes an idle worker once per backoff delay, not every millisecond", function()
    local j, clock = fresh(), fake_clock.new()
    local w = worker.new(j, { poll_max = 0.05, clock = clock })
    w:start()
    local fired = clock.advance(0.5)
    local wakes = w.stats.wakes
    -- 1, 2, 4, 8, 16, 32 ms (63 ms), then every 50 ms: 8 more by 0.5 s (a 1 ms ticker: 500).
    local want = { 0.001, 0.002, 0.004, 0.008, 0.016, 0.032 }
    for i = 7, 15 do want[i] = 0.05 end
    assert.are.same(want, clock.armed)
    assert.are.equal(14, wakes)
    assert.are.equal(fired, wakes)
    assert.is_true(stop_fake(w, clock))
  end)

  it("allocates nothing per idle wake-up once warm (measured in a process of its own)", function()
    -- spec/fixtures/worker_idle_alloc.lua says why not in this process.
    local out = process.output(process.quote(sys.exe()) .. " run spec/fixtures/worker_idle_alloc.lua")
    local wakes, grown = out:match("wakes (%d+) grown ([%d.]+)")
    assert.are.equal("200", wakes, out)
    assert.is_true(tonumber(grown) < 1, "grew " .. tostring(grown) .. " KiB over 200 wake-ups: " .. out)
  end)

  it("runs a job dispatched while it sleeps at its next wake-up, within poll_max", function()
    local j, clock = fresh(), fake_clock.new()
    local ran_at
    j:register("ping", function() ran_at = clock.now() end)
    local w = worker.new(j, { poll_max = 0.05, clock = clock })
    w:start()
    clock.advance(0.3)                -- the poller is at its cap now
    local sent = clock.now()
    j:dispatch("ping")
    assert.is_nil(ran_at)             -- dispatch does not wake it: its timer does
    clock.advance(0.05)
    assert.is_not_nil(ran_at)
    assert.is_true(ran_at > sent and ran_at - sent <= 0.05, "ran after " .. (ran_at - sent) .. " s")
    assert.is_true(stop_fake(w, clock))
  end)

  it("resumes the poller as soon as a job frees the only slot", function()
    local j, clock = fresh(), fake_clock.new()
    local started, tokens = {}, {}
    j:register("nap", function(args)
      started[#started + 1] = args
      tokens[args] = sched.token()
      sched.await(tokens[args])
    end)
    j:dispatch("nap", 1)
    j:dispatch("nap", 2)
    local w = worker.new(j, { poll_max = 1, clock = clock })
    w:start()
    assert.are.same({ 1 }, started)
    -- Every slot busy: the poller waits with no wake timer armed.
    assert.is_false(w.timer:active())
    sched.complete(tokens[1])
    -- Job 1 ended: the wake timer is armed for 0, not for poll_max.
    assert.is_true(w.timer:active())
    assert.are.equal(0, clock.armed[#clock.armed])
    clock.advance(0)
    assert.are.same({ 1, 2 }, started)
    sched.complete(tokens[2])
    assert.are.equal(2, w.stats.done)
    assert.is_true(stop_fake(w, clock))
  end)

  it("fails each waiting job at its own timeout, the nearest deadline first", function()
    local j = fresh()
    local dead, ended = {}, 0
    local function stuck() sched.sleep(0.6); ended = ended + 1 end
    j:register("long", stuck, { timeout = 0.3 })
    j:register("short", stuck, { timeout = 0.1 })
    j:on_dead_letter(function(r) dead[#dead + 1] = { r.name, loop.now(), ended } end)
    local t0 = loop.now()
    j:dispatch("long")
    j:dispatch("short")
    local w = worker.new(j, { concurrency = 2, poll_max = 0.01 })
    w:start()
    assert.is_true(testing.run_until(function() return #dead == 2 end, 3))
    assert.is_true(stop(w))
    assert.are.equal(2, w.stats.timeouts)
    assert.are.equal("short", dead[1][1])
    assert.are.equal("long", dead[2][1])
    -- Each at or after its own timeout, and both before any handler's 0.6 s sleep ended (timers
    -- fire in the order they are due, however loaded the machine): interrupted, not finished.
    assert.is_true(dead[1][2] - t0 >= 0.099)
    assert.is_true(dead[2][2] - t0 >= 0.299)
    assert.are.same({ 0, 0 }, { dead[1][3], dead[2][3] })
    -- The abandoned handlers wake later; their results are ignored. Leave no timer behind.
    assert.is_true(testing.run_until(function() return ended == 2 end, 3))
    assert.are.equal(2, w.stats.timeouts)
    assert.are.equal(0, w.stats.done)
  end)
end)
