-- zever.db on PostgreSQL (#pg): adapters.db.postgres over the zever.pg binding (host/pg/),
-- against a real PostgreSQL 15 started by spec/support/pg_server.lua. Each describe owns its
-- database (pg_server.fixture) and opens its own handles.

local zever_db = require "zever.db"
local pg_adapter = require "adapters.db.postgres"
local sched = require "zever.sched"
local loop = require "zever.loop"
local json = require "zever.json"
local pg_server = require "spec.support.pg_server"

describe("zever.db postgres #pg", function()
  local fx = pg_server.fixture("dbpg")
  local db

  setup(function()
    db = assert(zever_db.open(fx.dsn))
  end)

  teardown(function()
    if db then db:close() end
  end)

  describe("open", function()
    it("names the postgres dialect and accepts the postgresql:// alias", function()
      assert.are.equal("postgres", db.dialect)
      local d2 = assert(zever_db.open((fx.dsn:gsub("^postgres:", "postgresql:"))))
      assert.are.equal("postgres", d2.dialect)
      assert.are.equal(1, d2:first("SELECT 1 AS one").one)
      d2:close()
    end)

    it("fails with unavailable and no password in the message for a wrong password", function()
      local bad = fx.dsn:gsub(":" .. fx.server.password .. "@", ":wrong" .. "@")
      local d, err = zever_db.open(bad)
      assert.is_nil(d)
      assert.are.equal("unavailable", err.code)
      assert.is_nil(tostring(err):find("wrong", 1, true))
      assert.is_nil(tostring(err):find(fx.server.password, 1, true))
    end)

    it("fails with unavailable for a port where nothing listens, without the password", function()
      local port = require("spec.support.process").free_port()
      local dsn = ("postgres://zever:%s@127.0.0.1:%d/x"):format(fx.server.password, port)
      local d, err = zever_db.open(dsn, { connect_timeout = 5 })
      assert.is_nil(d)
      assert.are.equal("unavailable", err.code)
      assert.is_nil(tostring(err):find(fx.server.password, 1, true))
    end)
  end)

  describe("statements", function()
    it("runs DDL, inserts with ? binds and reads rows back through the builder", function()
      db:exec("CREATE TABLE people (id serial PRIMARY KEY, name text NOT NULL, age int)")
      assert.are.equal(1, db:exec("INSERT INTO people (name, age) VALUES (?, ?)", "ann", 31).changes)
      db:insert_into("people"):values({ name = "bob", age = 40 }):exec()
      local rows = db:from("people"):where("age", ">", 30):order_by("id"):all()
      assert.are.equal(2, #rows)
      assert.are.same({ id = 1, name = "ann", age = 31 }, rows[1])
      local bob = db:from("people"):where("name", "bob"):first()
      assert.are.equal(40, bob.age)
      assert.is_nil(db:from("people"):where("name", "nobody"):first())
      assert.are.equal(0, #db:query("SELECT * FROM people WHERE age > ?", 100))
    end)

    it("yields to the loop inside a coroutine instead of blocking the worker", function()
      local other_ran, got = false, nil
      local co = sched.spawn(function() got = db:first("SELECT 41 + 1 AS v").v end)
      -- The statement is on the wire: the coroutine is parked, the worker is free.
      assert.are.equal("suspended", coroutine.status(co))
      sched.spawn(function() other_ran = true end)
      assert.is_true(other_ran)
      while got == nil do loop.run("once") end
      assert.are.equal(42, got)
    end)

    it("binds numbers as the exact text PostgreSQL reads", function()
      local rows = {
        { "zero", 0, "0" }, { "small", 7, "7" }, { "negative", -7, "-7" },
        { "int4 max", 2147483647, "2147483647" }, { "int4 min", -2147483648, "-2147483648" },
        { "2^53", 9007199254740992, "9007199254740992" },
        { "-2^53", -9007199254740992, "-9007199254740992" },
        { "negative zero", -0.0, "0" }, { "fraction", 1.5, "1.5" }, { "negative fraction", -0.25, "-0.25" },
      }
      -- every digit count, at both ends (int_text writes two digits a step, one for an odd lead)
      local p = 1
      for d = 1, 18 do
        local lo, hi = d == 1 and 0 or p, p * 10 - 1
        rows[#rows + 1] = { d .. " digits low", lo, ("%d"):format(lo) }
        rows[#rows + 1] = { d .. " digits high", hi, ("%d"):format(hi) }
        rows[#rows + 1] = { "-" .. d .. " digits high", -hi, ("%d"):format(-hi) }
        p = p * 10
      end
      for _, r in ipairs(rows) do
        assert.are.equal(r[3], db:first("SELECT (?)::text AS t", r[2]).t, r[1])
        -- the same through a prepared statement (its cached shape) and a transaction's pipeline
        assert.are.equal(r[3], db:transaction(function(tx)
          return tx:first("SELECT (?)::text AS t", r[2]).t
        end), r[1])
      end
    end)

    it("binds strings, booleans, NULL and big integers alike through the FFI send and conn:send",
      function()
        local values = { "héllo", "", true, false, zever_db.null, 2 ^ 60, -(2 ^ 53) - 2, 1e300 }
        local want = { "héllo", "", "true", "false", nil, "1152921504606846976",
          "-9007199254740994", "1e+300" }
        local casts = { "text", "text", "bool", "bool", "text", "numeric", "numeric", "float8" }
        -- 8 binds go through the FFI send's buffers; the same 8 plus 9 more (17) through
        -- conn:send, which takes what the buffers cannot hold.
        for _, extra in ipairs({ 0, 9 }) do
          local cols, binds = {}, {}
          for i = 1, #values + extra do
            local k = (i - 1) % #values + 1
            cols[i] = ("(?)::%s::text AS c%d"):format(casts[k], i)
            binds[i] = values[k]
          end
          binds.n = #values + extra
          local row = db:first("SELECT " .. table.concat(cols, ", "), binds)
          for i = 1, binds.n do
            assert.are.equal(want[(i - 1) % #values + 1], row["c" .. i], "bind " .. i)
          end
        end
      end)

    it("decodes a prepared statement's rows by the shape of its first result each time", function()
      db:exec("CREATE TABLE shaped (id int PRIMARY KEY, label text, n int)")
      db:exec("INSERT INTO shaped VALUES (1, 'one', 10), (2, NULL, -20), (3, 'three', NULL)")
      local q = "SELECT id, label, n FROM shaped WHERE id = ?"
      for _ = 1, 2 do
        assert.are.same({ id = 1, label = "one", n = 10 }, db:first(q, 1))
        assert.are.same({ id = 2, n = -20 }, db:first(q, 2))
        assert.are.same({ id = 3, label = "three" }, db:first(q, 3))
        assert.is_nil(db:first(q, 4))
        assert.are.same({ { id = 2, n = -20 } }, db:query(q, 2))
        assert.are.same({ id = 3, label = "three" }, db:transaction(function(tx) return tx:first(q, 3) end))
      end
    end)

    it("hands a pool connection's pinned conn out again only after it was given back", function()
      local conn = db.conn
      local p1 = assert(conn:pin())
      assert.are.equal(5, p1:first("SELECT 5 AS v", nil, 0).v)
      p1:unpin()
      local row, code = p1:first("SELECT 1 AS v", nil, 0)
      assert.is_nil(row)
      assert.are.equal("closed", code)
      local p2 = assert(conn:pin())
      assert.are.equal(6, p2:first("SELECT 6 AS v", nil, 0).v)
      p2:unpin()
    end)

    it("raises a db error with sqlstate, constraint and table, never the bound values", function()
      db:exec("CREATE TABLE uniq (email text UNIQUE)")
      db:exec("INSERT INTO uniq VALUES (?)", "secret-value@example.com")
      local ok, err = pcall(db.exec, db, "INSERT INTO uniq VALUES (?)", "secret-value@example.com")
      assert.is_false(ok)
      assert.is_true(zever_db.is_error(err))
      assert.are.equal("constraint", err.code)
      assert.are.equal("23505", err.sqlstate)
      assert.are.equal("uniq_email_key", err.constraint)
      assert.are.equal("uniq", err.table)
      assert.is_nil(tostring(err):find("secret-value", 1, true))
    end)
  end)

  describe("types", function()
    it("decodes each type by its OID", function()
      local row = db:first([[SELECT 1::int2 AS i2, -7::int4 AS i4, 9007199254740993::int8 AS big,
        42::int8 AS small8, 1.25::float8 AS f8, 'NaN'::float8 AS nan, 'Infinity'::float4 AS inf,
        12345678901234567890.5::numeric AS num, true AS t, false AS f, 'héllo'::text AS s,
        '\x00ff10'::bytea AS bin, '{"a":[1,2],"b":null}'::jsonb AS jb, '[]'::json AS ja,
        '2024-02-03 04:05:06.5+02'::timestamptz AS ts, '2024-02-03'::date AS d,
        'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS u, ARRAY[1,2,NULL]::int[] AS ai,
        ARRAY['x','y,z','q"'] AS at, NULL::int AS nothing]])
      assert.are.equal(1, row.i2)
      assert.are.equal(-7, row.i4)
      assert.are.equal("cdata", type(row.big))
      assert.are.equal("9007199254740993LL", tostring(row.big))
      assert.are.equal(42, row.small8)
      assert.are.equal(1.25, row.f8)
      assert.is_true(row.nan ~= row.nan)
      assert.are.equal(math.huge, row.inf)
      assert.are.equal("12345678901234567890.5", row.num)
      assert.is_true(row.t)
      assert.is_false(row.f)
      assert.are.equal("héllo", row.s)
      assert.are.equal("\0\255\16", row.bin)
      assert.are.same({ 1, 2 }, row.jb.a)
      assert.are.equal(json.null, row.jb.b)
      assert.are.equal("[]", json.encode(row.ja))
      assert.are.equal("2024-02-03T02:05:06.5Z", row.ts)
      assert.are.equal("2024-02-03", row.d)
      assert.are.equal("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", row.u)
      assert.are.equal(3, #row.ai)
      assert.are.equal(1, row.ai[1])
      assert.are.equal(zever_db.null, row.ai[3])
      assert.are.same({ "x", "y,z", 'q"' }, row.at)
      assert.is_nil(row.nothing)
    end)
  end)
end)

describe("adapters.db.postgres", function()
  it("exports the dialect and begin_sql of the adapter contract", function()
    assert.are.equal("postgres", pg_adapter.dialect)
    assert.are.equal("BEGIN", pg_adapter.begin_sql)
    assert.are.equal("function", type(pg_adapter.open))
  end)
end)

describe("adapters.db.postgres ? placeholders", function()
  local rows = {
    { "numbers each ? in order", "SELECT * FROM t WHERE a = ? AND b = ?", "SELECT * FROM t WHERE a = $1 AND b = $2" },
    { "leaves text without ? alone", "SELECT 1", "SELECT 1" },
    { "skips ? inside a string", "SELECT '?' , ?", "SELECT '?' , $1" },
    { "skips a doubled quote inside a string", "SELECT 'it''s ?', ?", "SELECT 'it''s ?', $1" },
    { "skips ? inside an E'' string with a backslash quote", [[SELECT E'a\'?', ?]], [[SELECT E'a\'?', $1]] },
    { "skips ? inside a quoted identifier", [[SELECT "what?" FROM t WHERE x = ?]], [[SELECT "what?" FROM t WHERE x = $1]] },
    { "skips ? inside a dollar-quoted body", "SELECT $$ ? $$, ?", "SELECT $$ ? $$, $1" },
    { "skips ? inside a tagged dollar quote", "SELECT $fn$ a ? $x$ ? $fn$, ?", "SELECT $fn$ a ? $x$ ? $fn$, $1" },
    { "skips ? inside a line comment", "SELECT ? -- why?\n, ?", "SELECT $1 -- why?\n, $2" },
    { "skips ? inside nested block comments", "SELECT /* a /* ? */ ? */ ?", "SELECT /* a /* ? */ ? */ $1" },
    { "turns ?? into a literal ?", "SELECT data ?? 'k' FROM t WHERE id = ?", "SELECT data ? 'k' FROM t WHERE id = $1" },
    { "leaves text that already uses $n", "SELECT $1, '?'", "SELECT $1, '?'" },
    { "leaves $n text with a ? operator alone", "SELECT data ? $1 FROM t", "SELECT data ? $1 FROM t" },
    { "does not take an identifier's $ for a parameter", "SELECT a$1, ?", "SELECT a$1, $1" },
    { "numbers past nine", ("?,"):rep(10) .. "?", "$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11" },
  }
  for _, row in ipairs(rows) do
    it(row[1], function()
      assert.are.equal(row[3], pg_adapter.rewrite(row[2]))
    end)
  end
end)

describe("adapters.db.postgres SQLSTATE codes", function()
  local rows = {
    { "23505", "constraint" }, { "23503", "constraint" }, { "23502", "constraint" },
    { "42601", "syntax" }, { "42P01", "schema" }, { "42703", "schema" }, { "42883", "schema" },
    { "40001", "busy" }, { "40P01", "busy" }, { "55P03", "busy" }, { "57014", "timeout" },
    { "08006", "unavailable" }, { "57P01", "unavailable" }, { "22P02", "invalid" },
    { "22012", "invalid" }, { "25P02", "aborted" }, { "0A000", "unsupported" },
    { "XX000", "error" },
  }
  for _, row in ipairs(rows) do
    it("maps " .. row[1] .. " to " .. row[2], function()
      assert.are.equal(row[2], pg_adapter.code_of(row[1]))
    end)
  end
end)

describe("zever.db on sqlite refuses the postgres extras", function()
  it("raises unsupported for listen, notify, copy_in, pool_stats and server_version", function()
    local db = assert(zever_db.open("sqlite::memory:"))
    local calls = {
      function() return db:listen("c", function() end) end,
      function() return db:notify("c", "x") end,
      function() return db:copy_in("t", { "a" }, { { 1 } }) end,
      function() return db:pool_stats() end,
      function() return db:server_version() end,
    }
    for _, call in ipairs(calls) do
      local ok, err = pcall(call)
      assert.is_false(ok)
      assert.are.equal("unsupported", err.code)
      assert.are.equal("db: unsupported on sqlite", tostring(err))
    end
    db:close()
  end)
end)
