-- Prepared builder queries (zever.db.prepared: q:prepare(), db.param()) on a SQLite file and on
-- a real PostgreSQL 15 (#pg): the same rows, changes and errors as the builder query with the
-- values in place, and no allocation of their own per call.

local zdb = require "zever.db"
local fs = require "spec.support.files"
local alloc = require "spec.support.alloc"
local pg_server = require "spec.support.pg_server"

local function suite(open, opts)
  local db

  before_each(function()
    db = assert(open())
    db:exec("DROP TABLE IF EXISTS pw")
    db:exec("CREATE TABLE pw (id INTEGER PRIMARY KEY, n INTEGER, s TEXT)")
    db:transaction(function(tx)
      for i = 1, 20 do tx:exec("INSERT INTO pw (id, n, s) VALUES (?, ?, ?)", i, i * 10, "s" .. i % 3) end
    end)
  end)

  after_each(function()
    db:exec("DROP TABLE pw")
    db:close()
  end)

  it("first() and all() return what the builder returns for the same values", function()
    local by_id = db:from("pw"):where("id", db.param()):prepare()
    local bigger = db:from("pw"):select("id", "n"):where("n", ">", db.param())
      :where("s", db.param()):order_by("id", "desc"):limit(3):prepare()
    for id = 0, 21 do
      assert.same(db:from("pw"):where("id", id):first(), by_id:first(id))
      assert.same(db:from("pw"):where("id", id):all(), by_id:all(id))
      for _, s in ipairs { "s0", "s1", "s2", "none" } do
        local want = db:from("pw"):select("id", "n"):where("n", ">", id * 10):where("s", s)
          :order_by("id", "desc"):limit(3)
        assert.same(want:all(), bigger:all(id * 10, s))
        assert.same(want:first(), bigger:first(id * 10, s))
      end
    end
    assert.is_nil(by_id:first(999))
    assert.same({}, by_id:all(999))
    assert.equals("[]", require("zever.json").encode(by_id:all(999)))
  end)

  it("keeps the constants given to the builder, in their place among the values", function()
    local q = db:from("pw"):where("s", "s1"):where("id", ">", db.param()):where("n", "<", 150)
      :order_by("id"):prepare()
    local rows = q:all(5)
    local ids = {}
    for i, r in ipairs(rows) do ids[i] = r.id end
    assert.same({ 7, 10, 13 }, ids)
    local text, binds = q:to_sql()
    assert.equals(select(1, db:from("pw"):where("s", "s1"):where("id", ">", 5):where("n", "<", 150)
      :order_by("id"):to_sql()), text)
    assert.equals("s1", binds[1])
    assert.equals(db.param(), binds[2])
    assert.equals(150, binds[3])
  end)

  it("exec() of a prepared update returns the changed rows and writes each call's values", function()
    local set = db:update("pw"):set("n", db.param()):where("id", db.param()):prepare()
    assert.equals(1, set:exec(7, 3))
    assert.equals(0, set:exec(7, 99))
    assert.equals(7, db:first("SELECT n FROM pw WHERE id = ?", 3).n)
    local many = db:update("pw"):set { n = db.param(), s = "w" }:where("s", db.param()):prepare()
    assert.equals(6, many:exec(-1, "s0")) -- ids 3, 6, ..., 18
    assert.equals(6, db:first("SELECT count(*) AS c FROM pw WHERE n = -1 AND s = 'w'").c)
  end)

  it("a nil value binds NULL", function()
    local set = db:update("pw"):set("s", db.param()):where("id", db.param()):prepare()
    assert.equals(1, set:exec(nil, 4))
    assert.is_nil(db:first("SELECT s FROM pw WHERE id = 4").s)
  end)

  it("runs on a transaction's handle with on(tx), and rolls back with it", function()
    local set = db:update("pw"):set("n", db.param()):where("id", db.param()):prepare()
    local ok = pcall(db.transaction, db, function(tx)
      assert.equals(1, set:on(tx):exec(555, 1))
      assert.equals(555, tx:first("SELECT n FROM pw WHERE id = 1").n)
      error("boom")
    end)
    assert.is_false(ok)
    assert.equals(10, db:first("SELECT n FROM pw WHERE id = 1").n)
    db:transaction(function(tx) set:on(tx):exec(556, 1) end)
    assert.equals(556, db:first("SELECT n FROM pw WHERE id = 1").n)
  end)

  it("raises the builder's db error, and a soft handle returns it", function()
    local dup = db:update("pw"):set("id", db.param()):where("id", db.param()):prepare()
    local ok, err = pcall(dup.exec, dup, 2, 1)
    assert.is_false(ok)
    assert.is_true(zdb.is_error(err))
    assert.equals("constraint", err.code)
    assert.matches("UPDATE", err.sql)
    -- the list was put back: the next call binds its own values
    assert.equals(1, dup:exec(100, 1))
    local soft = dup:on(db:try_handle())
    local r, e = soft:exec(3, 2)
    assert.is_nil(r)
    assert.equals("constraint", e.code)
  end)

  it("refuses a wrong number of values, preload, returning and LIMIT as a placeholder", function()
    local by_id = db:from("pw"):where("id", db.param()):prepare()
    assert.has_error(function() by_id:first() end, "first: this prepared query takes 1 value(s), got 0")
    assert.has_error(function() by_id:all(1, 2) end)
    assert.has_error(function() by_id:exec(1) end)
    assert.has_error(function() db:from("pw"):limit(db.param()):prepare() end)
    assert.has_error(function() db:update("pw"):set("n", 1):returning("id"):prepare() end)
    -- a placeholder in a query that was not prepared is a value no adapter binds
    local ok, err = pcall(function() return db:from("pw"):where("id", db.param()):first() end)
    assert.is_false(ok)
    assert.matches("cdata", tostring(err))
  end)

  -- (SQLite only: the PostgreSQL adapter allocates per statement of its own, a wire buffer.)
  if not opts.alloc then return end
  -- Against the raw calls of the same SQL through the same adapter (db:first/db:exec with one
  -- reused bind list): what the adapter allocates (nothing once LuaJIT compiled its FFI path,
  -- int64 boxes when it runs interpreted) is common to both, so the difference is the prepared
  -- query's own. The builder, which makes its query tables per call, shows what a failure
  -- looks like.
  it("allocates nothing per call of its own (the raw SQL calls' allocation)", function()
    local none = db:from("pw"):where("id", db.param()):prepare()
    local set = db:update("pw"):set("n", db.param()):where("id", db.param()):prepare()
    local sel_text = none:to_sql() .. " LIMIT 1"
    local upd_text = set:to_sql()
    local function prepared_calls()
      for i = 1, 300 do
        none:first(1000 + i) -- no such row: nil, no row to allocate
        set:exec(i, 1)
      end
    end
    local function raw_calls()
      for i = 1, 300 do
        db:first(sel_text, 1000 + i)
        db:exec(upd_text, i, 1)
      end
    end
    local function builder_calls()
      for i = 1, 300 do
        db:from("pw"):where("id", 1000 + i):first()
        db:update("pw"):set("n", i):where("id", 1):exec()
      end
    end
    local kib_raw = alloc.settled(raw_calls, { below = 1 })
    local kib = alloc.settled(prepared_calls, { below = 1 })
    local kib_builder = alloc.settled(builder_calls, { below = 1 })
    assert.is_true(kib <= kib_raw + 1,
      ("prepared %.2f KiB, raw SQL %.2f KiB over 300 calls"):format(kib, kib_raw))
    assert.is_true(kib_builder > kib + 30,
      ("builder %.2f KiB, prepared %.2f KiB over 300 calls"):format(kib_builder, kib))
  end)
end

describe("zever.db prepared queries on a sqlite file", function()
  local dir
  setup(function() dir = fs.tmpdir(nil, "zever-db-prepared") end)
  teardown(function() fs.rm_rf(dir) end)
  suite(function() return zdb.open("sqlite:" .. dir .. "/p.db") end, { alloc = true })
end)

describe("zever.db prepared queries on postgres #pg", function()
  local fx = pg_server.fixture("db_prepared")
  suite(function() return zdb.open(fx.dsn) end, {})
end)
