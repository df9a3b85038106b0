-- zever.lock with the memory adapter (the process-wide C table of host/lock/): the conformance
-- suite on a fake clock, then what only the memory adapter promises (one table per name shared
-- by every handle and worker thread, entries reused and swept) and the container.

local lock = require "zever.lock"
local memory = require "adapters.lock.memory"
local core = require "zever.lock_core"

describe("adapters.lock.memory", function()
  local n = 0
  require("spec.conformance.lock")("memory", function(opts)
    n = n + 1
    return lock.wrap(memory.new{ name = "conf:" .. n, clock = opts.clock })
  end)
  require("spec.conformance.lock")("memory (classic binding)", function(opts)
    n = n + 1
    return lock.wrap(memory.new{ name = "conf:" .. n, clock = opts.clock, classic = true })
  end)

  it("takes the FFI path when the host exports the core", function()
    assert.is_true(memory.ffi)
    local impl = memory.new{ name = "ffi-spec" }
    assert.are.equal("cdata", type(impl.ptr))
    local classic = memory.new{ name = "ffi-spec", classic = true }
    assert.are_not.equal(getmetatable(impl), getmetatable(classic))
    impl:close()
    classic:close()
  end)

  it("shares one table between handles that open the same name", function()
    local a = lock.wrap(memory.new{ name = "shared-spec" })
    local b = lock.wrap(memory.new{ name = "shared-spec" })
    local lease = assert(a:try_acquire("k", 10))
    assert.are.equal("busy", select(2, b:try_acquire("k", 10)).code)
    assert.are.equal(lease.fence, (b:holder("k")))
    assert.is_true(lease:unlock())
    assert(assert(b:try_acquire("k", 10)):unlock())
    a:close()
    b:close()
  end)

  it("keeps a released key's entry for reuse and sweeps it away", function()
    local t = 1
    local impl = memory.new{ name = "sweep-spec", clock = function() return t end }
    local locks = lock.wrap(impl)
    for i = 1, 50 do assert(assert(locks:try_acquire("k" .. i, 5)):unlock()) end
    local held = assert(locks:try_acquire("held", 100))
    assert.is_true(impl:stats().entries >= 1)
    t = t + 11   -- a released key's entry is kept 10 s for reuse
    -- A sweep resumes where the last one (admissions run small ones) stopped: sweep until a
    -- call that finished its round removed nothing.
    local r, more
    repeat r, more = impl:sweep(1000) until r == 0 and not more
    local st = impl:stats()
    assert.are.equal(1, st.entries)      -- the live lease stays
    assert.is_true(st.expired >= 1)
    assert.is_true(held:unlock())
    locks:close()
  end)

  it("counts leases granted and refused in stats", function()
    local locks = lock.wrap(memory.new{ name = "stats-spec" })
    local a = assert(locks:try_acquire("k", 10))
    locks:try_acquire("k", 10)
    local st = locks:stats()
    assert.are.equal(1, st.granted)
    assert.are.equal(1, st.refused)
    assert.are.equal("lock", st.battery)
    assert.is_true(a:unlock())
    locks:close()
  end)

  it("excludes worker threads from each other on one named table", function()
    -- Two worker threads, each its own Lua state, take 2000 leases each on one key; a shared
    -- memory cache counts the holders inside: never two at once.
    local threads = require "zever.threads"
    local name = "threads-spec-" .. tostring({}):match("0x%x+")
    local file = os.tmpname()
    local h = assert(core.open(name))
    local p1 = threads.start(1, "spec.fixtures.lock_worker", name .. "|2000|" .. file .. ".1")
    local p2 = threads.start(1, "spec.fixtures.lock_worker", name .. "|2000|" .. file .. ".2")
    p1:join()
    p2:join()
    for _, suffix in ipairs({ ".1", ".2" }) do
      local f = assert(io.open(file .. suffix))
      assert.are.equal("0 done", f:read("*a"))
      f:close()
      os.remove(file .. suffix)
    end
    os.remove(file)
    assert.are.equal(4000, h:stats().acquired)
    h:release()
  end)

  it("is app.lock by default and LOCK_ADAPTER picks another", function()
    local zever = require "zever"
    local app = zever.app()
    local lease = assert(app.lock:try_acquire("app-spec", 1))
    assert.is_true(lease:unlock())
    assert.are.same({ "db", "memory", "postgres", "redis" },
      require("zever.adapters").names("lock"))
  end)
end)
