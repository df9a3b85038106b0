-- zever.jobs and zever.worker in one process: jobs over a memory queue (or the db queue), dead
-- letters in an in-memory SQLite database, the worker on this thread's event loop.

local jobs = require "zever.jobs"
local worker = require "zever.worker"
local queue = require "zever.queue"
local zdb = require "zever.db"
local jq = require "adapters.jobs.queue"
local dbq = require "adapters.queue.db"
local loop = require "zever.loop"
local sched = require "zever.sched"
local testing = require "zever.testing"
local alloc = require "spec.support.alloc"

local n = 0
-- A fresh jobs battery: a memory queue of its own name and a :memory: database.
local function fresh(defaults, db_queue)
  n = n + 1
  local db = assert(zdb.open("sqlite::memory:"))
  local q
  if db_queue then
    q = queue.wrap(dbq.new(db, { sweep_interval = 0.05 }), { visibility_timeout = 0.3 })
  else
    q = queue.new{ name = "jobs-spec-" .. n }
  end
  local j = jobs.wrap(jq.new(q, { db = db }), defaults or { attempts = 3, base = 0.01, cap = 0.1,
    jitter = false, timeout = 5 })
  return j, q, db
end

local function run(j, opts, done, secs)
  local w = worker.new(j, opts or { poll_max = 0.005 })
  w:start()
  local ok = testing.run_until(done, secs or 5)
  local drained = false
  w:drain(opts and opts.drain or 0, function() drained = true end)
  testing.run_until(function() return drained end, 5)
  return ok, w
end

-- A handler that sleeps until its spec lets it go. A job that a timeout or a drain abandoned
-- keeps running on this thread's loop; a plain sleep(5) would leave its timer armed after the
-- spec, and a later spec that runs the loop until nothing is active (in any order) would wait
-- for it. The spec calls finish() in a finally: it releases the handlers and waits for them.
local function holder()
  local h = { released = false, running = 0 }
  function h.hold()
    h.running = h.running + 1
    while not h.released do sched.sleep(0.01) end
    h.running = h.running - 1
  end
  function h.finish()
    h.released = true
    assert(testing.run_until(function() return h.running == 0 end, 5), "a held job still runs")
  end
  return h
end

