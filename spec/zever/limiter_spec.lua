-- zever.limiter with the memory adapter: the conformance suite, then what only the memory
-- adapter promises (a process-wide table shared by threads, an exact bound, idle sweeps), the
-- container and the rate-limit middleware.

local limiter = require "zever.limiter"
local memory = require "adapters.limiter.memory"
local threads = require "zever.threads"

local fs = require "spec.support.files"
local unique, slurp = fs.unique, fs.slurp

require("spec.conformance.limiter")("memory", function(opts)
  return limiter.wrap(memory.new{ name = unique("conf"), rate = opts.rate, burst = opts.burst,
    clock = opts.clock })
end)

describe("adapters.limiter.memory", function()
  it("shares one table between two opens of the same name", function()
    local name = unique("share")
    local a = limiter.wrap(memory.new{ name = name, rate = 0, burst = 2 })
    local b = limiter.wrap(memory.new{ name = name, rate = 0, burst = 2 })
    assert.is_true((a:allow("k")))
    assert.is_true((b:allow("k")))
    assert.is_false((a:allow("k")))
    a:close()
    b:close()
  end)

  it("raises when a name is opened again with other options", function()
    local name = unique("conflict")
    local a = memory.new{ name = name, rate = 1, burst = 2 }
    assert.has_error(function() memory.new{ name = name, rate = 1, burst = 3 } end,
      nil)
    a:close()
  end)

  it("counts exactly when two threads hit the same key", function()
    local name = unique("threads")
    -- The spec holds the table open so both workers see the same one.
    local keep = memory.new{ name = name, rate = 0, burst = 1000, max_keys = 10, idle_ttl = 0 }
    local dir = os.tmpname()
    local pool = threads.start(1, "spec.fixtures.limiter_worker", name .. "|800|" .. dir .. ".1")
    local pool2 = threads.start(1, "spec.fixtures.limiter_worker", name .. "|800|" .. dir .. ".2")
    pool:join()
    pool2:join()
    local total = tonumber(slurp(dir .. ".1")) + tonumber(slurp(dir .. ".2"))
    assert.are.equal(1000, total)
    local allowed, remaining = keep:allow("shared", 1)
    assert.is_false(allowed)
    assert.are.equal(0, remaining)
    keep:close()
    os.remove(dir)
    os.remove(dir .. ".1")
    os.remove(dir .. ".2")
  end)

  it("keeps max_keys exactly under churn, evicting the least recently used", function()
    local t = 1
    local lim = memory.new{ name = unique("churn"), rate = 1, burst = 5, max_keys = 100,
      idle_ttl = 0, clock = function() return t end }
    for i = 1, 5000 do
      t = t + 0.001
      lim:allow("key:" .. i, 1)
      if i % 997 == 0 then lim:allow("hot", 1) end
      assert.is_true(lim:stats().entries <= 100)
    end
    local st = lim:stats()
    assert.are.equal(100, st.entries)
    assert.are.equal(5000 + 5 - 100, st.evictions)
    lim:close()
  end)

  it("evicts an idle key before a busy one", function()
    local t = 1
    local lim = limiter.wrap(memory.new{ name = unique("lru"), rate = 0, burst = 3, max_keys = 2,
      idle_ttl = 0, clock = function() return t end })
    lim:allow("old", 1)
    t = t + 1
    lim:allow("busy", 1)
    t = t + 1
    lim:allow("old", 1)    -- now "busy" is the least recently used
    t = t + 1
    lim:allow("new", 1)
    local _, remaining = lim:allow("old", 0)
    assert.are.equal(1, remaining)   -- "old" kept its state
    local _, r2 = lim:allow("busy", 0)
    assert.are.equal(3, r2)          -- "busy" was evicted: a fresh, full bucket
    lim:close()
  end)

  it("sweeps idle keys with bounded work and says what remains", function()
    local t = 1
    local lim = memory.new{ name = unique("sweep"), rate = 100, burst = 1, max_keys = 1000,
      idle_ttl = 10, clock = function() return t end }
    for i = 1, 300 do lim:allow("k" .. i, 1) end
    assert.are.equal(300, lim:stats().entries)
    local removed, more = lim:sweep(64)
    assert.are.equal(0, removed)          -- nothing is idle yet
    assert.is_false(more)
    t = t + 11
    removed, more = lim:sweep(10)
    assert.is_true(removed <= 10)
    assert.is_true(more)
    local total = removed
    for _ = 1, 1000 do
      if not more then break end
      removed, more = lim:sweep(10)
      total = total + removed
    end
    assert.are.equal(300, total)
    assert.are.equal(0, lim:stats().entries)
    lim:close()
  end)

  it("reaches the core through the FFI", function()
    assert.is_true(memory.ffi)
  end)
end)

