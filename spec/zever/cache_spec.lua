-- zever.cache with the memory adapter: the conformance suite, then what only the memory adapter
-- promises (a process-wide table shared by threads, a byte budget kept by LRU eviction, bounded
-- expiry sweeps) and the container.

local cache = require "zever.cache"
local memory = require "adapters.cache.memory"
local threads = require "zever.threads"

local fs = require "spec.support.files"
local unique, slurp = fs.unique, fs.slurp

require("spec.conformance.cache")("memory", function(opts)
  return cache.new{ name = unique("conf"), max_bytes = 1024 * 1024, clock = opts.clock }
end)

describe("adapters.cache.memory", function()
  local OVERHEAD = require("zever.cache_core").OVERHEAD

  it("shares one table between two opens of the same name", function()
    local name = unique("share")
    local a = cache.new{ name = name, max_bytes = 4096 }
    local b = cache.new{ name = name, max_bytes = 4096 }
    a:set("k", "from a")
    assert.are.equal("from a", b:get("k"))
    a:close()
    assert.are.equal("from a", b:get("k"))
    b:close()
  end)

  it("raises when a name is opened again with another budget", function()
    local name = unique("conflict")
    local a = cache.new{ name = name, max_bytes = 4096 }
    assert.has_error(function() cache.new{ name = name, max_bytes = 8192 } end)
    a:close()
  end)

  it("counts exactly when two threads increment the same key", function()
    local name = unique("threads")
    local keep = cache.new{ name = name, max_bytes = 1024 * 1024 }
    local file = os.tmpname()
    local p1 = threads.start(1, "spec.fixtures.cache_worker", name .. "|20000|" .. file .. ".1")
    local p2 = threads.start(1, "spec.fixtures.cache_worker", name .. "|20000|" .. file .. ".2")
    p1:join()
    p2:join()
    assert.are.equal("done", slurp(file .. ".1"))
    assert.are.equal("done", slurp(file .. ".2"))
    assert.are.equal(40000, keep:get("counter"))
    assert.are.equal(1, keep:get("w1"))
    keep:close()
    os.remove(file)
    os.remove(file .. ".1")
    os.remove(file .. ".2")
  end)

  it("evicts the least recently used entry to stay within the byte budget", function()
    local t = 1
    local value = ("v"):rep(100)
    local each = OVERHEAD + 2 + #value           -- keys are two bytes
    local c = cache.new{ name = unique("lru"), max_bytes = each * 3, clock = function() return t end }
    local impl = c.impl
    for _, k in ipairs({ "k1", "k2", "k3" }) do
      t = t + 1
      c:set(k, value)
    end
    t = t + 1
    assert.are.equal(value, c:get("k1"))      -- k2 is now the least recently used
    t = t + 1
    assert.is_true(c:set("k4", value))
    assert.is_nil(c:get("k2"))
    assert.are.equal(value, c:get("k1"))
    assert.are.equal(value, c:get("k3"))
    assert.are.equal(value, c:get("k4"))
    local st = impl:stats()
    assert.are.equal(3, st.entries)
    assert.is_true(st.bytes <= st.max_bytes)
    assert.are.equal(1, st.evictions)
    c:close()
  end)

  it("never fails for lack of budget: many writes keep the bytes under it", function()
    local c = cache.new{ name = unique("budget"), max_bytes = 8192 }
    for i = 1, 2000 do assert.is_true(c:set("key:" .. i, ("x"):rep(i % 200))) end
    local st = c.impl:stats()
    assert.is_true(st.bytes <= 8192)
    assert.is_true(st.entries > 0)
    assert.are.equal(("x"):rep(2000 % 200), c:get("key:2000"))
    c:close()
  end)

  it("refuses a value larger than the whole budget with code invalid", function()
    local c = cache.new{ name = unique("huge"), max_bytes = 1000 }
    local ok, err = c:set("k", ("x"):rep(2000))
    assert.is_nil(ok)
    assert.are.equal("invalid", err.code)
    c:close()
  end)

  it("sweeps expired entries with bounded work and says what remains", function()
    local t = 1
    local c = cache.new{ name = unique("sweep"), max_bytes = 1024 * 1024,
      clock = function() return t end }
    for i = 1, 500 do c:set("e" .. i, i, 5) end
    c:set("forever", 1)
    t = t + 6
    local removed, more = c.impl:sweep(8)
    assert.is_true(more)
    local total = removed
    for _ = 1, 10000 do
      if not more then break end
      removed, more = c.impl:sweep(8)
      total = total + removed
    end
    -- A full round may start mid-table, so a second round catches what the first skipped.
    removed = c.impl:sweep(100000)
    total = total + removed
    assert.are.equal(500, total)
    assert.are.equal(1, c.impl:stats().entries)
    assert.are.equal(1, c:get("forever"))
    c:close()
  end)

  it("reads values larger than its buffer", function()
    local c = cache.new{ name = unique("big"), max_bytes = 1024 * 1024 }
    local big = ("0123456789"):rep(5000)
    c:set("big", big)
    assert.are.equal(big, c:get("big"))
    assert.are.equal(big, c:get("big"))
    c:close()
  end)

  it("uses ttl_default when set gets no ttl", function()
    local t = 1
    local c = cache.new{ name = unique("ttl"), max_bytes = 4096, ttl_default = 10,
      clock = function() return t end }
    c:set("k", "v")
    t = t + 9
    assert.are.equal("v", c:get("k"))
    t = t + 2
    assert.is_nil(c:get("k"))
    c:close()
  end)

  it("takes a ttl as a duration string, and raises at the caller for one it cannot read", function()
    local t = 1
    local c = cache.new{ name = unique("ttlstr"), max_bytes = 4096, clock = function() return t end }
    c:set("k", "v", "1m30s")
    t = t + 89
    assert.are.equal("v", c:get("k"))
    t = t + 2
    assert.is_nil(c:get("k"))
    local ok, err = pcall(function() c:set("k", "v", "90") end)
    assert.is_false(ok)
    assert.matches('cache_spec%.lua:%d+: cache:set: ttl: invalid duration "90": want units or iso8601', err)
    c:close()
  end)

  it("reaches the core through the FFI", function()
    assert.is_true(memory.ffi)
  end)
end)

describe("app.cache", function()
  it("resolves the memory cache from the config", function()
    local config = require "zever.config"
    local container = require "zever.container"
    local cfg = assert(config.load{ dir = "/nonexistent-zever-dir", env = {
      CACHE_MAX_BYTES = "12345" } })
    local ctr = container.new(cfg)
    local c = assert(ctr:get("cache"))
    local key = unique("container")
    assert.is_true(c:set(key, { a = 1 }))
    assert.are.same({ a = 1 }, c:get(key))
    assert.is_true(ctr:close())
    local v, err = c:get(key)
    assert.is_nil(v)
    assert.are.equal("closed", err.code)
  end)
end)
