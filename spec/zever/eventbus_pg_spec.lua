-- zever.eventbus with the postgres adapter (LISTEN/NOTIFY) on a real PostgreSQL 15: the
-- conformance suite, each bus on a channel of its own, then delivery from a second connection,
-- the payload limit, and a SQLite database refused.

local pg_server = require "spec.support.pg_server"
local eventbus = require "zever.eventbus"
local pbus = require "adapters.eventbus.postgres"
local zdb = require "zever.db"
local sched = require "zever.sched"
local sys = require "zever.sys"
local unique = require("spec.support.files").unique_ident

describe("adapters.eventbus.postgres #pg", function()
  local fx = pg_server.fixture("eventbus")
  local db
  setup(function() db = assert(zdb.open(fx.dsn)) end)
  teardown(function() pcall(db.close, db) end)

  require("spec.conformance.eventbus")("postgres", function(opts)
    return eventbus.wrap(pbus.new(db, { channel = unique("ch") }), opts)
  end)

  local function wait_until(pred)
    local deadline = sys.now() + 10
    while not pred() and sys.now() < deadline do sched.sleep(0.005) end
    return pred()
  end

  it("delivers what one connection publishes to a bus on another connection", function()
    local channel = unique("two")
    local bus = eventbus.wrap(pbus.new(db, { channel = channel }))
    local got = {}
    assert(bus:subscribe("two.*", function(m, t) got[#got + 1] = t .. ":" .. m.n end))
    local other = assert(zdb.open(fx.dsn))
    local pub = eventbus.wrap(pbus.new(other, { channel = channel }))
    for i = 1, 10 do assert(pub:publish("two.x", { n = i })) end
    assert.is_true(wait_until(function() return #got == 10 end))
    for i = 1, 10 do assert.are.equal("two.x:" .. i, got[i]) end
    pub:close()
    other:close()
    bus:close()
  end)

  it("refuses a message larger than the NOTIFY payload as invalid", function()
    local bus = eventbus.wrap(pbus.new(db, { channel = unique("big") }))
    local ok, err = bus:publish("big", ("x"):rep(8000))
    assert.is_nil(ok)
    assert.are.equal("invalid", err.code)
    assert.is_true(bus:publish("big", ("x"):rep(7000)))
    bus:close()
  end)

  it("refuses a SQLite database", function()
    local sqlite = assert(zdb.open("sqlite::memory:"))
    assert.has_error(function() pbus.new(sqlite) end)
    sqlite:close()
  end)
end)
