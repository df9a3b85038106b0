-- Pipeline mode on PostgreSQL (#pg): db:pipeline, a statement prepared in the round trip that
-- runs it, a transaction's BEGIN sent with its first statement; round trips counted by the
-- binding (pg.round_trips: operations sent and awaited, one per pipeline) against a real
-- PostgreSQL 15 (spec/support/pg_server.lua). Errors stay typed (SQLSTATE) and a failure
-- skips only what PostgreSQL skips. The last describe runs db:pipeline on SQLite (no tag).

local zever_db = require "zever.db"
local pg = require "zever.pg"
local sched = require "zever.sched"
local pg_server = require "spec.support.pg_server"

local function trips(fn)
  local before = pg.round_trips()
  fn()
  return pg.round_trips() - before
end

describe("db pipeline mode #pg", function()
  local fx = pg_server.fixture("pipeline")
  local db

  setup(function()
    db = assert(zever_db.open(fx.dsn))
    db:exec("CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL)")
  end)

  teardown(function()
    if db then db:close() end
  end)

  before_each(function()
    db:exec("DELETE FROM items")
  end)

  local function count()
    return db:first("SELECT count(*) AS n FROM items").n
  end

  -- What another connection sees (psql): committed rows only.
  local function committed()
    local r = fx.server:psql(fx.dsn, "SELECT count(*) FROM items")
    assert.are.equal(0, r.code, r.stderr)
    return tonumber(r.stdout:match("%d+"))
  end

  describe("round trips", function()
    it("prepares a new statement in the round trip that runs it: one, then one", function()
      local sql = "INSERT INTO items (id, name) VALUES (?, ?) -- fresh " .. tostring(os.time())
      assert.are.equal(1, trips(function() db:exec(sql, 1, "a") end))
      assert.are.equal(1, trips(function() db:exec(sql, 2, "b") end))
      assert.are.equal(2, count())
    end)

    it("sends a transaction's BEGIN with its first statement: k statements, k + 1 trips", function()
      db:exec("INSERT INTO items (id, name) VALUES (?, ?)", 100, "warm") -- prepared already
      local n = trips(function()
        db:transaction(function(tx)
          tx:exec("INSERT INTO items (id, name) VALUES (?, ?)", 1, "a")
          tx:exec("INSERT INTO items (id, name) VALUES (?, ?)", 2, "b")
          tx:exec("INSERT INTO items (id, name) VALUES (?, ?)", 3, "c")
        end)
      end)
      assert.are.equal(4, n) -- BEGIN+INSERT, INSERT, INSERT, COMMIT (5 without the pipeline)
      assert.are.equal(4, committed())
    end)

    it("sends BEGIN with a first statement without binds, or with more than 16", function()
      local many = {}
      for i = 1, 20 do many[i] = "?::int" end
      local sql20 = "SELECT " .. table.concat(many, " + ") .. " AS s"
      local ones = {}
      for i = 1, 20 do ones[i] = 1 end
      local n = trips(function()
        db:transaction(function(tx)
          tx:exec("INSERT INTO items (id, name) VALUES (1, 'plain')")
          assert.are.equal(20, tx:first(sql20, ones).s)
        end)
      end)
      assert.are.equal(3, n) -- BEGIN+INSERT, SELECT, COMMIT
      n = trips(function()
        db:transaction(function(tx) assert.are.equal(20, tx:first(sql20, ones).s) end)
      end)
      assert.are.equal(2, n) -- BEGIN+SELECT (prepared by now), COMMIT
      assert.are.equal(1, committed())
    end)

    it("a failing first statement sent with BEGIN raises its SQLSTATE and rolls back", function()
      db:exec("INSERT INTO items (id, name) VALUES (?, ?)", 1, "kept") -- prepared already
      for _ = 1, 2 do
        local ok, err = pcall(db.transaction, db, function(tx)
          tx:exec("INSERT INTO items (id, name) VALUES (?, ?)", 1, "s3cret-bound")
        end)
        assert.is_false(ok)
        assert.are.equal("constraint", err.code)
        assert.are.equal("23505", err.sqlstate)
        assert.is_nil(tostring(err):find("s3cret", 1, true))
      end
      -- the connection is usable after the rollback, and nothing else was written
      assert.are.equal(1, db:first("SELECT count(*) AS n FROM items WHERE id = ?", 1).n)
      assert.are.equal(1, committed())
    end)

    it("an empty transaction sends nothing", function()
      assert.are.equal(0, trips(function() db:transaction(function() end) end))
    end)

    it("a pipeline of five statements is one round trip, results in order", function()
      local res
      local n = trips(function()
        res = db:pipeline(function(p)
          p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 1, "a")
          p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 2, "b")
          p:query("SELECT id, name FROM items ORDER BY id")
          p:first("SELECT name FROM items WHERE id = ?", 99)
          p:first("SELECT count(*) AS n FROM items")
        end)
      end)
      assert.are.equal(1, n)
      assert.are.equal(5, res.n)
      assert.are.equal(1, res[1].changes)
      assert.are.same({ { id = 1, name = "a" }, { id = 2, name = "b" } }, res[3])
      assert.is_nil(res[4])
      assert.are.equal(2, res[5].n)
      assert.are.equal(2, committed())
    end)

    it("takes built queries (to_sql), as docs/query-postgres.md shows", function()
      db:exec("INSERT INTO items (id, name) VALUES (?, ?), (?, ?)", 1, "a", 2, "b")
      local r
      assert.are.equal(1, trips(function()
        r = db:pipeline(function(p)
          for _, q in ipairs{ db:from("items"):where("id", 1), db:from("items"):where("id", 2) } do
            local sql, binds = q:to_sql()
            p:first(sql, binds)
          end
        end)
      end))
      assert.are.equal("a", r[1].name)
      assert.are.equal("b", r[2].name)
    end)

    it("keeps one trip a statement when the statement cache is full (DEALLOCATE rides along)", function()
      local d = assert(zever_db.open(fx.dsn, { statements = 2, pool_size = 1 }))
      for i = 1, 5 do
        local sql = "SELECT ?::int + " .. i .. " AS v"
        assert.are.equal(1, trips(function() assert.are.equal(10 + i, d:first(sql, 10).v) end))
      end
      -- the two kept are still prepared (one trip), the dropped ones prepared again (one trip)
      assert.are.equal(1, trips(function() assert.are.equal(15, d:first("SELECT ?::int + 5 AS v", 10).v) end))
      assert.are.equal(1, trips(function() assert.are.equal(11, d:first("SELECT ?::int + 1 AS v", 10).v) end))
      local prepared = d:first("SELECT count(*) AS n FROM pg_prepared_statements").n
      assert.are.equal(2, prepared)
      d:close()
    end)
  end)

  describe("errors", function()
    it("atomic (default): the failing statement raises its SQLSTATE, the others are rolled back", function()
      db:exec("INSERT INTO items (id, name) VALUES (?, ?)", 1, "kept")
      local ok, err = pcall(db.pipeline, db, function(p)
        p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 2, "b")
        p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 1, "s3cret-bound")
        p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 3, "c")
      end)
      assert.is_false(ok)
      assert.are.equal("db", err.battery)
      assert.are.equal("constraint", err.code)
      assert.are.equal("23505", err.sqlstate)
      assert.are.equal("items_pkey", err.constraint)
      assert.are.equal(2, err.index)
      assert.is_nil(tostring(err):find("s3cret", 1, true)) -- no bound value in the error
      assert.are.equal(1, committed())
    end)

    it("atomic through a try handle: nil, err", function()
      local res, err = db:try(function(h)
        return h:pipeline(function(p)
          p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 1, "a")
          p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 2, db.null)
        end)
      end, "constraint")
      assert.is_nil(res)
      assert.are.equal("23502", err.sqlstate)
      assert.are.equal(2, err.index)
      assert.are.equal(0, committed())
    end)

    it("atomic = false: each statement on its own, a failure skips nothing else", function()
      local res, errs = db:pipeline(function(p)
        p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 1, "a")
        p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 1, "dup")
        p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 2, "b")
        p:query("SELEC 1")
        p:first("SELECT count(*) AS n FROM items")
      end, { atomic = false })
      assert.are.equal(1, res[1].changes)
      assert.is_nil(res[2])
      assert.are.equal("23505", errs[2].sqlstate)
      assert.are.equal(2, errs[2].index)
      assert.are.equal(1, res[3].changes)
      assert.are.equal("syntax", errs[4].code)
      assert.are.equal("42601", errs[4].sqlstate)
      assert.are.equal(2, res[5].n)
      assert.is_nil(errs[1])
      assert.are.equal(2, committed())
    end)

    it("the adapter says which statements PostgreSQL skipped: aborted, 25P02", function()
      local conn = db.conn
      local stmts = {
        { "INSERT INTO items (id, name) VALUES ($1, $2)", { 1, "a" }, 2, "exec" },
        { "SELECT 1/0 AS x", nil, 0, "first" },
        { "INSERT INTO items (id, name) VALUES ($1, $2)", { 2, "b" }, 2, "exec" },
      }
      local res, errs = conn:pipeline(stmts, 3, false)
      assert.are.equal(3, res.n)
      assert.is_nil(errs[1])
      assert.are.equal("22012", errs[2][3].sqlstate)
      assert.are.equal("aborted", errs[3][1])
      assert.are.equal("25P02", errs[3][3].sqlstate)
      assert.are.equal(0, committed())
    end)

    it("a statement whose prepare fails is not cached: the same error again, then a good one works", function()
      for _ = 1, 2 do
        local ok, err = pcall(db.first, db, "SELECT nope FROM items WHERE id = ?", 1)
        assert.is_false(ok)
        assert.are.equal("42703", err.sqlstate)
      end
      assert.are.equal(0, db:first("SELECT count(*) AS n FROM items WHERE id > ?", 0).n)
    end)

    it("a transaction whose first statement fails rolls back and leaves the connection clean", function()
      local d = assert(zever_db.open(fx.dsn, { pool_size = 1 }))
      local ok, err = pcall(d.transaction, d, function(tx)
        tx:exec("INSERT INTO items (id, name) VALUES (?, ?)", 1, db.null)
      end)
      assert.is_false(ok)
      assert.are.equal("23502", err.sqlstate)
      -- the one connection is out of any transaction: this commits on its own
      d:exec("INSERT INTO items (id, name) VALUES (?, ?)", 5, "after")
      -- outside a transaction a statement's transaction starts with it
      assert.is_true(d:first("SELECT now() = statement_timestamp() AS fresh").fresh)
      assert.are.equal(1, committed())
      d:close()
    end)

    it("inside a transaction a failing pipeline aborts the transaction, which rolls back", function()
      local ok, err = pcall(db.transaction, db, function(tx)
        tx:exec("INSERT INTO items (id, name) VALUES (?, ?)", 1, "a")
        tx:pipeline(function(p)
          p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 2, "b")
          p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 2, "dup")
        end, { atomic = false })
        tx:exec("INSERT INTO items (id, name) VALUES (?, ?)", 3, "c") -- 25P02: aborted
      end)
      assert.is_false(ok)
      assert.are.equal("25P02", err.sqlstate)
      assert.are.equal(0, committed())
    end)

    it("a pipeline inside a transaction sees and is undone with it", function()
      local ok = pcall(db.transaction, db, function(tx)
        local r = tx:pipeline(function(p)
          p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 1, "a")
          p:first("SELECT name FROM items WHERE id = ?", 1)
        end)
        assert.are.equal("a", r[2].name)
        error("undo")
      end)
      assert.is_false(ok)
      assert.are.equal(0, committed())
    end)

    it("a bad bind raises before anything is sent; the connection stays usable", function()
      local before = pg.round_trips()
      assert.has_error(function()
        db:pipeline(function(p)
          p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 1, "a")
          p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 2, function() end)
        end)
      end)
      assert.are.equal(before, pg.round_trips())
      assert.has_error(function() db:pipeline("nope") end, "pipeline: expects a function")
      assert.has_error(function() db:pipeline(function(p) p:exec(42) end) end, "exec: expects an SQL string")
      assert.are.equal(0, count())
    end)
  end)

  it("pipelines from concurrent coroutines each get their own results", function()
    local got = {}
    local done = 0
    for c = 1, 8 do
      sched.spawn(function()
        local r = db:pipeline(function(p)
          p:exec("INSERT INTO items (id, name) VALUES (?, ?)", c, "n" .. c)
          p:first("SELECT name FROM items WHERE id = ?", c)
        end)
        got[c] = r[2].name
        done = done + 1
      end)
    end
    assert.is_true(sched.wait_until(function() return done == 8 end, 30))
    for c = 1, 8 do assert.are.equal("n" .. c, got[c]) end
    assert.are.equal(8, committed())
  end)
