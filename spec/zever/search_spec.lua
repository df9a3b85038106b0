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

  it("queues writes for FTS5 and feeds them before the next search", function()
    local db = assert(zever_db.open("sqlite::memory:"))
    local s = search.wrap(assert(db_search.new(db)))
    local function pending()
      return db:first("SELECT count(*) AS n FROM zever_search_pending").n
    end
    s:index_batch{ { id = "a", content = "alpha" }, { id = "b", content = "beta" } }
    assert.are.equal(2, pending())
    assert.are.equal(0, db:first("SELECT count(*) AS n FROM zever_search_fts " ..
      "WHERE zever_search_fts MATCH 'alpha'").n)
    assert.are.equal(1, s:search("alpha").total)
    assert.are.equal(0, pending())
    -- A metadata-only update queues nothing; a content change queues the row once.
    s:index{ id = "a", content = "alpha", metadata = { k = 1 } }
    assert.are.equal(0, pending())
    s:index{ id = "a", content = "gamma" }
    s:index{ id = "a", content = "delta" }
    assert.are.equal(1, pending())
    assert.are.same({ 0, 0, 1 }, { s:search("alpha").total, s:search("gamma").total,
      s:search("delta").total })
    assert.are.same({}, s:search("delta").hits[1].metadata)
    db:close()
  end)

  it("feeds rewrites, deletes and new rows to FTS5 in rowid order: one segment a feed", function()
    local db = assert(zever_db.open("sqlite::memory:"))
    local s = search.wrap(assert(db_search.new(db)))
    local function segments()
      return db:first("SELECT count(DISTINCT segid) AS n FROM zever_search_fts_idx").n
    end
    s:index_batch{ { id = "a", content = "alpha one" }, { id = "b", content = "beta two" },
      { id = "c", content = "gamma three" } }
    assert(s:flush())
    assert.are.equal(1, segments())
    -- a 'delete' and an insert of the same rowids: fed as delete a, insert a, delete b, ...
    -- (FTS5 writes its pending terms out whenever a rowid goes backwards: that was 2 segments).
    s:index_batch{ { id = "a", content = "delta one" }, { id = "d", content = "alpha four" } }
    s:delete("b")
    assert(s:flush())
    assert.are.equal(2, segments())
    assert(db:exec("INSERT INTO zever_search_fts(zever_search_fts) VALUES ('integrity-check')"))
    assert.are.same({ 1, 0, 1, 1, 1 }, { s:search("alpha").total, s:search("beta").total,
      s:search("delta").total, s:search("one").total, s:search("four").total })
    assert.are.equal("d", s:search("alpha").hits[1].id)
    db:close()
  end)

  -- FTS5's in-memory term hash grows with its largest statement and never shrinks.
  for _, case in ipairs{ { merge = 0, segments = 1 + 3 }, { merge = nil, segments = 1 } } do
    local what = case.merge == 0 and "each a segment (FEED_MERGE 0)" or "then merges the segments"
    it("feeds a large queue FEED_CHUNK rows a statement, " .. what .. ", same results", function()
      local db = assert(zever_db.open("sqlite::memory:"))
      local s = search.wrap(assert(db_search.new(db)))
      local function segments()
        return db:first("SELECT count(DISTINCT segid) AS n FROM zever_search_fts_idx").n
      end
      local docs = {}
      for i = 1, 8 do docs[i] = { id = "d" .. i, content = "first text " .. i } end
      assert(s:index_batch(docs))
      assert(s:flush())
      assert.are.equal(1, segments())
      local chunk, merge = db_search.FEED_CHUNK, db_search.FEED_MERGE
      db_search.FEED_CHUNK, db_search.FEED_MERGE = 3, case.merge or merge
      for i = 1, 8 do docs[i] = { id = "d" .. i, content = "second text " .. i } end
      docs[9] = { id = "d9", content = "second text new" }
      assert(s:index_batch(docs))
      s:delete("d2")
      local ok, err = s:flush()
      db_search.FEED_CHUNK, db_search.FEED_MERGE = chunk, merge
      assert.is_true(ok, err)
      assert.are.equal(0, db:first("SELECT count(*) AS n FROM zever_search_pending").n)
      -- 9 queued rows: 3 + 3 + 3; FTS5 merges a level of 4 segments (usermerge) into one
      assert.are.equal(case.segments, segments())
      assert(db:exec("INSERT INTO zever_search_fts(zever_search_fts) VALUES ('integrity-check')"))
      assert.are.same({ 0, 8, 8, 1 }, { s:search("first").total, s:search("second").total,
        s:search("text").total, s:search("new").total })
      db:close()
    end)
  end

  it("feeds FTS5 with rows another connection wrote", function()
    local path = os.tmpname()
    local a = assert(zever_db.open("sqlite:" .. path))
    local b = assert(zever_db.open("sqlite:" .. path))
    local sa = search.wrap(assert(db_search.new(a)))
    local sb = search.wrap(assert(db_search.new(b)))
    sa:index{ id = "1", content = "written by a" }
    assert.are.equal("1", sb:search("written").hits[1].id)
    sa:delete("1")
    sa:index{ id = "2", content = "written again" }
    assert.are.same({ 0, 1 }, { sb:search("by").total, sb:search("written").total })
    a:close(); b:close()
    os.remove(path); os.remove(path .. "-wal"); os.remove(path .. "-shm")
  end)

  it("replaces the synchronous triggers of an earlier schema", function()
    local db = assert(zever_db.open("sqlite::memory:"))
    assert(db:exec([[CREATE TABLE zever_search (seq INTEGER PRIMARY KEY, id TEXT NOT NULL,
      "index" TEXT NOT NULL, content TEXT NOT NULL, metadata TEXT NOT NULL, UNIQUE (id, "index"));
      CREATE VIRTUAL TABLE zever_search_fts USING fts5(content, content=zever_search,
        content_rowid=seq);
      CREATE TRIGGER zever_search_ai AFTER INSERT ON zever_search BEGIN
        INSERT INTO zever_search_fts(rowid, content) VALUES (new.seq, new.content); END;
      INSERT INTO zever_search (id, "index", content, metadata) VALUES ('old', 'default',
        'kept from before', '{}')]]))
    local s = search.wrap(assert(db_search.new(db)))
    assert.is_nil(db:first("SELECT 1 AS x FROM sqlite_master WHERE name = 'zever_search_ai'"))
    s:index{ id = "new", content = "added after" }
    assert.are.same({ 1, 1 }, { s:search("kept").total, s:search("added").total })
    db:close()
  end)

  it("queues a write's rows without staging each in a temporary b-tree", function()
    -- A trigger that reads the table it inserts into (INSERT ... SELECT ... WHERE NOT EXISTS)
    -- makes SQLite stage its row in a temporary b-tree, opened on every row the write touches.
    -- The write's program lists its trigger programs: one OpenEphemeral is left, the multi-row
    -- VALUES of a table with triggers.
    local db = assert(zever_db.open("sqlite::memory:"))
    assert(db_search.new(db))
    local n = 0
    for _, r in ipairs(db:query([[EXPLAIN INSERT INTO zever_search (id, "index", content, metadata)
      VALUES ('a', 'i', 'x', '{}'), ('b', 'i', 'y', '{}') ON CONFLICT (id, "index") DO UPDATE
      SET content = excluded.content, metadata = excluded.metadata]])) do
      if r.opcode == "OpenEphemeral" then n = n + 1 end
    end
    assert.are.equal(1, n)
    db:close()
  end)

  it("replaces the queueing triggers of an earlier schema, keeping what they queued", function()
    local db = assert(zever_db.open("sqlite::memory:"))
    assert(db:exec([[CREATE TABLE zever_search (seq INTEGER PRIMARY KEY, id TEXT NOT NULL,
      "index" TEXT NOT NULL, content TEXT NOT NULL, metadata TEXT NOT NULL, UNIQUE (id, "index"));
      CREATE VIRTUAL TABLE zever_search_fts USING fts5(content, content=zever_search,
        content_rowid=seq);
      CREATE TABLE zever_search_pending (seq INTEGER PRIMARY KEY, old TEXT);
      CREATE TRIGGER zever_search_pi AFTER INSERT ON zever_search BEGIN
        INSERT INTO zever_search_pending (seq, old) SELECT new.seq, NULL WHERE NOT EXISTS
        (SELECT 1 FROM zever_search_pending WHERE seq = new.seq); END;
      INSERT INTO zever_search (id, "index", content, metadata) VALUES ('old', 'default',
        'queued before', '{}')]]))
    local s = search.wrap(assert(db_search.new(db)))
    assert.is_nil(db:first("SELECT 1 AS x FROM sqlite_master WHERE name = 'zever_search_pi'"))
    assert.are.equal(3, db:first("SELECT count(*) AS n FROM sqlite_master WHERE type = " ..
      "'trigger' AND name IN ('zever_search_qi', 'zever_search_qd', 'zever_search_qu')").n)
    s:index{ id = "new", content = "added after" }
    s:index{ id = "new", content = "rewritten after" }
    assert.are.same({ 1, 0, 1 }, { s:search("queued").total, s:search("added").total,
      s:search("rewritten").total })
    assert(db:exec("INSERT INTO zever_search_fts(zever_search_fts) VALUES ('integrity-check')"))
    db:close()
  end)

  it("reindexes with and without progress to the same index", function()
    local db = assert(zever_db.open("sqlite::memory:"))
    local s = search.wrap(assert(db_search.new(db)))
    local old = db_search.REINDEX_CHUNK
    db_search.REINDEX_CHUNK = 3
    local docs = {}
    for i = 1, 10 do docs[i] = { id = "d" .. i, content = "word" .. i .. " common" } end
    s:index_batch(docs)
    s:delete("d4")
    local calls = {}
    assert.are.equal(9, s:reindex{ progress = function(d, t) calls[#calls + 1] = d .. "/" .. t end })
    db_search.REINDEX_CHUNK = old
    assert.are.same({ "0/9", "3/9", "6/9", "9/9" }, calls)
    local chunked = s:search("common", { limit = 20 })
    assert.are.equal(9, s:reindex())
    assert.are.same(chunked, s:search("common", { limit = 20 }))
    assert.are.equal(9, chunked.total)
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
