-- zever.idempotency with the redis adapter, against a real redis-server on a free loopback port:
-- the conformance suite (the rows that move a fake clock are pending: the server keeps time),
-- expiry on the server's clock, the one-round-trip promise of begin and complete (counted twice:
-- INFO commandstats deltas, and MONITOR, which tells a client's commands from a script's),
-- connection loss, and the container.

local idempotency = require "zever.idempotency"
local ridem = require "adapters.idempotency.redis"
local redis = require "zever.redis"
local sched = require "zever.sched"
local sys = require "zever.sys"

local fs = require "spec.support.files"
local process = require "spec.support.process"
local slurp = fs.text

describe("adapters.idempotency.redis #redis", function()
  local srv = require("spec.support.redis_server").fixture()

  require("spec.conformance.idempotency")("redis", function(opts)
    return idempotency.wrap(assert(ridem.new{ url = srv.url, prefix = srv:prefix("conf") }),
      { ttl = opts.ttl, pending_ttl = opts.pending_ttl })
  end, { real_clock = true })

  local function open(opts)
    opts = opts or {}
    return idempotency.wrap(assert(ridem.new{ url = srv.url, prefix = srv:prefix("idem"),
      timeout = opts.timeout }), opts)
  end

  -- Polls begin until it reserves the key (the server expired it) or the deadline passes.
  local function begin_after_expiry(store, key, fp, seconds)
    local deadline = sys.now() + seconds
    while sys.now() < deadline do
      local r, err = store:begin(key, { fingerprint = fp })
      if r and not r.replay then return r end
      -- While the old reservation lives, another fingerprint is a mismatch.
      if not r and err.code ~= "in_progress" and err.code ~= "key_mismatch" then
        return nil, err
      end
      sched.sleep(0.02)
    end
    return nil, "the key did not expire by the deadline"
  end

  it("lets a pending key be begun again once pending_ttl has passed on the server", function()
    local store = open{ pending_ttl = 0.2 }
    local first = assert(store:begin("p", { fingerprint = "a" }))
    local _, err = store:begin("p", { fingerprint = "a" })
    assert.are.equal("in_progress", err.code)
    local t0 = sys.now()
    local again = assert(begin_after_expiry(store, "p", "b", 5))
    assert.is_true(sys.now() - t0 > 0.1)
    assert.are_not.equal(first.token, again.token)
    -- The old holder's token can neither complete nor release the new reservation.
    local ok, cerr = store:complete("p", "stale", first.token)
    assert.is_nil(ok)
    assert.are.equal("not_found", cerr.code)
    assert.is_true(store:forget("p", first.token))
    local _, perr = store:begin("p", { fingerprint = "b" })
    assert.are.equal("in_progress", perr.code)
    assert.is_true(store:complete("p", "fresh", again.token))
    assert.are.equal("fresh", assert(store:begin("p", { fingerprint = "b" })).result)
    store:close()
  end)

  it("expires a completed result ttl after complete", function()
    local store = open{ ttl = 1 }
    local r = assert(store:begin("c", { fingerprint = "a" }))
    assert.is_true(store:complete("c", { n = 1 }, r.token))
    assert.are.same({ n = 1 }, assert(store:begin("c", { fingerprint = "a" })).result)
    local c = assert(redis.connect(srv.url, { sync = true }))
    local pttl = c:call("PTTL", store.impl.prefix .. "k:c")
    assert.is_true(pttl > 0 and pttl <= 1000, "pttl " .. tostring(pttl))
    c:close()
    local deadline, again = sys.now() + 5, nil
    while sys.now() < deadline do
      again = assert(store:begin("c", { fingerprint = "a" }))
      if not again.replay then break end
      sched.sleep(0.02)
    end
    assert.is_false(again.replay)
    store:close()
  end)

  it("hands out tokens that are unique across clients of the server", function()
    local prefix = srv:prefix("tok")
    local other = assert(redis.connect(srv.url))
    local a = idempotency.wrap(assert(ridem.new{ url = srv.url, prefix = prefix }))
    local b = idempotency.wrap(assert(ridem.new{ client = other, prefix = prefix }))
    local seen = {}
    for i = 1, 50 do
      local store = i % 2 == 0 and a or b
      local r = assert(store:begin("k" .. i))
      assert.is_nil(seen[r.token])
      seen[r.token] = true
    end
    local _, err = b:begin("k2")
    assert.are.equal("in_progress", err.code)
    a:close()
    b:close()
    other:close()
  end)

  local commandstats = require("spec.support.redis_server").commandstats

  -- Runs op n times and returns the per-command deltas of INFO commandstats, without INFO.
  local function deltas(c, n, op)
    local before = commandstats(c)
    for i = 1, n do op(i) end
    local after = commandstats(c)
    local d = {}
    for name, calls in pairs(after) do
      local x = calls - (before[name] or 0)
      if x ~= 0 and name ~= "info" then d[name] = x end
    end
    return d
  end

  -- true when every command in d other than evalsha is one the script source runs itself.
  local function only_script_commands(d, source)
    for name in pairs(d) do
      if name ~= "evalsha" and not source:upper():find("'" .. name:upper() .. "'", 1, true) then
        return false, name
      end
    end
    return true
  end

  it("costs one EVALSHA per begin and per complete (INFO commandstats)", function()
    local store = open()
    local c = assert(redis.connect(srv.url, { sync = true }))
    -- Warm-up: the first call of each script loads it (SCRIPT LOAD) once per client.
    local w = assert(store:begin("warm"))
    assert.is_true(store:complete("warm", "x", w.token))
    local n, tokens = 20, {}
    local d = deltas(c, n, function(i)
      tokens[i] = assert(store:begin("b" .. i, { fingerprint = "f" })).token
    end)
    assert.are.equal(n, d.evalsha)
    assert.is_nil(d["script|load"])
    assert.is_true(only_script_commands(d, ridem.BEGIN))
    -- The script's own commands are counted too: a reservation is HMGET, INCR, HSET, PEXPIRE.
    assert.are.same({ evalsha = n, hmget = n, incr = n, hset = n, pexpire = n }, d)

    d = deltas(c, n, function(i) assert(store:complete("b" .. i, "done", tokens[i])) end)
    assert.are.equal(n, d.evalsha)
    assert.is_true(only_script_commands(d, ridem.COMPLETE))
    assert.are.same({ evalsha = n, hmget = n, hset = n, pexpire = n }, d)

    -- A replay is one EVALSHA whose script only reads.
    d = deltas(c, n, function(i)
      assert.is_true(assert(store:begin("b" .. i, { fingerprint = "f" })).replay)
    end)
    assert.are.same({ evalsha = n, hmget = n }, d)
    c:close()
    store:close()
  end)

  it("sends one command per begin and per complete from the client (MONITOR)", function()
    local store = open()
    local c = assert(redis.connect(srv.url, { sync = true }))
    local w = assert(store:begin("warm"))
    assert.is_true(store:complete("warm", "x", w.token))
    local out = os.tmpname()
    local p = assert(io.popen(("redis-cli -p %d monitor > %s 2>&1 & echo $!"):format(srv.port, out)))
    local pid = tonumber(p:read("*l"))
    p:close()
    assert.is_number(pid)
    local function wait_for(text)
      local deadline = sys.now() + 5
      while sys.now() < deadline do
        if slurp(out):find(text, 1, true) then return true end
        process.sleep(0.02)
      end
      return false
    end
    local ok, err = pcall(function()
      assert.is_true(wait_for("OK"))
      c:call("ECHO", "monitor-start")
      assert.is_true(wait_for("monitor-start"))
      local r = assert(store:begin("m", { fingerprint = "f" }))
      c:call("ECHO", "monitor-middle")
      assert.is_true(store:complete("m", { status = 201 }, r.token))
      c:call("ECHO", "monitor-end")
      assert.is_true(wait_for("monitor-end"))
    end)
    os.execute("kill " .. pid)
    local text = slurp(out)
    os.remove(out)
    assert(ok, err)
    -- The client's lines (not "[0 lua]") between the markers, per phase.
    local phase, client, script = nil, { begin = {}, complete = {} }, { begin = 0, complete = 0 }
    for line in text:gmatch("[^\n]+") do
      if line:find('"monitor-start"', 1, true) then
        phase = "begin"
      elseif line:find('"monitor-middle"', 1, true) then
        phase = "complete"
      elseif line:find('"monitor-end"', 1, true) then
        phase = nil
      elseif phase then
        if line:find("%[%d+ lua%]") then
          script[phase] = script[phase] + 1
        else
          local list = client[phase]
          list[#list + 1] = line:match('%] "(%w+)"'):lower()
        end
      end
    end
    assert.are.same({ begin = { "evalsha" }, complete = { "evalsha" } }, client)
    assert.is_true(script.begin >= 1 and script.complete >= 1)
    c:close()
    store:close()
  end)

  it("backs the Idempotency-Key middleware: replays from redis, 503 while it is down", function()
    local zever = require "zever"
    local testing = require "zever.testing"
    local middleware = require "zever.middleware.idempotency"
    local store = open{ timeout = 1 }
    local app = zever.app()
    app:use(middleware{ store = store })
    local calls = 0
    app:post("/charges", function(_, res)
      calls = calls + 1
      return res:status(201):json({ charge = calls })
    end)
    local function post(key)
      return testing.request(app, "POST", "/charges", { headers = { ["Idempotency-Key"] = key },
        body = "amount=10" })
    end
    local first = post("mw-1")
    assert.are.equal(201, first.status)
    local again = post("mw-1")
    assert.are.equal(first.body, again.body)
    assert.are.equal("true", again.headers["idempotent-replayed"])
    assert.are.equal(1, calls)
    srv:kill()
    local down = post("mw-2")
    assert.are.equal(503, down.status)
    assert.are.equal(1, calls)
    assert(srv:launch())
    store:close()
  end)

  it("answers unavailable while the server is down and recovers after a restart", function()
    local store = open{ timeout = 1 }
    local r = assert(store:begin("k", { fingerprint = "a" }))
    srv:kill()
    for _, call in ipairs({
      function() return store:begin("k2", { fingerprint = "a" }) end,
      function() return store:complete("k", "r", r.token) end,
      function() return store:forget("k") end,
    }) do
      local ok, err = call()
      assert.is_nil(ok)
      assert.are.equal("unavailable", err.code)
      assert.is_truthy(tostring(err):find("unavailable", 1, true))
    end
    assert(srv:launch())
    local deadline, again = sys.now() + 10, nil
    while sys.now() < deadline do
      again = store:begin("k", { fingerprint = "a" })
      if again then break end
      sched.sleep(0.05)   -- runs the loop: the client's reconnect timer fires there
    end
    -- The restarted server is empty: the key is free again.
    assert.is_table(again)
    assert.is_false(again.replay)
    store:close()
  end)

  it("is resolved by the container from the config, with idempotency.url over redis.url", function()
    local config = require "zever.config"
    local container = require "zever.container"
    local cfg = assert(config.load{ dir = "/nonexistent-zever-dir", env = {
      IDEMPOTENCY_ADAPTER = "redis", REDIS_URL = "redis://127.0.0.1:1/0",
      IDEMPOTENCY_URL = srv.url, IDEMPOTENCY_TTL = "90s" } })
    local c = container.new(cfg)
    local store = assert(c:get("idempotency"))
    assert.are.equal(90, store.ttl)
    local key = srv:prefix("container")
    local r, err = store:begin(key)
    assert.is_table(r, tostring(err))
    assert.is_true(store:complete(key, "ok", r.token))
    assert.are.equal("ok", assert(store:begin(key)).result)
    assert.is_true(c:close())
    local ok, cerr = store:begin(key)
    assert.is_nil(ok)
    assert.are.equal("closed", cerr.code)
  end)
end)