describe("app.limiter", function()
  it("resolves the memory limiter from the config", function()
    local config = require "zever.config"
    local container = require "zever.container"
    local cfg = assert(config.load{ dir = "/nonexistent-zever-dir", env = {
      LIMITER_RATE = "1", LIMITER_BURST = "2" } })
    local c = container.new(cfg)
    local lim = assert(c:get("limiter"))
    assert.are.equal(2, lim.burst)
    local key = unique("container")
    assert.is_true((lim:allow(key)))
    assert.is_true((lim:allow(key)))
    assert.is_false((lim:allow(key)))
    assert.is_true(c:close())
    local ok, err = lim:allow(key)
    assert.is_nil(ok)
    assert.are.equal("closed", err.code)
  end)
end)

describe("zever.middleware.rate_limit", function()
  local zever = require "zever"
  local testing = require "zever.testing"
  local rate_limit = require "zever.middleware.rate_limit"

  local function app_with(opts)
    local app = zever.app()
    app:use(rate_limit(opts))
    app:get("/", function() return "ok" end)
    return app
  end

  it("lets requests through with RateLimit headers while tokens remain", function()
    local app = app_with{ key = function(req) return req:header("x-user") end, rate = 1,
      burst = 2, name = unique("mw") }
    local res = testing.request(app, "GET", "/", { headers = { ["x-user"] = "u1" } })
    assert.are.equal(200, res.status)
    assert.are.equal("ok", res.body)
    assert.are.equal("2", res.headers["ratelimit-limit"])
    assert.are.equal("1", res.headers["ratelimit-remaining"])
    assert.are.equal("1", res.headers["ratelimit-reset"])
  end)

  it("answers 429 with Retry-After once the bucket is empty", function()
    local app = app_with{ key = function(req) return req:header("x-user") end, rate = 0.5,
      burst = 1, name = unique("mw") }
    assert.are.equal(200, testing.request(app, "GET", "/", { headers = { ["x-user"] = "u" } }).status)
    local res = testing.request(app, "GET", "/", { headers = { ["x-user"] = "u" } })
    assert.are.equal(429, res.status)
    assert.are.same({ error = "rate_limited" }, res:json())
    local retry = tonumber(res.headers["retry-after"])
    assert.is_true(retry >= 1 and retry <= 2)
    assert.are.equal("1", res.headers["ratelimit-limit"])
    assert.are.equal("0", res.headers["ratelimit-remaining"])
    assert.are.equal(tostring(retry), res.headers["ratelimit-reset"])
    -- another key is not limited
    assert.are.equal(200, testing.request(app, "GET", "/", { headers = { ["x-user"] = "v" } }).status)
  end)

  it("does not limit a request whose key is nil", function()
    local app = app_with{ key = function() return nil end, rate = 0, burst = 1, name = unique("mw") }
    for _ = 1, 3 do assert.are.equal(200, testing.request(app, "GET", "/").status) end
  end)

  it("answers 400 for a key over 256 bytes", function()
    local app = app_with{ key = function(req) return req:header("x-user") end, rate = 1,
      burst = 1, name = unique("mw") }
    local res = testing.request(app, "GET", "/", { headers = { ["x-user"] = ("x"):rep(300) } })
    assert.are.equal(400, res.status)
  end)

  it("uses a limiter it is given, resolved on the first request", function()
    local lim = limiter.new{ name = unique("given"), rate = 0, burst = 1 }
    local app = app_with{ key = function() return "k" end, limiter = function() return lim end }
    assert.are.equal(200, testing.request(app, "GET", "/").status)
    assert.are.equal(429, testing.request(app, "GET", "/").status)
    lim:close()
  end)

  it("raises on missing options", function()
    assert.has_error(function() rate_limit{ rate = 1, burst = 1 } end)
    assert.has_error(function() rate_limit{ key = function() end } end)
  end)
end)
