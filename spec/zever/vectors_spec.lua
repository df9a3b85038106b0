-- zever.vectors with the db adapter (SQLite): the conformance suite, then what the db adapter
-- adds (the copy in C follows writes from another connection; the container resolves it).

local zever_db = require "zever.db"
local vectors = require "zever.vectors"
local db_vectors = require "adapters.vectors.db"

local decodes = 0
local real_decode = db_vectors.decode
db_vectors.decode = function(s)
  decodes = decodes + 1
  return real_decode(s)
end

require("spec.conformance.vectors")("db", function()
  local db = assert(zever_db.open("sqlite::memory:"))
  return vectors.wrap(assert(db_vectors.new(db)))
end, { count_decodes = function() return decodes end })

describe("adapters.vectors.db", function()
  it("sees rows written by another connection to the same file", function()
    local path = os.tmpname()
    local a = assert(zever_db.open("sqlite:" .. path))
    local b = assert(zever_db.open("sqlite:" .. path))
    local va = vectors.wrap(assert(db_vectors.new(a)))
    local vb = vectors.wrap(assert(db_vectors.new(b)))
    va:upsert("one", { 1, 0 })
    assert.are.equal("one", vb:query({ 1, 0 }, 1)[1].id)
    va:upsert("two", { 1, 0.001 })
    va:delete("one")
    local got = vb:query({ 1, 0 }, 5)
    assert.are.equal(1, #got)
    assert.are.equal("two", got[1].id)
    va:close(); vb:close(); a:close(); b:close()
    os.remove(path); os.remove(path .. "-wal"); os.remove(path .. "-shm")
  end)

  it("takes its dimension from the rows already stored", function()
    local db = assert(zever_db.open("sqlite::memory:"))
    local v1 = vectors.wrap(assert(db_vectors.new(db)))
    v1:upsert("a", { 1, 2, 3 })
    local v2 = vectors.wrap(assert(db_vectors.new(db)))
    local ok, err = v2:upsert("b", { 1, 2 })
    assert.is_nil(ok)
    assert.are.equal("invalid", err.code)
    db:close()
  end)

  it("stores embeddings as float32 BLOBs with their norm", function()
    local db = assert(zever_db.open("sqlite::memory:"))
    local v = vectors.wrap(assert(db_vectors.new(db)))
    v:upsert("a", { 3, 4 }, { k = "v" })
    local row = db:first("SELECT length(embedding) AS n, norm, metadata, typeof(embedding) AS t " ..
      "FROM zever_vectors")
    assert.are.same({ n = 8, norm = 5, metadata = '{"k":"v"}', t = "blob" }, row)
    db:close()
  end)

  it("is app.vectors through the container", function()
    local config = require "zever.config"
    local container = require "zever.container"
    local cfg = assert(config.load{ dir = "/nonexistent-zever-dir", env = { DB_DSN = "sqlite::memory:" } })
    local c = container.new(cfg)
    local v = assert(c:get("vectors"))
    assert.is_true((v:upsert("x", { 1, 0 })))
    assert.are.equal("x", v:query({ 1, 0 })[1].id)
    c:close()
  end)
end)
