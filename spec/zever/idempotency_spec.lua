-- zever.idempotency with the memory adapter: the conformance suite, then what only the memory
-- adapter promises (a process-wide table shared by threads, bounds kept by expiry then LRU),
-- the container, and the Idempotency-Key middleware.

local idempotency = require "zever.idempotency"
local memory = require "adapters.idempotency.memory"
local threads = require "zever.threads"

local fs = require "spec.support.files"
local unique, slurp = fs.unique, fs.slurp

require("spec.conformance.idempotency")("memory", function(opts)
  return idempotency.wrap(memory.new{ name = unique("conf"), clock = opts.clock },
    { ttl = opts.ttl, pending_ttl = opts.pending_ttl })
end)

describe("adapters.idempotency.memory", function()
  it("shares one table between two opens of the same name", function()
    local name = unique("share")
    local a = idempotency.wrap(memory.new{ name = name })
    local b = idempotency.wrap(memory.new{ name = name })
    local r = assert(a:begin("k", { fingerprint = "f" }))
    local _, err = b:begin("k", { fingerprint = "f" })
    assert.are.equal("in_progress", err.code)
    assert.is_true(b:complete("k", "done", r.token))
    assert.are.equal("done", assert(a:begin("k", { fingerprint = "f" })).result)
    a:close()
    b:close()
  end)

  it("raises when a name is opened again with other bounds", function()
    local name = unique("conflict")
    local a = memory.new{ name = name, max_keys = 10 }
    assert.has_error(function() memory.new{ name = name, max_keys = 11 } end)
    a:close()
  end)

  it("reserves each key exactly once when two threads begin the same keys", function()
    local name = unique("threads")
    local keep = memory.new{ name = name, max_keys = 100000 }
    local dir = os.tmpname()
    local p1 = threads.start(1, "spec.fixtures.idempotency_worker", name .. "|2000|" .. dir .. ".1")
    local p2 = threads.start(1, "spec.fixtures.idempotency_worker", name .. "|2000|" .. dir .. ".2")
    p1:join()
    p2:join()
    local counts = {}
    for _, f in ipairs({ dir .. ".1", dir .. ".2" }) do
      local r, p, i, o = assert(slurp(f)):match("^(%d+) (%d+) (%d+) (%d+)$")
      counts[#counts + 1] = { tonumber(r), tonumber(p), tonumber(i), tonumber(o) }
    end
    assert.are.equal(2000, counts[1][1] + counts[2][1])
    for _, c in ipairs(counts) do
      assert.are.equal(2000, c[1] + c[2] + c[3])
      assert.are.equal(0, c[4])
    end
    local st = keep:stats()
    assert.are.equal(2000, st.entries)
    assert.are.equal(0, st.pending)
    keep:close()
    for _, f in ipairs({ dir, dir .. ".1", dir .. ".2" }) do os.remove(f) end
  end)

  it("keeps max_keys exactly, evicting the least recently used", function()
    local t = 1
    local store = idempotency.wrap(memory.new{ name = unique("lru"), max_keys = 50,
      clock = function() return t end })
    for i = 1, 200 do
      t = t + 1
      local r = assert(store:begin("k" .. i))
      assert.is_true(store:complete("k" .. i, i, r.token))
      -- keep k1 recently used: it must survive the churn
      t = t + 1
      assert.is_true(assert(store:begin("k1")).replay)
    end
    local st = store.impl:stats()
    assert.are.equal(50, st.entries)
    assert.are.equal(150, st.evictions)
    assert.are.equal(1, assert(store:begin("k1")).result)
    assert.are.equal(200, assert(store:begin("k200")).result)
    assert.is_false(assert(store:begin("k100")).replay)
    store:close()
  end)

  it("evicts an expired entry before a live one that is older", function()
    local t = 1000
    local store = idempotency.wrap(memory.new{ name = unique("expired-first"), max_keys = 3,
      clock = function() return t end })
    local function put(key, ttl)
      local r = assert(store:begin(key, { ttl = ttl }))
      assert.is_true(store:complete(key, key, r.token))
    end
    put("old", 100)           -- the least recently used, still live
    t = 1001
    put("short", 1)           -- expires at 1002
    t = 1001.5
    put("new", 100)
    t = 1003
    put("extra", 100)         -- the table is full: "short" goes, not "old"
    assert.are.equal("old", assert(store:begin("old")).result)
    assert.are.equal("new", assert(store:begin("new")).result)
    assert.is_false(assert(store:begin("short")).replay)
    store:close()
  end)

  it("keeps the byte budget by evicting least recently used results", function()
    local max = 64 * 1024
    local store = idempotency.wrap(memory.new{ name = unique("bytes"), max_bytes = max })
    local body = ("x"):rep(4096)
    for i = 1, 100 do
      local r = assert(store:begin("b" .. i))
      assert.is_true(store:complete("b" .. i, body, r.token))
      assert.is_true(store.impl:stats().bytes <= max)
    end
    assert.are.equal(body, assert(store:begin("b100")).result)
    assert.is_true(store.impl:stats().evictions > 80)
    store:close()
  end)

  it("refuses a result larger than the whole budget and keeps the reservation", function()
    local store = idempotency.wrap(memory.new{ name = unique("huge"), max_bytes = 1024 })
    local r = assert(store:begin("h"))
    local ok, err = store:complete("h", ("x"):rep(2048), r.token)
    assert.is_nil(ok)
    assert.are.equal("invalid", err.code)
    local _, err2 = store:begin("h")
    assert.are.equal("in_progress", err2.code)
    store:close()
  end)

  it("sweeps expired entries with bounded work and says what remains", function()
    local t = 1
    local impl = memory.new{ name = unique("sweep"), clock = function() return t end }
    local store = idempotency.wrap(impl, { ttl = 5, pending_ttl = 5 })
    for i = 1, 300 do assert(store:begin("s" .. i)) end
    t = 10
    local removed, more = impl:sweep(4)
    assert.is_true(more)
    assert.is_true(removed < 300)
    local total = removed
    while more do
      removed, more = impl:sweep(64)
      total = total + removed
    end
    -- A full round starts wherever the last one stopped: finish it once more.
    total = total + impl:sweep(100000)
    assert.are.equal(300, total)
    assert.are.equal(0, impl:stats().entries)
    store:close()
  end)

  it("reaches the core through the FFI", function()
    assert.is_true(memory.ffi)
  end)
end)

describe("app.idempotency", function()
  it("resolves the memory store from the config", function()
    local config = require "zever.config"
    local container = require "zever.container"
    local cfg = assert(config.load{ dir = "/nonexistent-zever-dir", env = {
      IDEMPOTENCY_TTL = "1h", IDEMPOTENCY_PENDING_TTL = "30s", IDEMPOTENCY_MAX_KEYS = "777" } })
    local c = container.new(cfg)
    local store = assert(c:get("idempotency"))
    assert.are.equal(3600, store.ttl)
    assert.are.equal(30, store.pending_ttl)
    assert.are.equal(777, store.impl.max_keys)
    local key = unique("container")
    local r = assert(store:begin(key))
    assert.is_true(store:complete(key, "x", r.token))
    assert.is_true(c:close())
    local ok, err = store:begin(key)
    assert.is_nil(ok)
    assert.are.equal("closed", err.code)
  end)
end)

describe("zever.middleware.idempotency", function()
  local zever = require "zever"
  local testing = require "zever.testing"
  local sched = require "zever.sched"
  local middleware = require "zever.middleware.idempotency"

  local function app_with(opts, handler)
    local app = zever.app()
    opts = opts or {}
    opts.name = opts.name or unique("mw")
    app:use(middleware(opts))
    app.calls = 0
    local h = handler or function(req, res)
      app.calls = app.calls + 1
      res:header("X-Charge", "ch_" .. app.calls)
      return res:status(201):json({ charge = app.calls, body = req.body })
    end
    app:post("/charges", h)
    app:patch("/charges", h)
    app:get("/charges", h)
    app:put("/charges", h)
    return app
  end

  local function post(app, key, body, extra)
    local headers = { ["Idempotency-Key"] = key }
    for k, v in pairs(extra or {}) do headers[k] = v end
    return testing.request(app, "POST", "/charges", { headers = headers, body = body })
  end

  it("stores the first response and replays it byte for byte with Idempotent-Replayed", function()
    local app = app_with()
    local first = post(app, "key-1", "amount=10")
    assert.are.equal(201, first.status)
    assert.is_nil(first.headers["idempotent-replayed"])
    local again = post(app, "key-1", "amount=10")
    assert.are.equal(1, app.calls)
    assert.are.equal(first.status, again.status)
    assert.are.equal(first.body, again.body)
    assert.are.equal("true", again.headers["idempotent-replayed"])
    again.headers["idempotent-replayed"] = nil
    assert.are.same(first.headers, again.headers)
    assert.are.equal("ch_1", again.headers["x-charge"])
  end)

  it("answers 422 for the same key with another body, path or query", function()
    local app = app_with()
    assert.are.equal(201, post(app, "key-2", "amount=10").status)
    local res = post(app, "key-2", "amount=99")
    assert.are.equal(422, res.status)
    assert.are.same({ error = "idempotency_key_mismatch" }, res:json())
    local q = testing.request(app, "POST", "/charges?x=1",
      { headers = { ["Idempotency-Key"] = "key-2" }, body = "amount=10" })
    assert.are.equal(422, q.status)
    local patch = testing.request(app, "PATCH", "/charges",
      { headers = { ["Idempotency-Key"] = "key-2" }, body = "amount=10" })
    assert.are.equal(422, patch.status)
    assert.are.equal(1, app.calls)
  end)

  it("answers 409 to a duplicate that arrives while the first is running", function()
    local app = app_with(nil, function(req, res)
      zever.sleep(0.05)
      return res:status(201):json({ body = req.body })
    end)
    local function source(body)
      return {
        header = function(_, name)
          if name:lower() == "idempotency-key" then return "key-3" end
        end,
        headers = function() return { ["idempotency-key"] = "key-3" } end,
        body = function() return body end,
      }
    end
    local first, second
    sched.spawn(function() first = app:dispatch("POST", "/charges", nil, source("a")) end)
    sched.spawn(function() second = app:dispatch("POST", "/charges", nil, source("a")) end)
    assert.is_nil(first)        -- still sleeping in its handler
    assert.are.equal(409, second.code)
    assert.are.equal('{"error":"idempotency_key_in_use"}', second.body)
    assert.is_true(testing.run_until(function() return first ~= nil end, 5))
    assert.are.equal(201, first.code)
    local third
    sched.spawn(function() third = app:dispatch("POST", "/charges", nil, source("a")) end)
    assert.is_true(testing.run_until(function() return third ~= nil end, 5))
    assert.are.equal(201, third.code)
    assert.are.equal(first.body, third.body)
  end)

  it("leaves GET and PUT alone by default", function()
    local app = app_with()
    for _ = 1, 2 do
      local res = testing.request(app, "GET", "/charges", { headers = { ["Idempotency-Key"] = "g" } })
      assert.are.equal(201, res.status)
      assert.is_nil(res.headers["idempotent-replayed"])
    end
    testing.request(app, "PUT", "/charges", { headers = { ["Idempotency-Key"] = "g" } })
    assert.are.equal(3, app.calls)
  end)

  it("runs every request without the header", function()
    local app = app_with()
    post(app, nil, "a")
    post(app, nil, "a")
    assert.are.equal(2, app.calls)
  end)

  it("covers the methods it is given", function()
    local app = app_with({ methods = { "put" } })
    local put = function()
      return testing.request(app, "PUT", "/charges", { headers = { ["Idempotency-Key"] = "p" } })
    end
    put()
    assert.are.equal("true", put().headers["idempotent-replayed"])
    post(app, "p", "")
    post(app, "p", "")
    assert.are.equal(3, app.calls)
  end)

  it("stores nothing when the handler raises, so a retry runs", function()
    local fail = true
    local app = app_with(nil, function()
      if fail then error("card network down") end
      return 201, { ok = true }
    end)
    local res = post(app, "key-4", "x")
    assert.are.equal(500, res.status)
    fail = false
    local retry = post(app, "key-4", "x")
    assert.are.equal(201, retry.status)
    assert.is_nil(retry.headers["idempotent-replayed"])
    assert.are.equal("true", post(app, "key-4", "x").headers["idempotent-replayed"])
  end)

  it("stores nothing for a 5xx answer", function()
    local status = 503
    local app = app_with(nil, function() return status, { status = status } end)
    assert.are.equal(503, post(app, "key-5", "x").status)
    status = 200
    local res = post(app, "key-5", "x")
    assert.are.equal(200, res.status)
    assert.is_nil(res.headers["idempotent-replayed"])
  end)

  it("stores and replays a 4xx answer", function()
    local app = app_with(nil, function(_, res)
      return res:status(402):json({ error = "card_declined" })
    end)
    assert.are.equal(402, post(app, "key-6", "x").status)
    local res = post(app, "key-6", "x")
    assert.are.equal(402, res.status)
    assert.are.equal("true", res.headers["idempotent-replayed"])
  end)

  it("answers 400 for an empty key or one over 256 bytes", function()
    local app = app_with()
    for _, key in ipairs({ "", ("k"):rep(257) }) do
      local res = post(app, key, "x")
      assert.are.equal(400, res.status)
      assert.are.same({ error = "invalid_idempotency_key" }, res:json())
    end
    assert.are.equal(201, post(app, ("k"):rep(256), "x").status)
    assert.are.equal(1, app.calls)
  end)

  it("keeps keys of different scopes apart", function()
    local app = app_with({ scope = function(req) return req:header("x-user") end })
    post(app, "same", "x", { ["x-user"] = "alice" })
    post(app, "same", "y", { ["x-user"] = "bob" })
    assert.are.equal(2, app.calls)
    assert.are.equal("true", post(app, "same", "y", { ["x-user"] = "bob" }).headers["idempotent-replayed"])
  end)

  it("uses a store it is given, resolved on the first request, and fails closed", function()
    local store = idempotency.new{ name = unique("given") }
    local resolved = 0
    local app = app_with({ store = function() resolved = resolved + 1; return store end })
    assert.are.equal(0, resolved)
    post(app, "key-7", "x")
    post(app, "key-7", "x")
    assert.are.equal(1, resolved)
    assert.is_true(assert(store:begin("key-7", { fingerprint = "other" }) == nil))
    store:close()
    local res = post(app, "key-8", "x")
    assert.are.equal(503, res.status)
    assert.are.same({ error = "idempotency_unavailable" }, res:json())
    assert.are.equal(1, app.calls)
  end)

  it("round-trips responses through its encoding", function()
    -- { name, response }
    local rows = {
      { "a JSON answer", { code = 201, ctype = "application/json", headers = { "X-A", "1" },
        body = '{"a":1}' } },
      { "no content type and no body", { code = 204, headers = {}, body = nil } },
      { "binary body and colons", { code = 200, ctype = "a:b", headers = { "X:Y", "1:2", "Z", "" },
        body = "\0\1:\255\n12:" } },
    }
    for _, row in ipairs(rows) do
      local f = assert(middleware.decode(middleware.encode(row[2])), row[1])
      assert.are.equal(tostring(row[2].code), f[1], row[1])
      assert.are.equal(row[2].ctype or "", f[2], row[1])
      assert.are.equal(row[2].body or "", f[3], row[1])
      for i, v in ipairs(row[2].headers) do assert.are.equal(v, f[3 + i], row[1]) end
    end
    assert.is_nil(middleware.decode("5:abc"))
    assert.is_nil(middleware.decode("x:abc"))
  end)

  it("raises on bad options", function()
    assert.has_error(function() middleware{ header = 1 } end)
    assert.has_error(function() middleware{ methods = { 1 } } end)
    assert.has_error(function() middleware{ scope = "user" } end)
    assert.has_error(function() middleware{ ttl = 0 } end)
    assert.has_error(function() middleware{ store = "memory" } end)
  end)
end)
