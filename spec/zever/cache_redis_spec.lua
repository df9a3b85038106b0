-- zever.cache with the redis adapter (#redis): the conformance suite against a real
-- redis-server on a free loopback port (expiry is Redis' own, so the suite polls a deadline),
-- then what only the redis adapter promises: keys under a prefix with a type tag, TTLs as PX,
-- incr keeping the TTL, and code unavailable while the server is down, then recovery.

local cache = require "zever.cache"
local rc = require "adapters.cache.redis"
local redis = require "zever.redis"
local sched = require "zever.sched"
local redis_server = require "spec.support.redis_server"

describe("adapters.cache.redis #redis", function()
  local srv, raw = redis_server.fixture(), nil

  setup(function()
    raw = assert(redis.connect(srv.url, { sync = true }))
  end)

  -- Every conformance cache gets its own prefix: fresh and empty.
  require("spec.conformance.cache")("redis", function()
    return cache.wrap(assert(rc.new{ url = srv.url, prefix = srv:prefix("conf") }))
  end, { real_clock = true })

  teardown(function()
    raw:close()
  end)

  it("stores each value under the prefix with a one-byte type tag", function()
    local prefix = srv:prefix("tags")
    local c = cache.wrap(assert(rc.new{ url = srv.url, prefix = prefix }))
    local rows = {
      { "s", "hello", "shello" },
      { "n", 42, "n42" },
      { "f", -1.5, "n-1.5" },
      { "t", true, "b1" },
      { "j", { a = 1 }, 'j{"a":1}' },
    }
    for _, row in ipairs(rows) do
      assert.is_true(c:set(row[1], row[2]))
      assert.are.equal(row[3], raw:call("GET", prefix .. row[1]))
    end
    assert.are.equal(0, raw:call("EXISTS", "s", "n", "f", "t", "j"))   -- nothing outside it
    c:close()
  end)

  it("sets the ttl as a PX expiry and none for ttl 0", function()
    local prefix = srv:prefix("ttl")
    local c = cache.wrap(assert(rc.new{ url = srv.url, prefix = prefix }))
    c:set("a", "v", 30)
    c:set("b", "v", 0)
    local pttl = raw:call("PTTL", prefix .. "a")
    assert.is_true(pttl > 29000 and pttl <= 30000)
    assert.are.equal(-1, raw:call("PTTL", prefix .. "b"))
    c:close()
  end)

  it("keeps the ttl of an existing key on incr and sets it when incr creates the key", function()
    local prefix = srv:prefix("incr")
    local c = cache.wrap(assert(rc.new{ url = srv.url, prefix = prefix }))
    assert.are.equal(1, c:incr("n", 1, 30))
    local first = raw:call("PTTL", prefix .. "n")
    assert.is_true(first > 29000)
    assert.are.equal(3, c:incr("n", 2, 300))
    assert.is_true(raw:call("PTTL", prefix .. "n") <= first)
    assert.are.equal(0.1, c:incr("f", 0.1))
    assert.are.equal(0.1 + 0.2, c:incr("f", 0.2))   -- exact doubles, as LuaJIT adds them
    c:close()
  end)

  it("counts exactly when two processes increment the same key", function()
    local process = require "spec.support.process"
    local sys = require "zever.sys"
    local prefix, n = srv:prefix("procs"), 1000
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[
local rc = require "adapters.cache.redis"
local c = require("zever.cache").wrap(assert(rc.new{ url = arg[1], prefix = arg[2] }))
for _ = 1, tonumber(arg[3]) do assert(c:incr("counter")) end
c:close()
]])
    f:close()
    local cmd = table.concat({ process.quote(sys.exe()), "run", process.quote(script),
      process.quote(srv.url), process.quote(prefix), tostring(n) }, " ")
    -- Both run at once; the exit code is the first failure's.
    local r = process.run(cmd .. " & p=$!; " .. cmd .. "; b=$?; wait $p; a=$?; exit $((a | b))")
    os.remove(script)
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("", r.stderr)
    local c = cache.wrap(assert(rc.new{ url = srv.url, prefix = prefix }))
    assert.are.equal(2 * n, c:get("counter"))
    c:close()
  end)

  it("treats a value another program wrote without a tag as absent and refuses incr on it", function()
    local prefix = srv:prefix("foreign")
    local c = cache.wrap(assert(rc.new{ url = srv.url, prefix = prefix }))
    raw:call("SET", prefix .. "x", "12")
    assert.is_nil(c:get("x"))
    local n, err = c:incr("x")
    assert.is_nil(n)
    assert.are.equal("invalid", err.code)
    raw:call("RPUSH", prefix .. "l", "a")
    local v, terr = c:get("l")
    assert.is_nil(v)
    assert.are.equal("invalid", terr.code)
    c:close()
  end)

  it("returns code unavailable while the server is down and works again after a restart", function()
    local client = assert(redis.connect(srv.url, { backoff_min = 0.02, backoff_max = 0.2 }))
    local c = cache.wrap(assert(rc.new{ client = client, prefix = srv:prefix("loss") }))
    assert.is_true(c:set("k", "v"))
    srv:kill()
    local calls = {
      function() return c:get("k") end,
      function() return c:set("k", "v") end,
      function() return c:add("k", "v") end,
      function() return c:incr("n") end,
      function() return c:exists("k") end,
      function() return c:delete("k") end,
    }
    for i, call in ipairs(calls) do
      local v, err = call()
      assert.is_nil(v, "call " .. i)
      assert.are.equal("unavailable", err.code, "call " .. i)
    end
    assert(srv:restart())
    local ok = false
    for _ = 1, 500 do
      if c:set("k", "back") == true then ok = true; break end
      sched.sleep(0.01)
    end
    assert.is_true(ok)
    assert.are.equal("back", c:get("k"))
    assert.are.equal(1, c:incr("n"))           -- the script is loaded again (NOSCRIPT)
    c:close()
    client:close()
    raw:close()
    raw = assert(redis.connect(srv.url, { sync = true }))
  end)

  it("runs its calls from a coroutine, yielding until the reply", function()
    local c = cache.wrap(assert(rc.new{ url = srv.url, prefix = srv:prefix("co") }))
    local got, done = nil, false
    sched.spawn(function()
      c:set("k", { n = 1 })
      got = c:get("k")
      done = true
    end)
    assert.is_true(require("zever.testing").run_until(function() return done end, 10))
    assert.are.same({ n = 1 }, got)
    c:close()
  end)

  it("resolves app.cache from the config with the default prefix", function()
    local config = require "zever.config"
    local container = require "zever.container"
    local cfg = assert(config.load{ dir = "/nonexistent-zever-dir", env = {
      CACHE_ADAPTER = "redis", REDIS_URL = srv.url } })
    local ctr = container.new(cfg)
    local c = assert(ctr:get("cache"))
    local key = srv:prefix("container")
    assert.is_true(c:set(key, { a = 1 }))
    assert.are.same({ a = 1 }, c:get(key))
    assert.are.equal('j{"a":1}', raw:call("GET", rc.PREFIX .. key))
    assert.is_true(ctr:close())
    local v, err = c:get(key)
    assert.is_nil(v)
    assert.are.equal("closed", err.code)
  end)
end)
