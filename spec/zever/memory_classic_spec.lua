-- The memory adapters of cache, limiter and idempotency have two paths: LuaJIT's FFI into the
-- core (what the host exports, and what the other specs run) and the classic binding (a host
-- without the exports). This file runs each battery's conformance suite on the classic path,
-- so the fallback is tested as much as the fast path.

local cache = require "zever.cache"
local limiter = require "zever.limiter"
local idempotency = require "zever.idempotency"
local mcache = require "adapters.cache.memory"
local mlimiter = require "adapters.limiter.memory"
local midem = require "adapters.idempotency.memory"

local serial = 0
local function unique(prefix)
  serial = serial + 1
  return ("spec:classic:%s:%d:%d"):format(prefix, serial, os.time())
end

describe("memory adapters on the classic binding", function()
  it("take the classic path when asked, the FFI path otherwise", function()
    local fast = mcache.new{ name = unique("which") }
    local classic = mcache.new{ name = unique("which"), classic = true }
    assert.are_not.equal(fast.get, classic.get)
    assert.is_true(mcache.ffi)
    fast:close()
    classic:close()
  end)

  for _, classic in ipairs{ false, true } do
    it("get_unless answers true for the known bytes and the value otherwise" ..
       (classic and " (classic)" or " (FFI)"), function()
      local c = mcache.new{ name = unique("unless"), classic = classic }
      assert.is_nil(c:get_unless("k", "abc"))                      -- absent
      assert(c:set("k", "abc", 60))
      assert.is_true(c:get_unless("k", "abc"))
      assert(c:set("k", "abd", 60))                                -- same length, other bytes
      assert.equal("abd", c:get_unless("k", "abc"))
      assert(c:set("k", "abd-longer", 60))
      assert.equal("abd-longer", c:get_unless("k", "abc"))
      local big = ("x"):rep(5000)                                  -- longer than the buffer
      assert(c:set("k", big, 60))
      assert.equal(big, c:get_unless("k", "abc"))
      assert.is_true(c:get_unless("k", big))
      assert(c:set("k", 7, 60))
      assert.equal(7, c:get_unless("k", "7"))                      -- a number stays a number
      c:close()
    end)
  end

  require("spec.conformance.cache")("memory (classic)", function(opts)
    return cache.wrap(mcache.new{ name = unique("cache"), max_bytes = 1024 * 1024,
      clock = opts.clock, classic = true })
  end)

  require("spec.conformance.limiter")("memory (classic)", function(opts)
    return limiter.wrap(mlimiter.new{ name = unique("limiter"), rate = opts.rate,
      burst = opts.burst, clock = opts.clock, classic = true })
  end)

  require("spec.conformance.idempotency")("memory (classic)", function(opts)
    return idempotency.wrap(midem.new{ name = unique("idem"), clock = opts.clock, classic = true },
      { ttl = opts.ttl, pending_ttl = opts.pending_ttl })
  end)
end)
