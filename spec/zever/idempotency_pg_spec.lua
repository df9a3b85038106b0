-- zever.idempotency with the db adapter on a real PostgreSQL 15 (spec/support/pg_server): the
-- conformance suite with a fake clock, each store in a table of its own, and one reservation
-- per key between two connections.

local pg_server = require "spec.support.pg_server"
local zdb = require "zever.db"
local idempotency = require "zever.idempotency"
local idb = require "adapters.idempotency.db"
local fs = require "spec.support.files"
local unique = fs.unique_ident

describe("adapters.idempotency.db on postgres #pg", function()
  local fx = pg_server.fixture("idempotency")
  local db
  setup(function() db = assert(zdb.open(fx.dsn)) end)
  teardown(function() pcall(db.close, db) end)

  require("spec.conformance.idempotency")("db (postgres)", function(opts)
    return idempotency.wrap(idb.new(db, { table = unique("conf"), clock = opts.clock }),
      { ttl = opts.ttl, pending_ttl = opts.pending_ttl })
  end)

  it("gives one reservation per key between two connections, in a logged table", function()
    local name = unique("two")
    local other = assert(zdb.open(fx.dsn))
    local a = idempotency.wrap(idb.new(db, { table = name }))
    local b = idempotency.wrap(idb.new(other, { table = name }))
    local got = assert(a:begin("key\0bytes", { fingerprint = "fp" }))
    assert.is_false(got.replay)
    local none, err = b:begin("key\0bytes", { fingerprint = "fp" })
    assert.is_nil(none)
    assert.are.equal("in_progress", err.code)
    assert.is_true(a:complete("key\0bytes", { status = 201 }, got.token))
    local again = assert(b:begin("key\0bytes", { fingerprint = "fp" }))
    assert.is_true(again.replay)
    assert.are.same({ status = 201 }, again.result)
    assert.are.equal("p", db:first("SELECT relpersistence AS p FROM pg_class WHERE relname = ?",
      name).p)
    a:close(); b:close(); other:close()
  end)
end)
