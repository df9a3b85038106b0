-- zever.search with the db adapter on a real PostgreSQL 15 (spec/support/pg_server): the
-- conformance suite on tsvector + GIN, each search in a table of its own, then what the postgres
-- dialect adds (the GIN index, the unaccent configuration, websearch syntax).

local pg_server = require "spec.support.pg_server"
local zdb = require "zever.db"
local search = require "zever.search"
local db_search = require "adapters.search.db"
local fs = require "spec.support.files"
local unique = fs.unique_ident

describe("adapters.search.db on postgres #pg", function()
  local fx = pg_server.fixture("search")
  local db
  setup(function() db = assert(zdb.open(fx.dsn)) end)
  teardown(function() pcall(db.close, db) end)

  local tables = setmetatable({}, { __mode = "k" })
  require("spec.conformance.search")("db (postgres)", function()
    local name = unique("conf")
    local s = search.wrap(assert(db_search.new(db, { table = name })))
    tables[s] = name
    return s
  end, { count = function(s) return db:first('SELECT count(*) AS n FROM "' .. tables[s] .. '"').n end })

  it("indexes a generated tsvector with GIN and folds diacritics with unaccent", function()
    local name = unique("gin")
    local impl = assert(db_search.new(db, { table = name }))
    assert.are.equal("zever_search", impl.config)
    local ix = db:first("SELECT indexdef AS d FROM pg_indexes WHERE indexname = ?", name .. "_tsv")
    assert.is_truthy(ix.d:find("USING gin (tsv)", 1, true))
    local s = search.wrap(impl)
    assert(s:index_batch{ { id = "a", content = "Crème brûlée in Zürich" },
      { id = "b", content = "zurich rain, no dessert" } })
    local res = assert(s:search("creme zurich"))
    assert.are.equal(1, res.total)
    assert.are.equal("a", res.hits[1].id)
    s:close()
  end)

  it("reads websearch syntax: phrases, or, and -exclusion", function()
    local s = search.wrap(assert(db_search.new(db, { table = unique("web") })))
    assert(s:index_batch{ { id = "1", content = "red fox runs" }, { id = "2", content = "fox red" },
      { id = "3", content = "blue whale" } })
    local function ids(q)
      local out = {}
      for i, h in ipairs(assert(s:search(q)).hits) do out[i] = h.id end
      table.sort(out)
      return out
    end
    assert.are.same({ "1" }, ids('"red fox"'))
    assert.are.same({ "1", "2", "3" }, ids("fox or whale"))
    assert.are.same({ "2" }, ids("fox -runs"))
    s:close()
  end)
end)