end)

describe("db pipeline on sqlite (one statement at a time, same outcomes)", function()
  local db

  setup(function()
    db = assert(zever_db.open("sqlite::memory:"))
    db:exec("CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL)")
  end)

  teardown(function()
    db:close()
  end)

  before_each(function()
    db:exec("DELETE FROM items")
  end)

  it("atomic: rolls back and raises the failing statement with its index", function()
    local res = db:pipeline(function(p)
      p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 1, "a")
      p:first("SELECT name FROM items WHERE id = ?", 1)
    end)
    assert.are.equal("a", res[2].name)
    local ok, err = pcall(db.pipeline, db, function(p)
      p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 2, "b")
      p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 1, "dup")
    end)
    assert.is_false(ok)
    assert.are.equal("constraint", err.code)
    assert.are.equal(2, err.index)
    assert.are.equal(1, db:first("SELECT count(*) AS n FROM items").n)
  end)

  it("atomic = false: errs per statement", function()
    db:exec("INSERT INTO items (id, name) VALUES (?, ?)", 1, "a")
    local res, errs = db:pipeline(function(p)
      p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 1, "dup")
      p:exec("INSERT INTO items (id, name) VALUES (?, ?)", 3, "c")
    end, { atomic = false })
    assert.are.equal("constraint", errs[1].code)
    assert.are.equal(1, res[2].changes)
  end)
end)
