-- zever.sqlite: the SQLite binding (host/sqlite/l_sqlite.c) on real :memory: and file databases.

local sqlite = require "zever.sqlite"
local ffi = require "ffi"

local files = require "spec.support.files"
local tmpdb, cleanup = files.tmp_sqlite, files.rm_sqlite

describe("zever.sqlite", function()
  local c

  before_each(function()
    c = assert(sqlite.open(":memory:"))
    assert(c:exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, n INTEGER, f REAL, b BLOB)"))
  end)

  after_each(function()
    c:close()
  end)

  describe("exec", function()
    it("returns the number of changes and the last inserted id", function()
      local changes, id = c:exec("INSERT INTO t (v) VALUES (?), (?)", { "a", "b" })
      assert.are.equal(2, changes)
      assert.are.equal(2, id)
    end)

    it("runs several statements without values", function()
      assert(c:exec("INSERT INTO t (v) VALUES ('x'); INSERT INTO t (v) VALUES ('y');"))
      assert.are.equal(2, #c:query("SELECT * FROM t"))
    end)

    it("refuses values for several statements", function()
      local ok, _, code = c:exec("INSERT INTO t (v) VALUES (?); SELECT 1", { 1 })
      assert.is_nil(ok)
      assert.are.equal("invalid", code)
    end)

    it("reports a constraint violation with the SQL but not the values", function()
      assert(c:exec("INSERT INTO t (id, v) VALUES (?, ?)", { 1, "secret-value" }))
      local ok, msg, code = c:exec("INSERT INTO t (id, v) VALUES (?, ?)", { 1, "secret-value" })
      assert.is_nil(ok)
      assert.are.equal("constraint", code)
      assert.truthy(msg:find("INSERT INTO t", 1, true))
      assert.is_nil(msg:find("secret-value", 1, true))
    end)

    it("names syntax and schema errors", function()
      local _, _, code = c:exec("SELEC 1")
      assert.are.equal("syntax", code)
      _, _, code = c:exec("SELECT * FROM missing")
      assert.are.equal("schema", code)
    end)

    it("treats double-quoted unknown names as errors, not strings", function()
      local _, _, code = c:query('SELECT "nope" FROM t')
      assert.are.equal("schema", code)
    end)

    it("checks the number of values against the placeholders", function()
      local ok, msg, code = c:exec("INSERT INTO t (v, n) VALUES (?, ?)", { "a" })
      assert.is_nil(ok)
      assert.are.equal("invalid", code)
      assert.truthy(msg:find("2 placeholders but 1", 1, true))
    end)

    it("refuses a table as a value", function()
      local ok, _, code = c:exec("INSERT INTO t (v) VALUES (?)", { {} })
      assert.is_nil(ok)
      assert.are.equal("invalid", code)
    end)
  end)

  describe("values", function()
    it("round-trips text, integers, reals, booleans and NULL", function()
      assert(c:exec("INSERT INTO t (id, v, n, f) VALUES (?, ?, ?, ?)", { 1, "h\0i", true, 1.5 }))
      assert(c:exec("INSERT INTO t (id, v, n) VALUES (?, ?, ?)", { 2, sqlite.null, false }))
      local rows = c:query("SELECT * FROM t ORDER BY id")
      assert.are.same({ id = 1, v = "h\0i", n = 1, f = 1.5 }, rows[1])
      assert.are.same({ id = 2, n = 0 }, rows[2])
    end)

    it("binds nil inside a counted list as NULL", function()
      assert(c:exec("INSERT INTO t (id, v) VALUES (?, ?)", { 1, nil }, 2))
      assert.is_nil(c:first("SELECT v FROM t").v)
    end)

    it("round-trips int64 values beyond 2^53 exactly as int64 cdata", function()
      local big = ffi.new("int64_t", 9007199254740993LL)
      local neg = -9223372036854775807LL - 1
      assert(c:exec("INSERT INTO t (id, n) VALUES (1, ?), (2, ?), (3, ?)", { big, neg, 2 ^ 53 }))
      local rows = c:query("SELECT n FROM t ORDER BY id")
      assert.are.equal("cdata", type(rows[1].n))
      assert.is_true(rows[1].n == 9007199254740993LL)
      assert.is_true(rows[2].n == neg)
      assert.are.equal("number", type(rows[3].n))
      assert.are.equal(2 ^ 53, rows[3].n)
      assert.is_true(c:first("SELECT n + 1 AS m FROM t WHERE id = 1").m == 9007199254740994LL)
    end)

    it("binds uint64 cdata", function()
      assert(c:exec("INSERT INTO t (id, n) VALUES (1, ?)", { 123ULL }))
      assert.are.equal(123, c:first("SELECT n FROM t").n)
    end)

    it("stores blobs and reads them back as strings", function()
      local bytes = "\0\1\2\255"
      assert(c:exec("INSERT INTO t (id, b) VALUES (1, ?)", { sqlite.blob(bytes) }))
      local row = c:first("SELECT b, typeof(b) AS ty FROM t")
      assert.are.equal(bytes, row.b)
      assert.are.equal("blob", row.ty)
    end)
  end)

  describe("query, first and each", function()
    before_each(function()
      for i = 1, 5 do assert(c:exec("INSERT INTO t (id, v) VALUES (?, ?)", { i, "v" .. i })) end
    end)

    it("returns rows keyed by column name", function()
      local rows = c:query("SELECT id, v FROM t WHERE id > ? ORDER BY id", { 3 })
      assert.are.same({ { id = 4, v = "v4" }, { id = 5, v = "v5" } }, rows)
    end)

    it("returns an empty list when nothing matches and nil from first", function()
      assert.are.same({}, c:query("SELECT * FROM t WHERE id > 99"))
      assert.is_nil(c:first("SELECT * FROM t WHERE id > 99"))
    end)

    it("streams rows to each and stops when the callback returns false", function()
      local seen = {}
      local n = c:each("SELECT id FROM t ORDER BY id", nil, nil, function(row)
        seen[#seen + 1] = row.id
        if row.id == 3 then return false end
      end)
      assert.are.equal(3, n)
      assert.are.same({ 1, 2, 3 }, seen)
    end)

    it("re-raises an error from each's callback and leaves the statement usable", function()
      assert.has_error(function()
        c:each("SELECT id FROM t", nil, nil, function() error("stop here") end)
      end)
      assert.are.equal(5, #c:query("SELECT id FROM t"))
    end)

    it("runs the same statement nested inside each", function()
      local pairs_seen = 0
      c:each("SELECT id FROM t", nil, nil, function()
        pairs_seen = pairs_seen + #c:query("SELECT id FROM t")
      end)
      assert.are.equal(25, pairs_seen)
    end)
  end)

  describe("statement cache", function()
    it("reuses statements and stays within its bound", function()
      local small = assert(sqlite.open(":memory:", { statements = 4 }))
      for i = 1, 20 do assert(small:query("SELECT " .. i)) end
      assert.are.equal(4, small:cached())
      for _ = 1, 3 do assert(small:query("SELECT 20")) end
      assert.are.equal(4, small:cached())
      small:close()
    end)
  end)

  describe("close", function()
    it("makes every call return closed", function()
      c:close()
      assert.is_false(c:is_open())
      for _, m in ipairs { "exec", "query", "first" } do
        local ok, _, code = c[m](c, "SELECT 1")
        assert.is_nil(ok)
        assert.are.equal("closed", code)
      end
      assert.is_true(c:close())
    end)

    it("stops an each loop whose callback closes the connection", function()
      assert(c:exec("INSERT INTO t (v) VALUES ('a'), ('b')"))
      local ok, _, code = c:each("SELECT * FROM t", nil, nil, function() c:close() end)
      assert.is_nil(ok)
      assert.are.equal("closed", code)
    end)
  end)

  describe("files", function()
    it("opens a file in WAL mode with foreign keys on", function()
      local path = tmpdb()
      local f = assert(sqlite.open(path))
      assert.are.equal("wal", f:first("PRAGMA journal_mode").journal_mode)
      assert.are.equal(1, f:first("PRAGMA foreign_keys").foreign_keys)
      f:close()
      cleanup(path)
    end)

    it("reports busy when another connection holds the write lock", function()
      local path = tmpdb()
      local a = assert(sqlite.open(path))
      local b = assert(sqlite.open(path, { busy_timeout = 10 }))
      assert(a:exec("CREATE TABLE x (v)"))
      assert(a:exec("BEGIN IMMEDIATE"))
      local ok, _, code = b:exec("INSERT INTO x VALUES (1)")
      assert.is_nil(ok)
      assert.are.equal("busy", code)
      assert(a:exec("ROLLBACK"))
      a:close()
      b:close()
      cleanup(path)
    end)

    it("fails to open a path in a missing folder", function()
      local ok, _, code = sqlite.open("/nonexistent-dir/x.db")
      assert.is_nil(ok)
      assert.are.equal("cantopen", code)
    end)
  end)

  describe("process set-up", function()
    -- configure_once turns SQLite's memory statistics off before it initializes (a mutex on
    -- every allocation, shared by the worker threads): the library then counts nothing.
    it("runs SQLite without memory statistics", function()
      local path = tmpdb()
      local f = assert(sqlite.open(path))
      assert(f:exec("CREATE TABLE m (id INTEGER PRIMARY KEY, v TEXT)"))
      for i = 1, 50 do assert(f:exec("INSERT INTO m (v) VALUES (?)", { ("x"):rep(i) })) end
      assert.are.equal(50, #assert(f:query("SELECT * FROM m")))
      assert.are.equal(0, sqlite.memory_used())
      f:close()
      cleanup(path)
    end)

    it("opens a new file from several processes at once (the switch to WAL waits its turn)",
      function()
        -- SQLite answers the switch of a new file to WAL with SQLITE_BUSY at once when another
        -- process holds a lock (no busy handler there); before the open retried it, about one
        -- round in twelve of four processes failed with "database is locked".
        local process = require "spec.support.process"
        local HERE = debug.getinfo(1, "S").source:sub(2):match("^(.*)/[^/]*$") or "."
        local cmd = process.quote(require("zever.sys").exe()) .. " run " ..
          process.quote(HERE .. "/../fixtures/sqlite_open_new.lua") .. " "
        for _ = 1, 50 do
          local path = tmpdb()
          local outs = process.together(cmd .. process.quote(path), 4)
          for i = 1, 4 do assert.are.equal("ok\n", outs[i]) end
          cleanup(path)
        end
      end)

    it("serves worker threads writing and reading one file, each on its own connection", function()
      -- (the mutexes SQLite shares between the threads spin before they block)
      local threads = require "zever.threads"
      local path = tmpdb()
      local f = assert(sqlite.open(path))
      assert(f:exec("CREATE TABLE w (id INTEGER PRIMARY KEY, n INTEGER)"))
      local out = os.tmpname()
      local p1 = threads.start(1, "spec.fixtures.sqlite_worker", path .. "|0|300|" .. out .. ".1")
      local p2 = threads.start(1, "spec.fixtures.sqlite_worker", path .. "|1000|300|" .. out .. ".2")
      p1:join()
      p2:join()
      for _, suffix in ipairs { ".1", ".2" } do
        local h = assert(io.open(out .. suffix))
        assert.are.equal("done 300", h:read("*a"))
        h:close()
        os.remove(out .. suffix)
      end
      os.remove(out)
      assert.are.equal(600, f:first("SELECT count(*) AS n FROM w").n)
      assert.are.equal(300, f:first("SELECT count(*) AS n FROM w WHERE id > 1000").n)
      f:close()
      cleanup(path)
    end)

    -- configure_once registers "zever-unix" (unix with a fence-only WAL-index barrier) as the
    -- default VFS: WAL readers on other threads still see whole, ordered snapshots.
    it("opens files through the zever-unix VFS", function()
      assert.are.equal("zever-unix", sqlite.vfs())
    end)

    -- writegate.c: a thread waiting for the write lock is woken by the commit that frees it,
    -- not by the end of SQLite's default sleep (1, 2, 5 ... ms).
    it("wakes a thread waiting for the write lock when another connection commits", function()
      local threads = require "zever.threads"
      local process = require "spec.support.process"
      local path = tmpdb()
      local f = assert(sqlite.open(path))
      assert(f:exec("CREATE TABLE g (id INTEGER PRIMARY KEY, n INTEGER)"))
      assert(f:exec("INSERT INTO g (id, n) VALUES (1, 0), (2, 0)"))
      local out = os.tmpname()
      -- The worker may leave its wait by its own delay just before the commit and miss the
      -- wake-up (then it finds the lock free anyway): a round that saw no wake-up is repeated.
      local woken, rounds = false, 0
      while not woken and rounds < 20 do
        rounds = rounds + 1
        local _, before = sqlite.gate()
        assert(f:exec("BEGIN IMMEDIATE"))
        local t = threads.start(1, "spec.fixtures.sqlite_gate_worker", path .. "|" .. out)
        assert.is_true(process.wait_for(function() return (sqlite.gate()) >= 1 end, 30))
        assert(f:exec("UPDATE g SET n = n + 1 WHERE id = 2")) -- a commit that writes (WAL hook)
        assert(f:exec("COMMIT"))
        t:join()
        local h = assert(io.open(out))
        assert.are.equal("done", h:read("*a"))
        h:close()
        local _, after = sqlite.gate()
        woken = after > before
      end
      os.remove(out)
      assert.is_true(woken)
      assert.are.equal(rounds, f:first("SELECT n FROM g WHERE id = 1").n)
      f:close()
      cleanup(path)
    end)

    it("still checkpoints the WAL every 1000 pages (the hook replaces SQLite's own)", function()
      local path = tmpdb()
      local w = assert(sqlite.open(path))
      assert(w:exec("CREATE TABLE b (id INTEGER PRIMARY KEY, v BLOB)"))
      local page = assert(w:first("PRAGMA page_size")).page_size
      local v = sqlite.blob(string.rep("x", page))
      for _ = 1, 2500 do assert(w:exec("INSERT INTO b (v) VALUES (?)", { v })) end
      -- Each insert writes two pages or more (the row's overflow page and the table's leaf):
      -- unchecked, the WAL would hold 5000+ pages; checkpointed, it restarts after 1000.
      local h = assert(io.open(path .. "-wal", "rb"))
      local size = h:seek("end")
      h:close()
      assert.is_true(size < 1500 * (page + 24), "WAL of " .. size .. " bytes")
      assert.are.equal(2500, w:first("SELECT count(*) AS n FROM b").n)
      w:close()
      cleanup(path)
    end)

    it("keeps busy_timeout: a writer gives up with busy once the lock is held that long", function()
      local path = tmpdb()
      local a = assert(sqlite.open(path))
      local b = assert(sqlite.open(path, { busy_timeout = 30 }))
      assert(a:exec("CREATE TABLE g (id INTEGER PRIMARY KEY)"))
      assert(a:exec("BEGIN IMMEDIATE"))
      local ok, msg, code = b:exec("BEGIN IMMEDIATE")
      assert.is_nil(ok)
      assert.are.equal("busy", code)
      assert.matches("locked", msg)
      assert(a:exec("COMMIT"))
      assert(b:exec("BEGIN IMMEDIATE"))
      assert(b:exec("COMMIT"))
      local z = assert(sqlite.open(path, { busy_timeout = 0 }))
      assert(a:exec("BEGIN IMMEDIATE"))
      assert.are.equal("busy", select(3, z:exec("BEGIN IMMEDIATE")))
      assert(a:exec("COMMIT"))
      a:close(); b:close(); z:close()
      cleanup(path)
    end)

    it("gives readers on other threads whole snapshots while a writer commits", function()
      local threads = require "zever.threads"
      local path = tmpdb()
      local f = assert(sqlite.open(path))
      assert(f:exec("CREATE TABLE pair (id INTEGER PRIMARY KEY, n INTEGER)"))
      assert(f:exec("INSERT INTO pair (id, n) VALUES (1, 0), (2, 0)"))
      local out = os.tmpname()
      local w = threads.start(1, "spec.fixtures.sqlite_snapshot_worker",
        "write|" .. path .. "|400|" .. out .. ".w")
      local r1 = threads.start(1, "spec.fixtures.sqlite_snapshot_worker",
        "read|" .. path .. "|3000|" .. out .. ".1")
      local r2 = threads.start(1, "spec.fixtures.sqlite_snapshot_worker",
        "read|" .. path .. "|3000|" .. out .. ".2")
      w:join()
      r1:join()
      r2:join()
      local function result(suffix)
        local h = assert(io.open(out .. suffix))
        local s = h:read("*a")
        h:close()
        os.remove(out .. suffix)
        return s
      end
      assert.are.equal("done 400", result(".w"))
      assert.matches("^done 3000 last %d+$", result(".1"))
      assert.matches("^done 3000 last %d+$", result(".2"))
      os.remove(out)
      local row = f:first("SELECT (SELECT n FROM pair WHERE id = 1) AS a, " ..
        "(SELECT n FROM pair WHERE id = 2) AS b")
      assert.are.same({ a = 400, b = 400 }, row)
      f:close()
      cleanup(path)
    end)
  end)
end)
