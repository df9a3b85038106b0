-- zever.lock with the db adapter on a real SQLite file: the conformance suite (fake clock),
-- then what only the db adapter promises (the table made on first use, exclusion between two
-- connections, fences that keep growing after the sweep deleted a key's row, database failure
-- as "unavailable") and the container.

local zdb = require "zever.db"
local lock = require "zever.lock"
local ldb = require "adapters.lock.db"

local files = {}
local function tmpdb()
  local path = os.tmpname()
  files[#files + 1] = path
  return assert(zdb.open("sqlite:" .. path)), path
end

describe("adapters.lock.db", function()
  teardown(function()
    for _, path in ipairs(files) do
      os.remove(path)
      os.remove(path .. "-wal")
      os.remove(path .. "-shm")
    end
  end)

  local n = 0
  local conf_db
  require("spec.conformance.lock")("db (sqlite)", function(opts)
    conf_db = conf_db or tmpdb()
    n = n + 1
    return lock.wrap(ldb.new(conf_db, { table = "conf_" .. n, clock = opts.clock }))
  end)

  it("excludes a second connection to the same file", function()
    local a_db, path = tmpdb()
    local b_db = assert(zdb.open("sqlite:" .. path))
    local a = lock.wrap(ldb.new(a_db))
    local b = lock.wrap(ldb.new(b_db))
    local lease = assert(a:try_acquire("job:7", 10))
    assert.are.equal("busy", select(2, b:try_acquire("job:7", 10)).code)
    assert.are.equal(lease.fence, (b:holder("job:7")))
    assert.is_true(lease:unlock())
    local other = assert(b:try_acquire("job:7", 10))
    assert.is_true(other.fence > lease.fence)
    assert.is_true(other:unlock())
    b_db:close()
  end)

  it("keeps fences growing after the sweep deleted a key's row", function()
    local db = tmpdb()
    local t = 5000
    local impl = ldb.new(db, { clock = function() return t end, horizon = 60 })
    local locks = lock.wrap(impl)
    local first = assert(locks:try_acquire("k", 10))
    assert.is_true(first:unlock())
    t = t + 61
    assert.are.equal(1, impl:sweep())
    assert.are.equal(0, db:first('SELECT count(*) AS n FROM "lock_leases"').n)
    local again = assert(locks:try_acquire("k", 10))
    assert.is_true(again.fence > first.fence)
    assert.is_true(again:unlock())
  end)

  it("returns unavailable when the database fails", function()
    local db = tmpdb()
    local locks = lock.wrap(ldb.new(db))
    assert(assert(locks:try_acquire("k", 10)):unlock())
    db:exec('DROP TABLE "lock_leases"')
    local l, err = locks:try_acquire("k", 10)
    assert.is_nil(l)
    assert.are.equal("unavailable", err.code)
    assert.matches("^db: ", err.message)
  end)

  it("is app.lock with LOCK_ADAPTER=db", function()
    local _, path = tmpdb()
    local container = require("zever.container")
    local config = require("zever.config")
    local cfg = assert(config.load{ env = { LOCK_ADAPTER = "db", DB_DSN = "sqlite:" .. path } })
    local c = container.new(cfg)
    local locks = assert(c:get("lock"))
    assert.are.equal("lock", locks.battery)
    assert(assert(locks:try_acquire("k", 1)):unlock())
    c:close()
  end)
end)