describe("zever.jobs", function()
  describe("register", function()
    it("takes attempts, backoff durations as strings, a queue and a timeout", function()
      local j = fresh()
      j:register("mail", function() end, { attempts = 25, queue = "mail", timeout = "2m",
        backoff = { base = "5s", cap = "24h", jitter = false } })
      local e = j:handler("mail")
      assert.are.same({ 25, 5, 86400, false, 120, "mail", "jobs:mail" },
        { e.attempts, e.base, e.cap, e.jitter, e.timeout, e.queue, e.topic })
    end)

    it("fills what is not given from the battery's defaults", function()
      local j = fresh{ queue = "q", attempts = 4, base = 2, cap = 8, jitter = true, timeout = 9 }
      j:register("x", function() end)
      local e = j:handler("x")
      assert.are.same({ 4, 2, 8, true, 9, "q" }, { e.attempts, e.base, e.cap, e.jitter, e.timeout,
        e.queue })
    end)

    local misuse = {
      { "a name that is not a string", { 1, function() end } },
      { "an empty name", { "", function() end } },
      { "a handler that is not a function", { "x", "nope" } },
      { "attempts of 0", { "x", function() end, { attempts = 0 } } },
      { "fractional attempts", { "x", function() end, { attempts = 1.5 } } },
      { "a backoff cap below the base", { "x", function() end, { backoff = { base = 10, cap = 1 } } } },
      { "a duration that does not parse", { "x", function() end, { backoff = { base = "5 parsecs" } } } },
      { "a negative timeout", { "x", function() end, { timeout = -1 } } },
      { "a queue name with a comma", { "x", function() end, { queue = "a,b" } } },
    }
    for _, row in ipairs(misuse) do
      it("raises for " .. row[1], function()
        local j = fresh()
        assert.has_error(function() j:register(unpack(row[2])) end)
      end)
    end
  end)

  describe("dispatch", function()
    it("pushes {name, args} as JSON on the job's queue and returns the id", function()
      local j, q = fresh()
      j:register("mail", function() end, { queue = "mail" })
      local id = assert(j:dispatch("mail", { to = "a@x" }))
      assert.are.equal("number", type(id))
      local msg = q:pop("jobs:mail")
      assert.are.same({ name = "mail", args = { to = "a@x" } }, require("zever.json").decode(msg.payload))
      assert.is_nil(q:pop("jobs:default"))
    end)

    it("takes a queue and a delay (a duration string) per dispatch", function()
      local j, q = fresh()
      assert(j:dispatch("later", nil, { queue = "low", delay = "1h" }))
      assert.are.equal(1, q:len("jobs:low"))
      assert.is_nil(q:pop("jobs:low"))
    end)

    it("accepts a job name this app did not register (the worker may know it)", function()
      local j, q = fresh()
      assert(j:dispatch("elsewhere", 42))
      assert.are.equal(1, q:len("jobs:default"))
    end)

    it("raises for args JSON cannot hold, a bad delay or a bad name", function()
      local j = fresh()
      assert.has_error(function() j:dispatch("x", { f = function() end }) end)
      assert.has_error(function() j:dispatch("x", function() end) end)
      assert.has_error(function() j:dispatch("x", nil, { delay = -1 }) end)
      assert.has_error(function() j:dispatch("x", nil, { delay = "soon" }) end)
      assert.has_error(function() j:dispatch(nil) end)
    end)

    it("returns closed after close", function()
      local j = fresh()
      j:close()
      local id, err = j:dispatch("x")
      assert.is_nil(id)
      assert.are.equal("closed", err.code)
    end)
  end)

  describe("backoff", function()
    -- { attempt, base, cap, expected seconds } without jitter.
    local rows = {
      { 1, 5, 86400, 5 }, { 2, 5, 86400, 10 }, { 3, 5, 86400, 20 }, { 10, 5, 86400, 2560 },
      { 20, 5, 86400, 86400 }, { 1, 10, 10, 10 }, { 4, 0.01, 0.05, 0.05 },
    }
    for _, r in ipairs(rows) do
      it(string.format("waits %gs before retry %d (base %g, cap %g)", r[4], r[1], r[2], r[3]),
        function()
          assert.are.equal(r[4], jobs.backoff(r[1], r[2], r[3], false))
        end)
    end

    it("with jitter, waits between half and all of the delay", function()
      assert.are.equal(10, jobs.backoff(2, 5, 100, true, function() return 1 end))
      assert.are.equal(5, jobs.backoff(2, 5, 100, true, function() return 0 end))
      for _ = 1, 100 do
        local d = jobs.backoff(3, 5, 100, true)
        assert.is_true(d >= 10 and d <= 20)
      end
    end)
  end)
end)

