-- zever.cache with the db adapter on a real PostgreSQL 15 (spec/support/pg_server): the
-- conformance suite, each cache in a table of its own, then what the postgres dialect adds (an
-- UNLOGGED table, numbers kept exact in a numeric column).

local pg_server = require "spec.support.pg_server"
local cache = require "zever.cache"
local dbc = require "adapters.cache.db"
local zdb = require "zever.db"
local fs = require "spec.support.files"
local unique = fs.unique_ident

describe("adapters.cache.db on postgres #pg", function()
  local fx = pg_server.fixture("cache")
  local db
  setup(function() db = assert(zdb.open(fx.dsn)) end)
  teardown(function() pcall(db.close, db) end)

  require("spec.conformance.cache")("db (postgres)", function(opts)
    return cache.wrap(dbc.new(db, { table = unique("conf"), clock = opts.clock }))
  end)

  it("keeps its rows in an UNLOGGED table", function()
    local name = unique("unlogged")
    local c = cache.wrap(dbc.new(db, { table = name }))
    assert.is_true(c:set("k", "v"))
    local row = db:first("SELECT relpersistence AS p FROM pg_class WHERE relname = ?", name)
    assert.are.equal("u", row.p)
    c:close()
  end)

  it("shares one cache between two connections", function()
    local name = unique("shared")
    local other = assert(zdb.open(fx.dsn))
    local a = cache.wrap(dbc.new(db, { table = name }))
    local b = cache.wrap(dbc.new(other, { table = name }))
    assert.is_true(a:set("k", { x = 1 }))
    assert.are.same({ x = 1 }, b:get("k"))
    assert.are.equal(5, b:incr("n", 5))
    assert.are.equal(7, a:incr("n", 2))
    a:close(); b:close(); other:close()
  end)
end)
