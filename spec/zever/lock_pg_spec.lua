-- zever.lock with the db adapter on a real PostgreSQL 15 (spec/support/pg_server): the
-- conformance suite, each table of leases its own, then exclusion between two connections
-- whose contending coroutines race on the one INSERT ... ON CONFLICT ... RETURNING.

local pg_server = require "spec.support.pg_server"
local lock = require "zever.lock"
local ldb = require "adapters.lock.db"
local zdb = require "zever.db"
local sched = require "zever.sched"
local sys = require "zever.sys"
local unique = require("spec.support.files").unique_ident

describe("adapters.lock.db on postgres #pg", function()
  local fx = pg_server.fixture("lock")
  local db
  setup(function() db = assert(zdb.open(fx.dsn)) end)
  teardown(function() pcall(db.close, db) end)

  require("spec.conformance.lock")("db (postgres)", function(opts)
    return lock.wrap(ldb.new(db, { table = unique("conf"), clock = opts.clock }))
  end)

  it("never grants one key to two connections' contenders at once", function()
    local name = unique("race")
    local other = assert(zdb.open(fx.dsn))
    local sides = { lock.wrap(ldb.new(db, { table = name })),
      lock.wrap(ldb.new(other, { table = name })) }
    local inside, max_inside, done, left = 0, 0, 0, 8
    for i = 1, 8 do
      sched.spawn(function()
        local locks = sides[i % 2 + 1]
        for _ = 1, 5 do
          local lease = assert(locks:acquire("k", 30, 20))
          inside = inside + 1
          if inside > max_inside then max_inside = inside end
          sched.sleep(0.001)
          inside = inside - 1
          assert(lease:unlock())
          done = done + 1
        end
        left = left - 1
      end)
    end
    local deadline = sys.now() + 30
    while left > 0 and sys.now() < deadline do sched.sleep(0.005) end
    assert.are.equal(0, left)
    assert.are.equal(40, done)
    assert.are.equal(1, max_inside)
    other:close()
  end)
end)
