-- zever.vectors with the db adapter on a real PostgreSQL 15 (spec/support/pg_server): the
-- conformance suite (bytea rows, the C top-k kernel over the fetched copy), each store in a
-- table of its own, then the write counter that tells one process about another's writes.

local pg_server = require "spec.support.pg_server"
local zdb = require "zever.db"
local vectors = require "zever.vectors"
local db_vectors = require "adapters.vectors.db"
local fs = require "spec.support.files"
local unique = fs.unique_ident

local decodes = 0
local real_decode = db_vectors.decode

describe("adapters.vectors.db on postgres #pg", function()
  local fx = pg_server.fixture("vectors")
  local db
  setup(function()
    db = assert(zdb.open(fx.dsn))
    db_vectors.decode = function(s)
      decodes = decodes + 1
      return real_decode(s)
    end
  end)
  teardown(function()
    db_vectors.decode = real_decode
    pcall(db.close, db)
  end)

  require("spec.conformance.vectors")("db (postgres)", function()
    return vectors.wrap(assert(db_vectors.new(db, { table = unique("conf") })))
  end, { count_decodes = function() return decodes end })

  it("sees rows written and deleted by another connection", function()
    local name = unique("two")
    local other = assert(zdb.open(fx.dsn))
    local a = vectors.wrap(assert(db_vectors.new(db, { table = name })))
    local b = vectors.wrap(assert(db_vectors.new(other, { table = name })))
    assert(a:upsert("x", { 1, 0 }))
    assert.are.equal("x", assert(b:query({ 1, 0 }, 5))[1].id)
    assert(a:upsert("y", { 0, 1 }))
    assert(a:delete("x"))
    local hits = assert(b:query({ 1, 0 }, 5))
    assert.are.equal(1, #hits)
    assert.are.equal("y", hits[1].id)
    a:close(); b:close(); other:close()
  end)

  it("reports whether the server offers pgvector", function()
    local impl = assert(db_vectors.new(db, { table = unique("probe") }))
    local row = db:first("SELECT count(*) AS n FROM pg_available_extensions WHERE name = 'vector'")
    assert.are.equal(row.n > 0, impl.pgvector)
  end)
end)
