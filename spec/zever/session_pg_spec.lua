-- zever.session with the db adapter on a real PostgreSQL 15 (spec/support/pg_server): the
-- session conformance suite, each store in a table of its own, then what the postgres dialect
-- changes (the sessions' table is logged, unlike the cache's) and the battery from config.

local pg_server = require "spec.support.pg_server"
local session = require "zever.session"
local sdb = require "adapters.session.db"
local zdb = require "zever.db"
local fs = require "spec.support.files"
local unique = fs.unique_ident

describe("adapters.session.db on postgres #pg", function()
  local fx = pg_server.fixture("session")
  local db
  setup(function() db = assert(zdb.open(fx.dsn)) end)
  teardown(function() pcall(db.close, db) end)

  require("spec.conformance.session")("db (postgres)", function(opts)
    return session.wrap(sdb.new(db, { table = unique("sessions") }), opts)
  end)

  it("keeps its rows in a logged table (a crash does not sign everyone out)", function()
    local name = unique("logged")
    local store = session.wrap(sdb.new(db, { table = name }), {})
    local s = store:create()
    s.data.user = 1
    assert(store:save(s))
    local row = db:first("SELECT relpersistence AS p FROM pg_class WHERE relname = ?", name)
    assert.are.equal("p", row.p)
    store:close()
  end)

  it("shares sessions between two connections", function()
    local name = unique("shared")
    local other = assert(zdb.open(fx.dsn))
    finally(function() other:close() end)
    local a = session.wrap(sdb.new(db, { table = name }), {})
    local b = session.wrap(sdb.new(other, { table = name }), {})
    local s = a:create()
    s.data.user = 9
    local token = assert(a:save(s))
    assert.equal(9, b:load(token).data.user)
    assert.is_true(b:destroy(b:load(token)))
    assert.is_nil(a:load(token))
  end)

  it("is app.session with SESSION_ADAPTER=db and a postgres DB_DSN", function()
    local config = require "zever.config"
    local container = require "zever.container"
    local dir = fs.tmpdir(nil, "zever-session-pg-cfg")
    local cfg = assert(config.load{ dir = dir, env = { SESSION_ADAPTER = "db",
      DB_DSN = fx.dsn } })
    local c = container.new(cfg)
    finally(function() c:close(); fs.rm_rf(dir) end)
    local store = assert(c:get("session"))
    local s = store:create()
    s.data.k = "v"
    local token = assert(store:save(s))
    assert.equal("v", store:load(token).data.k)
    assert.equal(1, db:first('SELECT count(*) AS n FROM "sessions"').n)
  end)
end)
