-- zever.search with the db adapter (SQLite FTS5): the conformance suite, then what the db
-- adapter adds (FTS5 is compiled in, one multi-row statement per chunk, the container).

local zever_db = require "zever.db"
local search = require "zever.search"
local db_search = require "adapters.search.db"

local handles = setmetatable({}, { __mode = "k" })

require("spec.conformance.search")("db", function()
  local db = assert(zever_db.open("sqlite::memory:"))
  local s = search.wrap(assert(db_search.new(db)))
  handles[s] = db
  return s
end, { count = function(s) return handles[s]:first("SELECT count(*) AS n FROM zever_search").n end })

describe("adapters.search.db", function()
  it("runs on a SQLite with FTS5 compiled in", function()
    local db = assert(zever_db.open("sqlite::memory:"))
    assert.are.equal(1, db:first("SELECT sqlite_compileoption_used('ENABLE_FTS5') AS f").f)
    db:close()
  end)

  it("writes a batch larger than one chunk in one transaction", function()
    local db = assert(zever_db.open("sqlite::memory:"))
    local s = search.wrap(assert(db_search.new(db)))
    local old = db_search.CHUNK
    db_search.CHUNK = 7
    local docs = {}
    for i = 1, 30 do docs[i] = { id = "d" .. i, content = "chunked words " .. i } end
    local ok = s:index_batch(docs)
    db_search.CHUNK = old
    assert.are.equal(30, ok)
    assert.are.equal(30, assert(s:search("chunked", { limit = 50 })).total)
    db:close()
  end)

  it("keeps the full-text index in step with updates and deletes", function()
    local db = assert(zever_db.open("sqlite::memory:"))
    local s = search.wrap(assert(db_search.new(db)))
    s:index{ id = "a", content = "alpha" }
    s:index{ id = "a", content = "beta" }
    s:delete("a")
    s:index{ id = "b", content = "alpha beta" }
    assert.are.same({ 1, 1 }, { s:search("alpha").total, s:search("beta").total })
    assert.are.same({ rowcount = 1 }, db:first("SELECT count(*) AS rowcount FROM zever_search_fts"))
    db:close()
  end)

  it("is app.search through the container", function()
    local config = require "zever.config"
    local container = require "zever.container"
    local cfg = assert(config.load{ dir = "/nonexistent-zever-dir", env = { DB_DSN = "sqlite::memory:" } })
    local c = container.new(cfg)
    local s = assert(c:get("search"))
    assert.is_true(s:index{ id = 1, content = "hello container" })
    assert.are.equal("1", s:search("container").hits[1].id)
    c:close()
  end)
end)