describe("zever.worker", function()
  it("runs a job with its args and acks it", function()
    local j, q = fresh()
    local got
    j:register("add", function(args, job) got = { args.a + args.b, job.name, job.attempt } end)
    j:dispatch("add", { a = 2, b = 3 })
    assert.is_true(run(j, nil, function() return got ~= nil end))
    assert.are.same({ 5, "add", 1 }, got)
    assert.are.equal(0, q:len("jobs:default"))
  end)

  it("retries a failing job after base, then twice base (exponential backoff)", function()
    local j = fresh()
    local at = {}
    j:register("flaky", function(_, job)
      at[#at + 1] = loop.now()
      if job.attempt < 3 then error("not yet") end
    end, { attempts = 5, backoff = { base = 0.1, cap = 1, jitter = false } })
    j:dispatch("flaky")
    local _, w = run(j, nil, function() return #at == 3 end)
    assert.are.equal(3, #at)
    local g1, g2 = at[2] - at[1], at[3] - at[2]
    assert.is_true(g1 >= 0.099 and g1 < 0.2, "first gap " .. g1)
    assert.is_true(g2 >= 0.199 and g2 < 0.35, "second gap " .. g2)
    assert.are.same({ 1, 2, 0 }, { w.stats.done, w.stats.retried, w.stats.dead })
  end)

  it("dead-letters a job whose attempts are used up: a failed_jobs record and the hook", function()
    local j, q = fresh()
    local tries, hooked = 0, nil
    j:register("boom", function() tries = tries + 1; error("kaput") end, { attempts = 2,
      queue = "q1" })
    j:on_dead_letter(function(r) hooked = r end)
    j:dispatch("boom", { user = 7 })
    assert.is_true(run(j, { queues = { "q1" }, poll_max = 0.005 }, function() return hooked end))
    assert.are.equal(2, tries)
    assert.are.same({ "q1", "boom", { user = 7 }, 2 },
      { hooked.queue, hooked.name, hooked.args, hooked.attempts })
    assert.is_truthy(hooked.error:find("kaput", 1, true))
    local rows = assert(j:failed())
    assert.are.equal(1, #rows)
    assert.are.same({ hooked.id, "q1", "boom", { user = 7 }, 2 },
      { rows[1].id, rows[1].queue, rows[1].name, rows[1].args, rows[1].attempts })
    assert.is_true(math.abs(rows[1].failed_at - queue.wall()) < 10)
    assert.are.equal(0, q:len("jobs:q1"))
  end)

  it("dead-letters a job whose name is not registered, at once", function()
    local j = fresh()
    j:dispatch("nobody", { x = 1 })
    local hooked
    j:on_dead_letter(function(r) hooked = r end)
    assert.is_true(run(j, nil, function() return hooked end))
    assert.are.equal("nobody", hooked.name)
    assert.are.equal(1, hooked.attempts)
    assert.is_truthy(hooked.error:find('unknown job "nobody"', 1, true))
  end)

  it("fails a waiting handler at its timeout and retries it", function()
    local j = fresh()
    local starts = 0
    local h = holder()
    finally(h.finish)
    j:register("stuck", function()
      starts = starts + 1
      if starts == 1 then h.hold() end
    end, { timeout = 0.05, attempts = 2, backoff = { base = 0.01, jitter = false } })
    j:dispatch("stuck")
    local _, w = run(j, nil, function() return starts == 2 and #assert(j:failed()) == 0 end)
    assert.are.same({ 1, 1, 1, 0 }, { w.stats.timeouts, w.stats.retried, w.stats.done,
      w.stats.dead })
  end)

  it("records a timeout as the error when the last attempt times out", function()
    local j = fresh()
    local h = holder()
    finally(h.finish)
    j:register("stuck", h.hold, { timeout = 0.05, attempts = 1 })
    j:dispatch("stuck")
    run(j, nil, function() return #assert(j:failed()) == 1 end)
    assert.is_truthy(assert(j:failed())[1].error:find("^timeout"))
  end)

  it("runs up to concurrency handlers at once", function()
    local j = fresh()
    local finished, running, peak = 0, 0, 0
    -- Each handler waits until all 5 run (or 5 s pass): serialised, the peak would be 1.
    j:register("nap", function()
      running = running + 1
      if running > peak then peak = running end
      local deadline = loop.now() + 5
      while peak < 5 and loop.now() < deadline do sched.sleep(0.01) end
      running = running - 1
      finished = finished + 1
    end)
    for _ = 1, 5 do j:dispatch("nap") end
    run(j, { concurrency = 5, poll_max = 0.005 }, function() return finished == 5 end)
    assert.are.equal(5, finished)
    assert.are.equal(5, peak)
  end)

  it("on drain, lets a running job finish within the deadline and claims nothing new", function()
    local j, q = fresh()
    local finished = 0
    j:register("nap", function() sched.sleep(0.1); finished = finished + 1 end)
    j:dispatch("nap")
    local w = worker.new(j, { poll_max = 0.005 })
    w:start()
    testing.run_until(function() return w.nrunning == 1 end)
    j:dispatch("nap")
    local drained = false
    w:drain(2, function() drained = true end)
    assert.is_true(testing.run_until(function() return drained end))
    assert.are.equal(1, finished)
    assert.are.equal(1, q:len("jobs:default"))
  end)

  it("on drain, releases a job still running at the deadline for another worker", function()
    local j, q = fresh()
    local h = holder()
    finally(h.finish)
    j:register("long", h.hold)
    j:dispatch("long")
    local w = worker.new(j, { poll_max = 0.005 })
    w:start()
    testing.run_until(function() return w.nrunning == 1 end)
    local drained = false
    w:drain(0.05, function() drained = true end)
    assert.is_true(testing.run_until(function() return drained end))
    assert.are.equal(1, w.stats.released)
    local msg = q:pop("jobs:default")
    assert.is_truthy(msg)
    assert.are.equal(2, msg.attempt)
  end)

  it("works over the db queue, reclaiming a lease that was never settled", function()
    local j, q = fresh(nil, true)
    local got = {}
    j:register("rec", function(args, job) got[#got + 1] = { args, job.attempt } end)
    j:dispatch("rec", "first")
    j:dispatch("rec", "second")
    assert(q:pop("jobs:default"))   -- a crashed worker's claim: its lease runs out (0.3 s)
    assert.is_true(run(j, nil, function() return #got == 2 end))
    assert.are.same({ { "second", 1 }, { "first", 2 } }, got)
  end)

  it("backs off empty polls 0, 1 ms, 2 ms, 4 ms ... up to poll_max", function()
    local j = fresh()
    local w = worker.new(j, { poll_max = 0.01 })
    local got = {}
    for i = 1, 7 do got[i] = w:poll() end
    assert.are.same({ 0, 0.001, 0.002, 0.004, 0.008, 0.01, 0.01 }, got)
    j:dispatch("x")
    assert.are.equal(0, w:poll())
    assert.are.equal(0, w:poll())
    assert.are.equal(0.001, w:poll())
  end)

  it("allocates nothing on an empty poll", function()
    local j = fresh()
    local w = worker.new(j, { poll_max = 0.01 })
    local function polls(k) for _ = 1, k do w:poll() end end
    local grown = alloc.settled(function() polls(10000) end, { below = 1 })
    assert.is_true(grown < 1, "grew " .. grown .. " KiB")
  end)
end)

describe("failed jobs", function()
  local function with_failures(names)
    local j, q, db = fresh()
    j:register("boom", function() error("kaput") end, { attempts = 1 })
    for _, name in ipairs(names) do j:dispatch("boom", name) end
    run(j, nil, function() return #assert(j:failed()) == #names end)
    return j, q, db
  end

  it("retry(id) dispatches one again and removes its record", function()
    local j, q = with_failures({ "a", "b" })
    local rows = j:failed()
    assert.are.equal(1, j:retry(rows[2].id))
    local left = j:failed()
    assert.are.equal(1, #left)
    assert.are.equal("a", left[1].args)
    local msg = q:pop("jobs:default")
    assert.are.same({ name = "boom", args = "b" }, require("zever.json").decode(msg.payload))
    assert.are.equal(1, msg.attempt)
  end)

  it("retry(\"all\") and forget(\"all\") take every record", function()
    local j, q = with_failures({ "a", "b", "c" })
    assert.are.equal(3, j:retry("all"))
    assert.are.equal(3, q:len("jobs:default"))
    local j2 = with_failures({ "x", "y" })
    assert.are.equal(1, j2:forget(j2:failed()[1].id))
    assert.are.equal(1, j2:forget("all"))
    assert.are.same({}, j2:failed())
  end)

  it("retry and forget of an unknown id do nothing; bad ids raise", function()
    local j = with_failures({ "a" })
    assert.are.equal(0, j:retry(999))
    assert.are.equal(0, j:forget(999))
    assert.has_error(function() j:retry("x") end)
    assert.has_error(function() j:forget(-1) end)
  end)
end)
