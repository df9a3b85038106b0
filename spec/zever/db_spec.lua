-- luacheck: no max line length
-- zever.db: the database front-end over the SQLite adapter: raw SQL, the builder's terminals,
-- LIKE escaping end to end, transactions and savepoints.

local zdb = require "zever.db"
local errors = require "zever.errors"
local json = require "zever.json"

-- The error fn(...) raises (it must raise).
local function raised(fn, ...)
  local ok, e = pcall(fn, ...)
  assert.is_false(ok, "expected an error")
  return e
end

local function fresh()
  local db = assert(zdb.open("sqlite::memory:"))
  assert(db:exec([[CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT UNIQUE NOT NULL, name TEXT,
    age INTEGER, team TEXT)]]))
  assert(db:exec([[CREATE TABLE jobs (id INTEGER PRIMARY KEY, attempt INTEGER NOT NULL DEFAULT 0,
    claimed_by TEXT)]]))
  return db
end

describe("zever.db", function()
  local db

  before_each(function() db = fresh() end)
  after_each(function() if db:is_open() then db:close() end end)

  describe("open", function()
    it("rejects a DSN without a scheme", function()
      local ok, err = zdb.open("app.db")
      assert.is_nil(ok)
      assert.are.equal("invalid", err.code)
    end)

    it("reports an unknown adapter as unavailable", function()
      local ok, err = zdb.open("nosuch:thing")
      assert.is_nil(ok)
      assert.are.equal("unavailable", err.code)
    end)

    it("opens a file database from sqlite:path", function()
      local path = os.tmpname()
      local f = assert(zdb.open("sqlite:" .. path))
      assert.are.equal("sqlite", f.dialect)
      f:close()
      os.remove(path); os.remove(path .. "-wal"); os.remove(path .. "-shm")
    end)
  end)

  describe("raw SQL", function()
    it("exec returns changes and last_insert_id", function()
      local res = assert(db:exec("INSERT INTO users (email, age) VALUES (?, ?)", "a@x", 30))
      assert.are.same({ changes = 1, last_insert_id = 1 }, res)
    end)

    it("query and first take values or one list of values", function()
      db:exec("INSERT INTO users (email, age) VALUES (?, ?)", "a@x", 30)
      assert.are.equal("a@x", db:query("SELECT email FROM users WHERE age = ?", 30)[1].email)
      assert.are.equal("a@x", db:first("SELECT email FROM users WHERE age = ?", { 30 }).email)
      assert.is_nil(db:first("SELECT email FROM users WHERE age = ?", 99))
    end)

    it("binds nil values as NULL", function()
      assert(db:exec("INSERT INTO users (email, name) VALUES (?, ?)", "a@x", nil))
      assert.is_nil(db:first("SELECT name FROM users").name)
    end)

    it("raises a typed error with the SQL and never the values", function()
      db:exec("INSERT INTO users (email) VALUES (?)", "dup@x")
      local err = raised(db.exec, db, "INSERT INTO users (email) VALUES (?)", "dup@x")
      assert.is_true(errors.is(err, "constraint"))
      assert.are.equal("db", err.battery)
      assert.are.equal("INSERT INTO users (email) VALUES (?)", err.sql)
      assert.truthy(err.message:find("INSERT INTO users", 1, true))
      assert.is_nil(tostring(err):find("dup@x", 1, true))
      assert.truthy(tostring(err):find("^db: constraint: "))
      assert.is_true(zdb.is_error(err))
    end)

    it("raises on a table that does not exist, from raw SQL and from the builder", function()
      for _, call in ipairs {
        function() return db:first("SELECT * FROM nope WHERE id = ?", 1) end,
        function() return db:query("SELECT * FROM nope") end,
        function() return db:exec("DELETE FROM nope") end,
        function() return db:from("nope"):where("id", 1):first() end,
        function() return db:from("nope"):all() end,
        function() return db:from("nope"):count() end,
        function() return db:insert_into("nope"):values { a = 1 }:exec() end,
      } do
        local err = raised(call)
        assert.are.equal("schema", err.code)
        assert.truthy(err.sql:find("nope", 1, true))
      end
    end)

    it("raises a syntax error as code syntax", function()
      assert.are.equal("syntax", raised(db.query, db, "SELEC 1").code)
    end)

    it("returns nil from first only when there is no row", function()
      local row, err = db:first("SELECT * FROM users WHERE id = ?", 42)
      assert.is_nil(row)
      assert.is_nil(err)
      assert.is_nil(db:from("users"):where("id", 42):first())
    end)

    it("gives query results as JSON arrays, [] when there is no row", function()
      assert.are.equal("[]", json.encode(db:query("SELECT * FROM users")))
      assert.are.equal('{"users":[]}', json.encode({ users = db:from("users"):all() }))
      assert(db:exec("INSERT INTO users (email) VALUES ('a@x')"))
      assert.are.equal('[{"email":"a@x"}]', json.encode(db:query("SELECT email FROM users")))
    end)

    it("binds a decoded JSON array as a list of values", function()
      local ids = json.decode("[1, 2]")
      assert.are.equal(3, db:first("SELECT ? + ? AS n", ids).n)
    end)

    it("binds values given one by one exactly as the same values in one list", function()
      assert(db:exec("CREATE TABLE wide (a, b, c, d, e, f, g, h, i)"))
      local values = { 1, "two", 3.5, true, false, nil, "", 2 ^ 53, "nine", n = 9 }
      local sql = "INSERT INTO wide VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
      assert(db:exec(sql, unpack(values, 1, 9)))                -- 9: more than the scratch list
      assert(db:exec("INSERT INTO wide (a, b, c, d, e, f, g, h) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        unpack(values, 1, 8)))
      assert(db:exec(sql, values))
      local rows = db:query("SELECT * FROM wide ORDER BY rowid")
      assert.are.equal(3, #rows)
      for _, row in ipairs(rows) do
        assert.are.same({ a = 1, b = "two", c = 3.5, d = 1, e = 0, g = "", h = 2 ^ 53 },
          { a = row.a, b = row.b, c = row.c, d = row.d, e = row.e, f = row.f, g = row.g, h = row.h })
      end
      assert.are.equal("nine", rows[1].i)
      assert.is_nil(rows[2].i)
      assert.are.equal(3, db:first("SELECT count(*) AS n FROM wide WHERE a = ? AND b = ? AND c = ? AND d = ?",
        1, "two", 3.5, true).n)
    end)

    -- The Lua heap these calls allocate (none once compiled) is measured by the ExecFourValues
    -- and ExecEightValues rows of bench/db_lua_bench.lua: an allocation count in a spec failed
    -- under load (49.4 KB for 2,000 calls once), so it lives in the benchmark.
    it("binds up to 8 separate values on exec, call after call", function()
      assert(db:exec("CREATE TABLE wide (a, b, c, d, e, f, g, h)"))
      assert(db:exec("INSERT INTO wide VALUES (1, 2, 3, 4, 5, 6, 7, 8)"))
      local four = "UPDATE wide SET a = ? WHERE b = ? AND c = ? AND d = ?"
      local eight = "UPDATE wide SET a = ? WHERE b = ? AND c = ? AND d = ? AND e = ? AND f = ? AND g = ? AND h = ?"
      local function run(n)
        local changed = 0
        for _ = 1, n do
          changed = changed + db:exec(four, 1, 2, 3, 4).changes
          changed = changed + db:exec(eight, 1, 2, 3, 4, 5, 6, 7, 8).changes
        end
        return changed
      end
      assert.are.equal(4000, run(2000)) -- long enough for LuaJIT to compile the loop
      assert.are.equal(2000, run(1000))
      assert.are.equal(0, db:exec(eight, 1, 2, 3, 4, 5, 6, 7, 9).changes)
    end)

    it("raises on a non-string SQL argument", function()
      assert.has_error(function() db:exec(42) end)
    end)

    it("raises closed after close", function()
      db:close()
      assert.are.equal("closed", raised(db.query, db, "SELECT 1").code)
    end)
  end)

  describe("try", function()
    it("returns fn's results when nothing fails", function()
      local a, b = db:try(function(d) return d:first("SELECT 1 AS x").x, "two" end)
      assert.are.equal(1, a)
      assert.are.equal("two", b)
    end)

    it("returns nil, err for a db error", function()
      assert(db:exec("INSERT INTO users (email) VALUES ('a@x')"))
      local ok, err = db:try(function(d)
        return d:insert_into("users"):values { email = "a@x" }:exec()
      end)
      assert.is_nil(ok)
      assert.is_true(errors.is(err, "constraint"))
    end)

    it("returns only the codes asked for and re-raises the others", function()
      local ok, err = db:try(function(d) return d:exec("INSERT INTO users (name) VALUES ('x')") end,
        "constraint")
      assert.is_nil(ok)
      assert.are.equal("constraint", err.code)
      local e = raised(db.try, db, function(d) return d:query("SELECT * FROM nope") end, "constraint")
      assert.are.equal("schema", e.code)
    end)

    it("re-raises an error that is not a db error", function()
      assert.has_error(function() db:try(function() error("boom", 0) end) end, "boom")
    end)

    it("runs in a savepoint inside a transaction, which stays usable", function()
      assert(db:exec("INSERT INTO users (email) VALUES ('a@x')"))
      db:transaction(function(tx)
        tx:exec("INSERT INTO users (email) VALUES ('b@x')")
        local ok, err = tx:try(function(t)
          t:exec("INSERT INTO users (email) VALUES ('c@x')")
          return t:exec("INSERT INTO users (email) VALUES ('a@x')")
        end)
        assert.is_nil(ok)
        assert.are.equal("constraint", err.code)
        tx:exec("INSERT INTO users (email) VALUES ('d@x')")
      end)
      local emails = {}
      for _, r in ipairs(db:query("SELECT email FROM users ORDER BY email")) do emails[#emails + 1] = r.email end
      assert.are.same({ "a@x", "b@x", "d@x" }, emails)
    end)
  end)

  describe("try_handle", function()
    it("returns nil, err where the db raises", function()
      local h = db:try_handle()
      local rows, err = h:query("SELECT * FROM nope")
      assert.is_nil(rows)
      assert.are.equal("schema", err.code)
      assert.are.equal(1, h:first("SELECT 1 AS x").x)
      raised(db.query, db, "SELECT * FROM nope")
    end)
  end)

  describe("builder terminals", function()
    before_each(function()
      assert(db:insert_into("users"):values {
        { email = "ann@x", name = "Ann", age = 31, team = "red" },
        { email = "bob@x", name = "Bob", age = 17, team = "blue" },
        { email = "cy@x", name = "Cy", age = 45, team = "red" },
      }:exec())
    end)

    it("all returns every matching row", function()
      local rows = db:from("users"):select("name"):where("team", "red"):order_by("name"):all()
      assert.are.same({ { name = "Ann" }, { name = "Cy" } }, rows)
    end)

    it("first returns one row without changing the query", function()
      local q = db:from("users"):order_by("age", "desc")
      assert.are.equal("Cy", q:first().name)
      assert.are.equal(3, #q:all())
    end)

    it("count counts, also with group_by and limit", function()
      assert.are.equal(3, db:from("users"):count())
      assert.are.equal(2, db:from("users"):where("team", "red"):count())
      assert.are.equal(2, db:from("users"):select("team"):group_by("team"):count())
      assert.are.equal(1, db:from("users"):limit(1):count())
    end)

    it("exists says whether a row matches", function()
      assert.is_true(db:from("users"):where("age", ">", 40):exists())
      assert.is_false(db:from("users"):where("age", ">", 90):exists())
    end)

    it("each streams rows", function()
      local names = {}
      local n = db:from("users"):order_by("id"):each(function(r) names[#names + 1] = r.name end)
      assert.are.equal(3, n)
      assert.are.same({ "Ann", "Bob", "Cy" }, names)
    end)

    it("insert returning gives the rows back", function()
      local rows = db:insert_into("users"):values { email = "dee@x", name = "Dee" }:returning("id", "name"):exec()
      assert.are.same({ { id = 4, name = "Dee" } }, rows)
    end)

    it("on_conflict do_nothing skips and do_update merges", function()
      local res = db:insert_into("users"):values { email = "ann@x", name = "X" }:on_conflict("email"):do_nothing():exec()
      assert.are.equal(0, res.changes)
      db:insert_into("users"):values { email = "ann@x", name = "Anne" }:on_conflict("email")
        :do_update { name = db.excluded("name") }:exec()
      assert.are.equal("Anne", db:from("users"):where("email", "ann@x"):first().name)
    end)

    it("update with an expression returns the number of changed rows", function()
      db:insert_into("jobs"):values { { attempt = 0 }, { attempt = 2 } }:exec()
      local n = db:update("jobs"):set { attempt = db.col("attempt") + 1, claimed_by = "" }:where("attempt", "<", 5):exec()
      assert.are.equal(2, n)
      assert.are.same({ { attempt = 1, claimed_by = "" }, { attempt = 3, claimed_by = "" } },
        db:from("jobs"):select("attempt", "claimed_by"):order_by("id"):all())
    end)

    it("delete returns the number of deleted rows", function()
      assert.are.equal(2, db:delete_from("users"):where("team", "red"):exec())
      assert.are.equal(1, db:from("users"):count())
    end)

    it("a feature sqlite lacks raises naming the feature and the dialect", function()
      local ok, err = pcall(function() return db:from("users"):for_update():all() end)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("for_update is not supported by sqlite", 1, true))
    end)

    it("window functions run on sqlite", function()
      local rows = db:from("users"):select("name", db.fn.row_number():over { partition_by = "team",
        order_by = { "age", "desc" } }:as("rn")):order_by("name"):all()
      assert.are.same({ { name = "Ann", rn = 2 }, { name = "Bob", rn = 1 }, { name = "Cy", rn = 1 } }, rows)
    end)

    it("a value that looks like SQL is only ever data", function()
      local evil = "x'); DROP TABLE users; --"
      assert(db:insert_into("users"):values { email = evil }:exec())
      assert.are.equal(evil, db:from("users"):where("email", evil):first().email)
      assert.are.equal(4, db:from("users"):count())
    end)
  end)

  describe("LIKE helpers end to end", function()
    before_each(function()
      for _, e in ipairs { "100%_a\\b", "100xxa\\b", "100%_ab", "1000_a\\b", "a100%_a\\bz" } do
        assert(db:insert_into("users"):values { email = e }:exec())
      end
    end)

    local function emails(q)
      local out = {}
      for _, r in ipairs(q:order_by("email"):all()) do out[#out + 1] = r.email end
      return out
    end

    it("where_contains matches a value with % _ \\ only literally", function()
      assert.are.same({ "100%_a\\b", "a100%_a\\bz" }, emails(db:from("users"):where_contains("email", "%_a\\b")))
    end)

    it("where_starts_with matches only the literal prefix", function()
      assert.are.same({ "100%_a\\b", "100%_ab" }, emails(db:from("users"):where_starts_with("email", "100%_")))
    end)

    it("where_ends_with matches only the literal suffix", function()
      assert.are.same({ "100%_a\\b" }, emails(db:from("users"):where_ends_with("email", "0%_a\\b")))
    end)

    it("a value containing %_\\ matches only itself", function()
      assert.are.same({ "100%_a\\b" }, emails(db:from("users"):where_starts_with("email", "100%_a\\b")
        :where_ends_with("email", "100%_a\\b")))
    end)
  end)

  describe("transaction", function()
    it("commits when the function returns and passes its results back", function()
      local a, b = db:transaction(function(tx)
        assert(tx:insert_into("users"):values { email = "t@x" }:exec())
        return "done", 2
      end)
      assert.are.equal("done", a)
      assert.are.equal(2, b)
      assert.are.equal(1, db:from("users"):count())
    end)

    it("rolls back and re-raises the same error value", function()
      local boom = { reason = "boom" }
      local ok, err = pcall(db.transaction, db, function(tx)
        tx:insert_into("users"):values { email = "t@x" }:exec()
        error(boom)
      end)
      assert.is_false(ok)
      assert.are.equal(boom, err)
      assert.are.equal(0, db:from("users"):count())
      assert.is_false(db:in_transaction())
    end)

    it("nests as a savepoint: an inner failure rolls back only the inner part", function()
      db:transaction(function(tx)
        tx:insert_into("users"):values { email = "outer@x" }:exec()
        local ok = pcall(tx.transaction, tx, function(inner)
          inner:insert_into("users"):values { email = "inner@x" }:exec()
          assert.is_true(inner:in_transaction())
          error("inner fails")
        end)
        assert.is_false(ok)
        tx:transaction(function(inner2)
          inner2:insert_into("users"):values { email = "inner2@x" }:exec()
        end)
      end)
      local rows = db:from("users"):select("email"):order_by("email"):all()
      assert.are.same({ { email = "inner2@x" }, { email = "outer@x" } }, rows)
    end)

    it("an outer failure rolls back committed savepoints too", function()
      pcall(db.transaction, db, function(tx)
        tx:transaction(function(inner) inner:insert_into("users"):values { email = "i@x" }:exec() end)
        error("outer fails")
      end)
      assert.are.equal(0, db:from("users"):count())
    end)

    it("refuses a transaction handle used after its transaction", function()
      local saved
      db:transaction(function(tx) saved = tx end)
      assert.has_error(function() saved:query("SELECT 1") end)
    end)

    it("raises on a non-function argument", function()
      assert.has_error(function() db:transaction("nope") end)
    end)
  end)

  describe("rendering by shape", function()
    local render = require "zever.db.render"

    it("renders where()'s first comparison, kept in the builder itself, with whatever follows it", function()
      local function sql_of(q) return (q:to_sql()) end
      assert.are.equal('SELECT * FROM "users" WHERE "id" = ?', sql_of(db:from("users"):where("id", 1)))
      assert.are.equal('SELECT * FROM "users" WHERE "age" > ? AND "team" = ? OR "id" IN (?, ?)',
        sql_of(db:from("users"):where("age", ">", 1):where("team", "a"):or_where_in("id", { 1, 2 })))
      assert.are.equal('SELECT * FROM "users" WHERE "name" IS NULL AND "age" BETWEEN ? AND ?',
        sql_of(db:from("users"):where("name", nil):where_between("age", 1, 2)))
      assert.are.equal('SELECT * FROM "users" WHERE "id" = ? AND ("age" = ? OR "age" = ?)',
        sql_of(db:from("users"):where("id", 1):where(function(g) g:where("age", 2):or_where("age", 3) end)))
      assert.are.equal('SELECT * FROM "users" WHERE ("age" = ?)',
        sql_of(db:from("users"):where(function(g) g:where("age", 2) end)))
      local sub = db:from("jobs"):select("claimed_by"):where("attempt", ">", 2)
      local text, binds = db:from("users"):where_in("email", sub):to_sql()
      assert.are.equal('SELECT * FROM "users" WHERE "email" IN (SELECT "claimed_by" FROM "jobs" WHERE "attempt" > ?)', text)
      assert.are.same({ 2 }, binds)
      assert.are.equal('UPDATE "users" SET "age" = ? WHERE "id" = ?',
        sql_of(db:update("users"):set("age", 1):where("id", 2)))
      assert.are.equal('DELETE FROM "users" WHERE "id" = ? AND "age" < ?',
        sql_of(db:delete_from("users"):where("id", 2):where("age", "<", 3)))
      -- a kept builder: the first comparison stays, later ones join it, a clone is separate
      db:exec("INSERT INTO users (email, age, team) VALUES ('a@x', 30, 'r'), ('b@x', 40, 'r'), ('c@x', 40, 'b')")
      local q = db:from("users"):select("email"):where("team", "r")
      assert.are.equal(2, q:count())
      local c = q:clone():where("age", 40)
      assert.are.equal("b@x", c:first().email)
      assert.are.equal(2, #q:all())
      assert.are.equal(1, #c:all())
      q:where("age", 30)
      assert.are.equal("a@x", q:first().email)
      assert.is_true(db:from("users"):where("email", "c@x"):exists())
      assert.are.equal(1, db:update("users"):set("age", 41):where("email", "c@x"):exec())
      assert.are.equal(1, db:delete_from("users"):where("email", "c@x"):exec())
      assert.is_nil(db:from("users"):where("email", "c@x"):first())
    end)

    it("makes a select builder with room for every slot (no table grows while it is built)", function()
      -- The builder is a constructor whose template must keep its size in compiled bytecode too
      -- (zever.db.query, M.select): filling every slot then allocates nothing.
      local q = db:from("users")
      local sql = require "zever.sql"
      local last = 0
      for _, slot in pairs(sql.SLOT.select) do last = math.max(last, slot) end
      assert.are.equal(18, last) -- the builder's constructor names slots up to 19
      -- The fill runs interpreted: a loop whose hot counter (LuaJIT hashes them by address)
      -- reaches the threshold here would record a trace, whose buffers collectgarbage("count")
      -- counts too (CI saw 484 bytes in 1 of 3 seeds, and so did 4 of 9 local runs).
      local function fill() for slot = 3, last do q[slot] = false end end
      jit.off(fill)
      collectgarbage("collect")
      collectgarbage("stop")
      local before = collectgarbage("count")
      fill()
      local grown = (collectgarbage("count") - before) * 1024
      collectgarbage("restart")
      assert.are.equal(0, grown)
    end)

    it("sends first() with the literal LIMIT 1 and no value for it, keeping the builder's limit", function()
      local q = db:from("nope"):where("id", 7)
      local e = raised(q.first, q) -- no such table: the error carries the SQL sent
      assert.are.equal('SELECT * FROM "nope" WHERE "id" = ? LIMIT 1', e.sql)
      db:exec("INSERT INTO users (email, age) VALUES ('a@x', 30), ('b@x', 40)")
      local users = db:from("users"):select("email"):order_by("age", "desc"):limit(5)
      assert.are.equal("b@x", users:first().email)
      local text, binds = users:to_sql() -- first() put the builder's own limit back
      assert.are.equal('SELECT "email" FROM "users" ORDER BY "age" DESC LIMIT ?', text)
      assert.are.same({ 5 }, binds)
      assert.are.equal(2, #users:all())
    end)

    it("gives a repeated shape the same SQL and each call its own values", function()
      local a_sql, a_binds = db:from("users"):select("id"):where("age", ">", 18):where_in("id", { 1, 2 }):limit(5):to_sql()
      local b_sql, b_binds = db:from("users"):select("id"):where("age", ">", 30):where_in("id", { 7, 8 }):limit(9):to_sql()
      assert.are.equal('SELECT "id" FROM "users" WHERE "age" > ? AND "id" IN (?, ?) LIMIT ?', a_sql)
      assert.are.equal(a_sql, b_sql)
      assert.are.same({ 18, 1, 2, 5 }, a_binds)
      assert.are.same({ 30, 7, 8, 9 }, b_binds)
    end)

    it("renders NULL and a value differently after the shape is cached", function()
      for _ = 1, 2 do
        assert.are.equal('SELECT * FROM "users" WHERE "team" = ?', (db:from("users"):where("team", "red"):to_sql()))
        assert.are.equal('SELECT * FROM "users" WHERE "team" IS NULL', (db:from("users"):where("team", nil):to_sql()))
        assert.are.equal('SELECT * FROM "users" WHERE "team" IS NULL', (db:from("users"):where("team", db.null):to_sql()))
      end
    end)

    it("tells lists of different lengths and nested groups apart", function()
      for _ = 1, 2 do
        assert.are.equal('SELECT * FROM "users" WHERE "id" IN (?)', (db:from("users"):where_in("id", { 1 }):to_sql()))
        assert.are.equal('SELECT * FROM "users" WHERE "id" IN (?, ?, ?)', (db:from("users"):where_in("id", { 1, 2, 3 }):to_sql()))
        local text, binds = db:from("users"):where("a", 1):or_where(function(q) q:where("b", 2):where_null("c") end)
          :where_between("d", 3, 4):order_by("a", "desc"):offset(2):to_sql()
        assert.are.equal('SELECT * FROM "users" WHERE "a" = ? OR ("b" = ? AND "c" IS NULL) AND "d" BETWEEN ? AND ? ORDER BY "a" DESC LIMIT -1 OFFSET ?', text)
        assert.are.same({ 1, 2, 3, 4, 2 }, binds)
      end
    end)

    it("renders a repeated update shape from the cache, set values before where values", function()
      for i = 1, 3 do
        local text, binds = db:update("users"):set("age", 20 + i):set("team", "t" .. i):where("id", i):to_sql()
        assert.are.equal('UPDATE "users" SET "age" = ?, "team" = ? WHERE "id" = ?', text)
        assert.are.same({ 20 + i, "t" .. i, i }, binds)
        text, binds = db:update("users"):set({ age = i }):to_sql()
        assert.are.equal('UPDATE "users" SET "age" = ?', text)
        assert.are.same({ i }, binds)
      end
      assert.is_true(db:update("users"):set("age", 1):where("id", 1):to_sql() ~= (db:from("users"):where("id", 1):to_sql()))
    end)

    it("leaves updates it does not walk to the renderer (NULL, expressions, returning)", function()
      for _ = 1, 2 do
        local t1, b1 = db:update("users"):set("team", db.null):where("id", 1):to_sql()
        assert.are.equal('UPDATE "users" SET "team" = ? WHERE "id" = ?', t1)
        assert.are.equal(db.null, b1[1])
        assert.are.equal('UPDATE "users" SET "age" = ("age" + ?) WHERE "id" = ?', (db:update("users"):set("age", db.col("age") + 1):where("id", 1):to_sql()))
        local text, binds = db:update("users"):set("age", 5):where("id", 2):returning("id"):to_sql()
        assert.are.equal('UPDATE "users" SET "age" = ? WHERE "id" = ? RETURNING "id"', text)
        assert.are.same({ 5, 2 }, binds)
      end
    end)

    it("keeps rendering errors uncached", function()
      for _ = 1, 2 do
        assert.has_error(function() db:from("users"):where("x", ">", nil):to_sql() end)
        assert.has_error(function() db:from("users"):where("x", "glob", "a"):to_sql("postgres") end)
      end
    end)

    it("hands first() and all() the shared bind list and takes it back, also after a db error", function()
      local function shared_free()
        -- (a shape's first render fills its trie leaf from C, whose list it returns)
        local _, _, n0, s0 = render.render_shared(db:from("users"):where("id", 1), "sqlite")
        if s0 then render.release(n0) end
        local text, binds, nb, shared = render.render_shared(db:from("users"):where("id", 1), "sqlite")
        assert.are.equal('SELECT * FROM "users" WHERE "id" = ?', text)
        assert.are.same({ 1 }, binds)
        render.release(nb)
        assert.are.same({}, binds) -- emptied: it keeps no value alive
        return shared
      end
      assert(db:exec("INSERT INTO users (email, age) VALUES ('a@x', 30), ('b@x', 40)"))
      assert.is_true(shared_free())
      assert.are.equal("b@x", db:from("users"):where("age", 40):first().email)
      assert.are.equal(2, #db:from("users"):where("age", ">", 1):all())
      assert.is_true(shared_free())
      for _ = 1, 2 do -- the second time from the trie, with the shared list
        local err = raised(function() db:from("missing"):where("id", 1):first() end)
        assert.are.equal("schema", err.code)
        assert.are.equal("schema", raised(function() db:from("missing"):where("id", 1):all() end).code)
        assert.is_true(shared_free())
      end
      assert.are.equal("a@x", db:from("users"):where("age", 30):first().email)
    end)

    it("gives a render that finds the shared list taken a list of its own", function()
      for _ = 1, 2 do
        local _, _, n0, s0 = render.render_shared(db:from("users"):where("id", 7), "sqlite")
        if s0 then render.release(n0) end
      end
      local _, held, nb, shared = render.render_shared(db:from("users"):where("id", 7), "sqlite")
      assert.is_true(shared)
      local text, binds, n2, other = render.render_shared(db:from("users"):where("email", "x"), "sqlite")
      assert.are.equal('SELECT * FROM "users" WHERE "email" = ?', text)
      assert.is_false(other)
      assert.are.equal(1, n2)
      assert.are.same({ "x" }, binds)
      assert.are.same({ 7 }, held) -- untouched by the second render
      render.release(nb)
      -- a first() inside an each() over another builder query: each runs its own list
      assert(db:exec("INSERT INTO users (email, age) VALUES ('a@x', 30), ('b@x', 40)"))
      local seen = {}
      db:from("users"):where("age", ">", 1):order_by("id"):each(function(r)
        seen[#seen + 1] = db:from("users"):where("id", r.id):first().email
      end)
      assert.are.same({ "a@x", "b@x" }, seen)
    end)

    it("bounds the cache by dropping it when it grows too large", function()
      for i = 1, 25000 do db:from("t" .. i):to_sql() end
      assert.is_true(render.size() <= 20000 + 16, tostring(render.size()))
    end)
  end)

  describe("the FFI read path", function()
    it("decodes NULL as absent, big integers exactly, floats and blobs", function()
      assert(db:exec("CREATE TABLE v (i INTEGER, f REAL, t TEXT, b BLOB)"))
      assert(db:exec("INSERT INTO v VALUES (9007199254740993, 1.5, NULL, x'00ff')"))
      for _ = 1, 2 do
        local row = db:first("SELECT * FROM v")
        assert.are.equal("cdata", type(row.i))
        assert.is_true(row.i == 9007199254740993LL)
        assert.are.equal(1.5, row.f)
        assert.is_nil(row.t)
        assert.are.equal("\0\255", row.b)
        assert.are.same({ { n = 2 } }, db:query("SELECT ? + 1 AS n", 1))
      end
    end)

    it("binds int64 cdata, booleans and NULL", function()
      assert(db:exec("CREATE TABLE v (i INTEGER)"))
      assert(db:exec("INSERT INTO v VALUES (?)", 9007199254740993LL))
      assert.is_true(db:first("SELECT i FROM v WHERE i = ?", 9007199254740993LL).i == 9007199254740993LL)
      assert.are.equal(1, db:first("SELECT ? AS x", true).x)
      assert.is_nil(db:first("SELECT ? AS x", db.null).x)
    end)

    it("raises step errors with a code and the SQL, and keeps working", function()
      for _ = 1, 2 do
        local err = raised(db.first, db, "SELECT abs(-9223372036854775807 - 1) AS x")
        assert.are.equal("sql", err.code)
        assert.are.equal("SELECT abs(-9223372036854775807 - 1) AS x", err.sql)
        assert.are.equal("schema", raised(db.query, db, "SELECT * FROM missing").code)
        assert.are.equal("invalid", raised(db.first, db, "SELECT ?", 1, 2).code)
      end
      assert.are.equal(3, db:first("SELECT 3 AS x").x)
    end)

    it("sees new columns after the schema changes under a cached statement", function()
      assert(db:exec("INSERT INTO users (email) VALUES ('a@x')"))
      assert.is_nil(db:first("SELECT * FROM users").extra)
      assert(db:exec("ALTER TABLE users ADD COLUMN extra TEXT DEFAULT 'e'"))
      assert.are.equal("e", db:first("SELECT * FROM users").extra)
    end)

    it("reads inside an each over the same statement", function()
      assert(db:exec("INSERT INTO users (email) VALUES ('a@x'), ('b@x')"))
      local seen = {}
      db:from("users"):order_by("id"):each(function(r)
        seen[#seen + 1] = r.email .. "/" .. #db:from("users"):order_by("id"):all()
      end)
      assert.are.same({ "a@x/2", "b@x/2" }, seen)
    end)

    it("raises closed after close", function()
      db:close()
      assert.are.equal("closed", raised(db.first, db, "SELECT 1").code)
    end)
  end)
end)
