-- zever.queue with the redis adapter (#redis), against a real redis-server on a free loopback
-- port: the conformance suite (its fake clock is sent to the scripts in place of TIME), then the
-- server's own clock (deadlines polled, no fake time), leases expiring and reclaimed across two
-- clients, the keys it leaves behind, and connection loss.

local queue = require "zever.queue"
local redis = require "zever.redis"
local rq = require "adapters.queue.redis"
local sched = require "zever.sched"
local sys = require "zever.sys"
local redis_server = require "spec.support.redis_server"

local srv

local function client()
  return assert(redis.connect(srv.url, { backoff_min = 0.02, backoff_max = 0.2 }))
end

-- Calls fn until it returns a truthy value or `seconds` pass; returns that value.
local function eventually(seconds, fn)
  local deadline = sys.now() + seconds
  repeat
    local v = fn()
    if v then return v end
    sched.sleep(0.01)
  until sys.now() > deadline
  return fn()
end

describe("adapters.queue.redis #redis", function()
  local conf_clients = {}

  -- Before the fixture: busted runs teardowns in order, and the fixture's checks that no client
  -- to its server is left open.
  teardown(function()
    for _, c in ipairs(conf_clients) do c:close() end
  end)

  srv = redis_server.fixture()

  require("spec.conformance.queue")("redis", function(opts)
    local c = client()
    conf_clients[#conf_clients + 1] = c
    local impl = rq.new{ client = c, prefix = srv:prefix("queue"), clock = opts.clock }
    return queue.wrap(impl, { visibility_timeout = opts.visibility_timeout })
  end)

  local function open(c, p, vt)
    return queue.wrap(rq.new{ client = c, prefix = p }, { visibility_timeout = vt or 30 })
  end

  it("shows a delayed message when the server's clock reaches its time", function()
    local c = client()
    local q = open(c, srv:prefix("queue"))
    local t0 = sys.now()
    q:push("later", "soon", { delay = 0.3 })
    assert.is_nil(q:pop("later"))
    local m = eventually(3, function() return q:pop("later") end)
    assert.are.equal("soon", m.payload)
    assert.is_true(sys.now() - t0 >= 0.29)
    assert.is_true(math.abs(m.enqueued_at - queue.wall()) < 5)   -- the server's wall clock
    c:close()
  end)

  it("gives an expired lease to another client with attempt + 1, and the old one settles nothing",
    function()
      local c1, c2 = client(), client()
      local p = srv:prefix("queue")
      local q1, q2 = open(c1, p, 0.2), open(c2, p, 0.2)
      q1:push("work", { n = 1 })
      local first = assert(q1:pop("work"))
      assert.is_nil(q2:pop("work"))                  -- leased to client 1
      local t0 = sys.now()
      local again = eventually(3, function() return q2:pop("work") end)
      assert.is_true(sys.now() - t0 >= 0.15)
      assert.are.equal(first.id, again.id)
      assert.are.same({ n = 1 }, again.payload)
      assert.are.equal(2, again.attempt)
      assert.is_false(q1:ack(first))
      assert.is_false(q1:nack(first, true))
      assert.is_true(q1:ack(again))                  -- any client settles by the lease
      assert.are.equal(0, q2:len("work"))
      c1:close()
      c2:close()
    end)

  it("reclaims at most reclaim_batch leases per call and says more remain", function()
    local c = client()
    local p = srv:prefix("queue")
    -- An injected clock: with the server's, a pop that came more than the lease after the
    -- first (a loaded machine) reclaimed the first leases itself, and reclaim found 2, not 3.
    local t = 1000
    local impl = rq.new{ client = c, prefix = p, reclaim_batch = 3, clock = function() return t end }
    local q = queue.wrap(impl, { visibility_timeout = 0.05 })
    for i = 1, 7 do q:push("t", i) end
    local ids = {}
    for i = 1, 7 do ids[i] = q:pop("t").id end
    t = t + 0.1
    local n, more = impl:reclaim("t")
    assert.are.equal(3, n)
    assert.is_true(more)
    assert.are.equal(3, (impl:reclaim("t")))
    n, more = impl:reclaim("t")
    assert.are.equal(1, n)
    assert.is_false(more)
    assert.are.equal(0, (impl:reclaim("t")))
    for i = 1, 7 do
      local m = q:pop("t")
      assert.are.equal(ids[i], m.id)               -- reclaimed oldest lease first
      assert.are.equal(2, m.attempt)
      assert.is_true(q:ack(m))
    end
    c:close()
  end)

  it("leaves no keys but the id counter once every message is settled", function()
    local c = client()
    local p = srv:prefix("queue")
    local q = open(c, p)
    q:push("k", "a", { headers = { h = "v" } })
    q:push("k", "b", { delay = 60 })
    q:push("k", "c")
    local a = q:pop("k")
    assert.is_true(q:ack(a))
    assert.is_true(q:nack(q:pop("k"), false))
    local keys = c:call("KEYS", p .. "*")
    table.sort(keys)
    assert.are.same({ p .. "{k}:delayed", p .. "{k}:msg", p .. "{k}:seq" }, keys)
    c:close()
  end)

  it("runs each operation as one script: 1 EVALSHA per call once loaded", function()
    local c = client()
    local q = open(c, srv:prefix("queue"))
    q:push("s", "warm")
    q:ack(q:pop("s"))
    q:len("s")
    local before = c:call("INFO", "commandstats"):match("cmdstat_evalsha:calls=(%d+)")
    q:push("s", "x")
    local m = q:pop("s")
    q:nack(m, true)
    q:ack(q:pop("s"))
    q:len("s")
    local after = c:call("INFO", "commandstats"):match("cmdstat_evalsha:calls=(%d+)")
    assert.are.equal(6, tonumber(after) - tonumber(before))
    c:close()
  end)

  it("loads its scripts again after SCRIPT FLUSH", function()
    local c = client()
    local q = open(c, srv:prefix("queue"))
    q:push("f", "one")
    assert.are.equal("OK", c:call("SCRIPT", "FLUSH"))
    q:push("f", "two")
    assert.are.equal("one", q:pop("f").payload)
    assert.are.equal(2, q:len("f"))
    c:close()
  end)

  it("returns unavailable while the server is down and works again after a restart", function()
    local c = client()
    local q = open(c, srv:prefix("queue"))
    assert.is_number(q:push("down", "before"))
    local m = assert(q:pop("down"))
    srv:kill()
    local calls = {
      function() return q:push("down", "x") end,
      function() return q:pop("down") end,
      function() return q:ack(m) end,
      function() return q:nack(m, true) end,
      function() return q:len("down") end,
    }
    for _, call in ipairs(calls) do
      local v, err = call()
      assert.is_nil(v)
      assert.are.equal("unavailable", err.code)
      assert.matches("^queue: unavailable: redis: ", tostring(err))
    end
    assert(srv:restart())
    local id = eventually(3, function() return q:push("down", "after") end)
    assert.is_number(id)
    assert.are.equal("after", q:pop("down").payload)   -- the restarted server kept nothing
    c:close()
  end)

  it("carries jobs for zever.worker, whose claims wait on Redis in the poller", function()
    local jobs = require "zever.jobs"
    local worker = require "zever.worker"
    local jq = require "adapters.jobs.queue"
    local testing = require "zever.testing"
    local zdb = require "zever.db"
    local c = client()
    local db = assert(zdb.open("sqlite::memory:"))
    local j = jobs.wrap(jq.new(open(c, srv:prefix("queue"), 5), { db = db }),
      { attempts = 2, base = 0.01, cap = 0.02, jitter = false, timeout = 5 })
    local got, tries = {}, 0
    j:register("add", function(args) got[#got + 1] = args.n end)
    j:register("flaky", function(_, job)
      tries = tries + 1
      if job.attempt == 1 then error("first try fails") end
    end)
    for i = 1, 20 do assert(j:dispatch("add", { n = i })) end
    assert(j:dispatch("flaky"))
    local w = worker.new(j, { poll_max = 0.01 })
    w:start()
    assert.is_true(testing.run_until(function() return #got == 20 and tries == 2 end, 5))
    local drained = false
    w:drain(1, function() drained = true end)
    assert.is_true(testing.run_until(function() return drained end, 5))
    table.sort(got)
    for i = 1, 20 do assert.are.equal(i, got[i]) end
    assert.are.same({ 21, 1, 0 }, { w.stats.done, w.stats.retried, w.stats.dead })
    db:close()
    c:close()
  end)

  it("resolves from the container with queue.url", function()
    local container = require "zever.container"
    local config = require "zever.config"
    local cfg = assert(config.load{ dir = "/nonexistent-zever-dir",
      env = { QUEUE_ADAPTER = "redis", QUEUE_URL = srv.url, REDIS_URL = "redis://127.0.0.1:1/0" } })
    local co = container.new(cfg)
    local q = assert(co:get("queue"))
    local topic = "spec:container:" .. sys.getpid()
    q:push(topic, { hello = "world" })
    local m = q:pop(topic)
    assert.are.equal("world", m.payload.hello)
    assert.is_true(q:ack(m))
    co:close()
  end)
end)
