-- zever.db over the SQLite adapter's FFI path (issue #24): statements checked out by cache slot
-- after the first call, exec on the FFI path, transactions that reuse their handle. Every
-- answer is compared with what the classic binding (the same connection's raw calls) returns.

local zdb = require "zever.db"

local function fresh(opts)
  local db = assert(zdb.open("sqlite::memory:", opts))
  db:exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, n INTEGER)")
  return db
end

local function raised(fn, ...)
  local ok, e = pcall(fn, ...)
  assert.is_false(ok, "expected an error")
  return e
end

describe("zever.db fast path", function()
  local db
  after_each(function() if db and db:is_open() then db:close() end end)

  describe("statement lookup by slot", function()
    it("answers right while three texts share a cache of two statements (slots reused)", function()
      db = fresh({ statements = 2 })
      for i = 1, 5 do db:exec("INSERT INTO t (id, v, n) VALUES (?, ?, ?)", i, "v" .. i, i * 10) end
      local a = "SELECT v FROM t WHERE id = ?"
      local b = "SELECT n FROM t WHERE id = ?"
      local c = "SELECT id FROM t WHERE v = ?"
      for round = 1, 20 do
        local id = round % 5 + 1
        assert.are.same({ v = "v" .. id }, db:first(a, id))
        assert.are.same({ n = id * 10 }, db:first(b, id))
        assert.are.same({ id = id }, db:first(c, "v" .. id))
      end
      assert.are.equal(2, db.conn:cached())
    end)

    it("sees a column renamed by a schema change on a remembered statement", function()
      db = fresh()
      db:exec("INSERT INTO t (id, v) VALUES (1, 'x')")
      local q = "SELECT * FROM t WHERE id = ?"
      assert.are.equal("x", db:first(q, 1).v)
      db:exec("ALTER TABLE t RENAME COLUMN v TO w")
      local row = db:first(q, 1)
      assert.is_nil(row.v)
      assert.are.equal("x", row.w)
    end)

    it("reports a wrong number of values on a remembered statement as before", function()
      db = fresh()
      local q = "SELECT v FROM t WHERE id = ?"
      assert.is_nil(db:first(q, 1))
      local e = raised(db.first, db, q, 1, 2)
      assert.are.equal("invalid", e.code)
      assert.is_nil(db:first(q, 1))
    end)
  end)

  describe("binding values (up to three without a loop, more in one)", function()
    it("binds 1 to 5 values of every kind, and sends a BLOB or int64 in any place to the binding", function()
      db = fresh()
      db:exec("CREATE TABLE w (a, b, c, d, e)")
      local blob, big = zdb.blob("\0b\1"), 9007199254740993LL
      local kinds = { 7, 2.5, "s", true, zdb.null }
      kinds[#kinds + 1] = blob
      kinds[#kinds + 1] = big
      local cols = { "a", "b", "c", "d", "e" }
      for n = 1, 5 do
        for k = 1, #kinds do
          for at = 1, n do
            db:exec("DELETE FROM w")
            local vals = {}
            for i = 1, n do vals[i] = i end
            vals[at] = kinds[k]
            local names = table.concat(cols, ", ", 1, n)
            local marks = ("?, "):rep(n - 1) .. "?"
            assert.are.equal(1, db:exec("INSERT INTO w (" .. names .. ") VALUES (" .. marks .. ")",
              unpack(vals, 1, n)).changes)
            local where = {}
            for i = 1, n do where[i] = cols[i] .. " IS ?" end
            local row = db:first("SELECT " .. names .. " FROM w WHERE " ..
              table.concat(where, " AND "), unpack(vals, 1, n))
            assert.is_table(row, ("n=%d kind=%d at=%d: no row"):format(n, k, at))
            local want = vals[at]
            if want == true then want = 1 elseif want == zdb.null then want = nil end
            if want == blob then want = "\0b\1" end
            assert.are.equal(want, row[cols[at]], ("n=%d kind=%d at=%d"):format(n, k, at))
          end
        end
      end
    end)
  end)

  describe("rows made by a constructor of the statement's column names", function()
    it("decodes every type, NULL as a missing key, odd and repeated names, wide rows", function()
      db = fresh()
      local row = db:first([[SELECT 1 AS i, 2.5 AS f, 'x' AS s, x'00ff' AS b, x'' AS e,
        NULL AS z, 9007199254740993 AS big, 3 AS "a""q
]] .. "\n" .. [[", 4 AS "", 5 AS i]])
      assert.are.same({ i = 5, f = 2.5, s = "x", b = "\0\255", e = "",
        big = row.big, ['a"q\n\n'] = 3, [""] = 4 }, row)
      assert.is_nil(row.z)
      assert.are.equal("9007199254740993LL", tostring(row.big))
      for k in pairs(row) do assert.are_not.equal("z", k) end
      local cols = {}
      for i = 1, 30 do cols[i] = i .. " AS c" .. i end
      local wide = db:first("SELECT " .. table.concat(cols, ", "))
      for i = 1, 30 do assert.are.equal(i, wide["c" .. i]) end
      local rows = db:query("SELECT ? AS a, ? AS b UNION ALL SELECT NULL, 'q'", 1, 2)
      assert.are.same({ { a = 1, b = 2 }, { b = "q" } }, rows)
    end)
  end)

  describe("exec", function()
    it("returns changes and last_insert_id as the classic binding does", function()
      db = fresh()
      local r = db:exec("INSERT INTO t (v) VALUES (?)", "a")
      assert.are.same({ changes = 1, last_insert_id = 1 }, r)
      db:exec("INSERT INTO t (v) VALUES (?)", "b")
      r = db:exec("UPDATE t SET n = ? WHERE id > ?", 7, 0)
      assert.are.equal(2, r.changes)
      local changes, id = db.conn.raw:exec("UPDATE t SET n = ? WHERE id > ?", { 8, 0 })
      assert.are.equal(2, changes)
      assert.are.equal(r.last_insert_id, id)
    end)

    it("returns a rowid beyond 2^53 exactly, as an int64_t", function()
      db = fresh()
      local big = 9007199254740993LL -- 2^53 + 1
      local r = db:exec("INSERT INTO t (id, v) VALUES (?, 'big')", big)
      assert.are.equal("cdata", type(r.last_insert_id))
      assert.is_true(r.last_insert_id == big)
    end)

    it("raises a constraint error with the statement's text, and the statement stays usable", function()
      db = fresh()
      local ins = "INSERT INTO t (id, v) VALUES (?, ?)"
      db:exec(ins, 1, "a")
      local e = raised(db.exec, db, ins, 1, "b")
      assert.are.equal("constraint", e.code)
      assert.are.equal(ins, e.sql)
      assert.are.equal(1, db:exec(ins, 2, "b").changes)
    end)

    it("returns the changed count from the builder's update and delete", function()
      db = fresh()
      for i = 1, 3 do db:exec("INSERT INTO t (id, n) VALUES (?, 0)", i) end
      assert.are.equal(2, db:update("t"):set("n", 5):where("id", "<", 3):exec())
      assert.are.equal(1, db:delete_from("t"):where("id", 3):exec())
      local soft = db:try_handle()
      local n, err = soft:update("nosuch"):set("n", 1):exec()
      assert.is_nil(n)
      assert.are.equal("schema", err.code)
    end)
  end)

  describe("held statements (conn:hold: a prepared query's texts)", function()
    it("runs a prepared query's statements outside the statement cache, with the same rows", function()
      db = fresh({ statements = 8 })
      for i = 1, 3 do db:exec("INSERT INTO t (id, v, n) VALUES (?, ?, ?)", i, "v" .. i, i) end
      local before = db.conn:cached()
      local by_id = db:from("t"):where("id", db.param()):prepare()
      local set = db:update("t"):set("n", db.param()):where("id", db.param()):prepare()
      for round = 1, 3 do
        for id = 1, 4 do
          local want = id <= 3 and { id = id, v = "v" .. id, n = id + round - 1 } or nil
          assert.are.same(want, by_id:first(id))
          assert.are.same(want and { want } or {}, by_id:all(id))
          assert.are.equal(id <= 3 and 1 or 0, set:exec(id + round, id))
        end
      end
      assert.are.equal(before, db.conn:cached())
    end)

    it("answers alike for a text the cache ran before it was held", function()
      db = fresh({ statements = 2 })
      db:exec("INSERT INTO t (id, v) VALUES (1, 'a'), (2, 'b')")
      local q = "SELECT v FROM t WHERE id = ?"
      assert.are.same({ v = "a" }, db:first(q, 1))
      assert.is_true(db.conn:hold(q))
      assert.are.same({ v = "b" }, db:first(q, 2))
      db:exec("UPDATE t SET v = 'c' WHERE id = 1")
      -- Two other texts take both cache slots; the held text still answers.
      assert.are.same({ v = "c" }, db:first("SELECT v FROM t WHERE id = ? AND 1", 1))
      assert.are.same({ v = "b" }, db:first("SELECT v FROM t WHERE id = ? AND 2", 2))
      assert.are.same({ v = "c" }, db:first(q, 1))
    end)

    it("sees a column renamed by a schema change on a held statement", function()
      db = fresh()
      db:exec("INSERT INTO t (id, v) VALUES (1, 'x')")
      local q = db:from("t"):select("*"):where("id", db.param()):prepare()
      assert.are.equal("x", q:first(1).v)
      db:exec("ALTER TABLE t RENAME COLUMN v TO w")
      local row = q:first(1)
      assert.is_nil(row.v)
      assert.are.equal("x", row.w)
    end)

    it("reports errors of a held text as the cache path does, and stays usable", function()
      db = fresh()
      local ins = db:update("t"):set("v", db.param()):where("id", db.param()):prepare()
      local text = ins:to_sql()
      assert.is_true(db.conn:hold(text))
      local e = raised(db.exec, db, text, 1) -- one value for two placeholders
      assert.are.equal("invalid", e.code)
      db:exec("CREATE UNIQUE INDEX t_v ON t (v)")
      db:exec("INSERT INTO t (id, v) VALUES (1, 'a'), (2, 'b')")
      e = raised(ins.exec, ins, "a", 2)
      assert.are.equal("constraint", e.code)
      assert.are.equal(text, e.sql)
      assert.are.equal(1, ins:exec("c", 2))
      assert.are.equal("c", db:first("SELECT v FROM t WHERE id = 2").v)
    end)

    it("holds at most 64 texts (transactions 16 more); later ones take the statement cache", function()
      db = fresh({ statements = 64 })
      db:exec("INSERT INTO t (id, n) VALUES (1, 7)")
      local qs = {}
      for i = 1, 66 do
        qs[i] = db:from("t"):select(db.raw("n + 0 * " .. i .. " AS n")):where("id", db.param())
          :prepare()
      end
      local before = db.conn:cached()
      for i = 1, 66 do assert.are.same({ n = 7 }, qs[i]:first(1)) end
      assert.is_true(db.conn:cached() > before) -- the texts past the limit went to the cache
      assert.is_false(db.conn:hold("SELECT 'one more'"))
      -- Transactions still run on held statements: the cache does not grow.
      local cached = db.conn:cached()
      db:transaction(function(tx) tx:transaction(function() end) end)
      assert.are.equal(cached, db.conn:cached())
    end)

    it("answers closed once the database is closed", function()
      db = fresh()
      local by_id = db:from("t"):where("id", db.param()):prepare()
      assert.is_nil(by_id:first(1))
      db:close()
      local e = raised(by_id.first, by_id, 1)
      assert.are.equal("closed", e.code)
      assert.is_false(db.conn:hold("SELECT 1"))
    end)
  end)

  describe("transaction", function()
    it("commits again and again through one reused handle, nested savepoints too", function()
      db = fresh()
      local seen = {}
      for i = 1, 3 do
        local r1, r2 = db:transaction(function(tx)
          seen[#seen + 1] = tx
          tx:exec("INSERT INTO t (id, n) VALUES (?, 0)", i)
          tx:transaction(function(sp) sp:exec("UPDATE t SET n = ? WHERE id = ?", i, i) end)
          return i, "done"
        end)
        assert.are.equal(i, r1)
        assert.are.equal("done", r2)
      end
      assert.are.equal(seen[1], seen[3])
      assert.are.equal(6, db:first("SELECT sum(n) AS s FROM t").s)
    end)

    it("rolls back and re-raises fn's error, and the next transaction works", function()
      db = fresh()
      local e = raised(db.transaction, db, function(tx)
        tx:exec("INSERT INTO t (id) VALUES (1)")
        error({ mine = true })
      end)
      assert.is_true(e.mine)
      assert.is_nil(db:first("SELECT id FROM t"))
      db:transaction(function(tx) tx:exec("INSERT INTO t (id) VALUES (2)") end)
      assert.are.equal(2, db:first("SELECT id FROM t").id)
      assert.is_false(db:in_transaction())
    end)

    it("runs BEGIN, COMMIT and savepoints as statements held outside the statement cache", function()
      db = fresh({ statements = 8 })
      assert.is_nil(db:first("SELECT id FROM t WHERE id = ?", 1))
      local before = db.conn:cached() -- the CREATE TABLE and the SELECT
      assert.are.equal(2, before)
      for _ = 1, 3 do
        db:transaction(function(tx)
          tx:transaction(function(sp) sp:transaction(function() end) end)
        end)
      end
      assert.are.equal(before, db.conn:cached())
      assert.is_false(db:in_transaction())
    end)

    it("reports a busy BEGIN on the held statement, which works again afterwards", function()
      local path = os.tmpname()
      db = assert(zdb.open("sqlite:" .. path, { busy_timeout = 0 }))
      db:exec("CREATE TABLE t (id INTEGER PRIMARY KEY)")
      local other = assert(zdb.open("sqlite:" .. path))
      local ok, e = pcall(function()
        other:transaction(function(tx)
          tx:exec("INSERT INTO t (id) VALUES (1)")
          db:transaction(function(mine) mine:exec("INSERT INTO t (id) VALUES (2)") end)
        end)
      end)
      other:close()
      assert.is_false(ok)
      assert.is_true(zdb.is_error(e), tostring(e))
      assert.are.equal("busy", e.code)
      assert.are.equal("BEGIN IMMEDIATE", e.sql)
      assert.is_false(db:in_transaction())
      db:transaction(function(tx) tx:exec("INSERT INTO t (id) VALUES (3)") end)
      assert.are.same({ { id = 3 } }, db:query("SELECT id FROM t ORDER BY id"))
      db:close()
      os.remove(path)
      os.remove(path .. "-wal")
      os.remove(path .. "-shm")
    end)

    it("raises a failing COMMIT as a db error and rolls the transaction back", function()
      db = fresh()
      db:exec("CREATE TABLE p (id INTEGER PRIMARY KEY)")
      db:exec("CREATE TABLE c (pid INTEGER REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED)")
      local e = raised(db.transaction, db, function(tx)
        tx:exec("INSERT INTO c (pid) VALUES (99)") -- checked at COMMIT
        return "not returned"
      end)
      assert.is_true(zdb.is_error(e), tostring(e))
      assert.are.equal("constraint", e.code)
      assert.are.equal("COMMIT", e.sql)
      assert.is_false(db:in_transaction())
      assert.is_nil(db:first("SELECT pid FROM c"))
      db:transaction(function(tx) tx:exec("INSERT INTO p (id) VALUES (99)") end)
      assert.are.equal(99, db:first("SELECT id FROM p").id)
    end)

    it("sends other texts to exec from conn:control, and answers closed once closed", function()
      db = fresh()
      local conn = db.conn
      assert.are.equal(0, conn:control("SELECT 1")) -- has a column: exec's result
      local ok, code, message = conn:control("SELEC")
      assert.is_nil(ok)
      assert.are.equal("syntax", code)
      assert.matches("SELEC", message)
      assert.is_true(conn:control("BEGIN IMMEDIATE"))
      ok, code, message = conn:control("BEGIN IMMEDIATE")
      assert.is_nil(ok)
      assert.are.equal("string", type(code))
      assert.matches("within a transaction", message)
      assert.is_true(conn:control("ROLLBACK"))
      db:close()
      ok, code = conn:control("BEGIN IMMEDIATE")
      assert.is_nil(ok)
      assert.are.equal("closed", code)
      local e = raised(db.transaction, db, function() end)
      assert.are.equal("closed", e.code)
    end)

    it("refuses a handle used after its transaction", function()
      db = fresh()
      local kept
      db:transaction(function(tx) kept = tx end)
      local e = raised(kept.exec, kept, "INSERT INTO t (id) VALUES (1)")
      assert.matches("finished", tostring(e))
    end)

    it("gives a try handle transaction handles that keep its soft errors", function()
      db = fresh()
      db:transaction(function() end) -- the strict handle caches its own
      local soft = db:try_handle()
      local r, err = soft:transaction(function(tx)
        local ok, e = tx:exec("INSERT INTO nosuch VALUES (1)")
        assert.is_nil(ok)
        return e.code
      end)
      assert.are.equal("schema", r)
      assert.is_nil(err)
    end)
  end)
end)
