-- zever.db on PostgreSQL (#pg), the parts beyond one statement: binds, transactions on a
-- pinned connection, the per-worker pool (FIFO waiters, broken connections replaced, restart
-- recovery), prepared statements, LISTEN/NOTIFY, COPY, config and the container.
--
-- Waiting is on events, never on the clock: a loop pump ends when the awaited value arrived;
-- a generous timer only turns a hang into a failure.

local zever_db = require "zever.db"
local sched = require "zever.sched"
local loop = require "zever.loop"
local config = require "zever.config"
local container = require "zever.container"
local pg_server = require "spec.support.pg_server"

-- Pumps the loop until cond() is true; fails after `guard` seconds instead of hanging.
local function pump_until(cond, guard)
  local expired = false
  local t = loop.after(guard or 20, function() expired = true end)
  while not cond() and not expired do loop.run("once") end
  t:stop()
  assert(cond(), "the awaited event did not happen")
end

local function backend_pid(db)
  return db:transaction(function(tx) return tx:first("SELECT pg_backend_pid() AS pid").pid end)
end

describe("zever.db postgres binds and options #pg", function()
  local fx = pg_server.fixture("dbpgbinds")
  local db

  setup(function() db = assert(zever_db.open(fx.dsn)) end)
  teardown(function() if db then db:close() end end)

  it("binds integers exactly, floats in full, booleans, nil and db.null as NULL, int64 cdata", function()
    local row = db:first("SELECT ?::int8 AS big, ?::float8 AS f, ?::bool AS b, ?::int AS n1, " ..
      "?::int AS n2, ?::int8 AS exact", 9007199254740993LL, 0.1, true, nil, zever_db.null,
      2 ^ 53)
    assert.are.equal(9007199254740993LL, row.big)
    assert.are.equal(0.1, row.f)
    assert.is_true(row.b)
    assert.is_nil(row.n1)
    assert.is_nil(row.n2)
    assert.are.equal(2 ^ 53, row.exact)
  end)

  it("sends numbers as PostgreSQL reads them: negatives, fractions in full, NaN, the infinities", function()
    local row = db:first("SELECT ?::text AS neg, ?::text AS frac, ?::float8 AS nan, " ..
      "?::float8 AS inf, ?::float8 AS ninf, ?::text AS big, ?::int AS zero",
      -42, 0.1, 0 / 0, math.huge, -math.huge, 2 ^ 60, 0)
    assert.are.equal("-42", row.neg)
    assert.are.equal("0.10000000000000001", row.frac)
    assert.is_true(row.nan ~= row.nan)
    assert.are.equal(math.huge, row.inf)
    assert.are.equal(-math.huge, row.ninf)
    assert.are.equal("1152921504606846976", row.big)
    assert.are.equal(0, row.zero)
  end)

  it("builds a prepared statement's rows by its shape: NULL columns absent, names as written", function()
    local sql = 'SELECT ?::int AS a, NULL::int AS b, ?::int2 AS "we""ird\nname", NULL::text AS c, ' ..
      "?::text AS d, ?::int AS neg"
    for _ = 1, 3 do -- the first result makes the shape; the next ones use it
      local row = db:first(sql, 7, -3, "x", -2147483648)
      local keys = {}
      for k in pairs(row) do keys[#keys + 1] = k end
      table.sort(keys)
      assert.are.same({ "a", "d", "neg", 'we"ird\nname' }, keys)
      assert.are.same({ a = 7, d = "x", neg = -2147483648, ['we"ird\nname'] = -3 }, row)
    end
    local rows = db:query("SELECT g AS n, CASE WHEN g % 2 = 0 THEN NULL ELSE g END AS odd " ..
      "FROM generate_series(1, ?) AS g", 4)
    assert.are.same({ { n = 1, odd = 1 }, { n = 2 }, { n = 3, odd = 3 }, { n = 4 } }, rows)
  end)

  it("keeps the first non-NULL value of a repeated column name, as before shapes", function()
    for _ = 1, 2 do
      local row = db:first("SELECT ?::int AS a, NULL::int AS a", 5)
      assert.are.same({ a = 5 }, row)
      row = db:first("SELECT ?::int AS a, ?::int AS a", 5, 6)
      assert.are.same({ a = 6 }, row)
    end
  end)

  it("round-trips bytea through db.blob", function()
    db:exec("CREATE TABLE files (id int PRIMARY KEY, body bytea)")
    local bytes = "\0\1\2\255binary\r\n"
    db:exec("INSERT INTO files VALUES (?, ?)", 1, zever_db.blob(bytes))
    assert.are.equal(bytes, db:first("SELECT body FROM files WHERE id = ?", 1).body)
    assert.are.equal(#bytes, db:first("SELECT octet_length(body) AS n FROM files").n)
  end)

  it("binds a Lua array as a PostgreSQL array", function()
    local row = db:first("SELECT 3 = ANY(?::int[]) AS yes, array_length(?::text[], 1) AS n",
      { 1, 2, 3 }, { "a", "b,c" })
    assert.is_true(row.yes)
    assert.are.equal(2, row.n)
  end)

  it("decodes numeric as a number when opened with numeric = 'number'", function()
    local d = assert(zever_db.open(fx.dsn, { numeric = "number" }))
    assert.are.equal(1.5, d:first("SELECT 1.5::numeric AS n").n)
    d:close()
  end)

  it("reports a statement cancelled by statement_timeout with code timeout", function()
    local d = assert(zever_db.open(fx.dsn, { statement_timeout = 0.05 }))
    local ok, err = pcall(d.first, d, "SELECT pg_sleep(30)")
    assert.is_false(ok)
    assert.are.equal("timeout", err.code)
    assert.are.equal("57014", err.sqlstate)
    assert.are.equal(1, d:first("SELECT 1 AS one").one) -- the connection still works
    d:close()
  end)

  it("maps syntax, schema and data errors to their codes with a message free of the value", function()
    local cases = {
      { "SELEC 1", "syntax", "42601" },
      { "SELECT * FROM no_such_table", "schema", "42P01" },
      { "SELECT no_such_column FROM (SELECT 1 AS a) s", "schema", "42703" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(db.exec, db, c[1])
      assert.is_false(ok)
      assert.are.equal(c[2], err.code)
      assert.are.equal(c[3], err.sqlstate)
    end
    local ok, err = pcall(db.first, db, "SELECT ?::int AS v", "not-a-number-secret")
    assert.is_false(ok)
    assert.are.equal("invalid", err.code)
    assert.is_nil(tostring(err):find("secret", 1, true))
  end)
end)

describe("zever.db postgres transactions #pg", function()
  local fx = pg_server.fixture("dbpgtx")
  local db

  setup(function()
    db = assert(zever_db.open(fx.dsn, { pool_size = 4 }))
    db:exec("CREATE TABLE acct (id int PRIMARY KEY, n int NOT NULL)")
    db:exec("INSERT INTO acct VALUES (1, 0), (2, 0)")
  end)
  teardown(function() if db then db:close() end end)

  it("commits on return and rolls back on error", function()
    db:transaction(function(tx) tx:exec("UPDATE acct SET n = n + 1 WHERE id = 1") end)
    local ok = pcall(db.transaction, db, function(tx)
      tx:exec("UPDATE acct SET n = n + 100 WHERE id = 1")
      error("boom")
    end)
    assert.is_false(ok)
    assert.are.equal(1, db:first("SELECT n FROM acct WHERE id = 1").n)
  end)

  it("runs every statement of a transaction on one connection", function()
    local pids = db:transaction(function(tx)
      local a = tx:first("SELECT pg_backend_pid() AS p").p
      local b = tx:first("SELECT pg_backend_pid() AS p").p
      return { a, b }
    end)
    assert.are.equal(pids[1], pids[2])
  end)

  it("keeps the transaction usable after a failure caught by try (a savepoint)", function()
    db:transaction(function(tx)
      local r, err = tx:try(function(t) return t:exec("INSERT INTO acct VALUES (1, 0)") end, "constraint")
      assert.is_nil(r)
      assert.are.equal("constraint", err.code)
      tx:exec("UPDATE acct SET n = 7 WHERE id = 2")
    end)
    assert.are.equal(7, db:first("SELECT n FROM acct WHERE id = 2").n)
  end)

  it("gives two coroutines two transactions of their own", function()
    local cos, pids, done = {}, {}, {}
    db:exec("INSERT INTO acct VALUES (11, 1), (12, 7)")
    for i = 1, 2 do
      cos[i] = sched.spawn(function()
        db:transaction(function(tx)
          tx:exec("UPDATE acct SET n = n + 10 WHERE id = ?", 10 + i)
          pids[i] = tx:first("SELECT pg_backend_pid() AS p").p
          coroutine.yield() -- parked inside its transaction until the spec wakes it
        end)
        done[i] = true
      end)
    end
    pump_until(function() return pids[1] and pids[2] end)
    -- Both transactions are open at once, each on a connection of its own.
    assert.are.equal(2, db:pool_stats().busy)
    assert.are_not.equal(pids[1], pids[2])
    assert.is_false(db:in_transaction())
    sched.wake(cos[1])
    sched.wake(cos[2])
    pump_until(function() return done[1] and done[2] end)
    assert.are.equal(11, db:first("SELECT n FROM acct WHERE id = 11").n)
    assert.are.equal(17, db:first("SELECT n FROM acct WHERE id = 12").n)
  end)
end)

describe("zever.db postgres pool #pg", function()
  local fx = pg_server.fixture("dbpgpool")

  it("never opens more than pool_size connections and serves waiters first come, first served", function()
    local db = assert(zever_db.open(fx.dsn, { pool_size = 1 }))
    local order, parked = {}, false
    local holder = sched.spawn(function()
      db:transaction(function(tx)
        tx:first("SELECT 1 AS one")
        parked = true
        coroutine.yield() -- holds the only connection until the spec wakes it
      end)
      order[#order + 1] = "holder"
    end)
    pump_until(function() return parked end)
    for i = 1, 3 do
      sched.spawn(function()
        db:first("SELECT ? AS i", i)
        order[#order + 1] = i
      end)
    end
    local stats = db:pool_stats()
    assert.are.equal(1, stats.open)
    assert.are.equal(3, stats.waiting)
    sched.wake(holder)
    pump_until(function() return #order == 4 end)
    assert.are.same({ "holder", 1, 2, 3 }, order)
    assert.are.equal(1, db:pool_stats().connects)
    db:close()
  end)

  it("runs many coroutines over a small pool", function()
    local db = assert(zever_db.open(fx.dsn, { pool_size = 3 }))
    local done, max_open = 0, 0
    for i = 1, 30 do
      sched.spawn(function()
        assert.are.equal(i, db:first("SELECT ?::int AS i", i).i)
        done = done + 1
      end)
      max_open = math.max(max_open, db:pool_stats().open)
    end
    pump_until(function() return done == 30 end)
    assert.is_true(max_open <= 3)
    assert.are.equal(3, db:pool_stats().open)
    db:close()
  end)

  it("drops a connection the server terminated and replaces it", function()
    local db = assert(zever_db.open(fx.dsn, { pool_size = 1 }))
    local pid = backend_pid(db)
    -- With a timeout, pg_terminate_backend returns once the backend is gone.
    local r = fx.server:psql(fx.dsn, "SELECT pg_terminate_backend(" .. pid .. ", 10000)")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal(1, db:first("SELECT 1 AS one").one)
    assert.are_not.equal(pid, backend_pid(db))
    assert.are.equal(2, db:pool_stats().connects)
    db:close()
  end)

  it("closes idle connections after max_lifetime", function()
    local db = assert(zever_db.open(fx.dsn, { pool_size = 1, max_lifetime = 0.000001 }))
    local pid = backend_pid(db)
    -- A round trip later the connection is older than 1 µs: the next acquire replaces it.
    assert.are_not.equal(pid, backend_pid(db))
    db:close()
  end)
end)

describe("zever.db postgres prepared statements #pg", function()
  local fx = pg_server.fixture("dbpgprep")

  local function prepared_count(tx)
    return tx:first("SELECT count(*) AS n FROM pg_prepared_statements").n
  end

  it("prepares a statement once per connection and reuses it", function()
    local db = assert(zever_db.open(fx.dsn, { pool_size = 1 }))
    db:transaction(function(tx)
      for i = 1, 5 do tx:first("SELECT ?::int AS v", i) end
      assert.are.equal(1, prepared_count(tx))
      tx:first("SELECT ?::text AS v", "x")
      assert.are.equal(2, prepared_count(tx))
    end)
    db:close()
  end)

  it("keeps at most `statements` prepared statements (LRU)", function()
    local db = assert(zever_db.open(fx.dsn, { pool_size = 1, statements = 3 }))
    db:transaction(function(tx)
      for i = 1, 10 do tx:first("SELECT ?::int + " .. i .. " AS v", i) end
      assert.are.equal(3, prepared_count(tx))
    end)
    db:close()
  end)

  it("prepares again when a table change invalidated the cached plan (0A000)", function()
    local db = assert(zever_db.open(fx.dsn, { pool_size = 1 }))
    db:exec("CREATE TABLE shapes (id int PRIMARY KEY)")
    db:exec("INSERT INTO shapes VALUES (1)")
    assert.are.same({ id = 1 }, db:first("SELECT * FROM shapes WHERE id = ?", 1))
    db:exec("ALTER TABLE shapes ADD COLUMN name text DEFAULT 'x'")
    assert.are.same({ id = 1, name = "x" }, db:first("SELECT * FROM shapes WHERE id = ?", 1))
    db:close()
  end)
end)

describe("zever.db postgres LISTEN/NOTIFY and COPY #pg", function()
  local fx = pg_server.fixture("dbpgnotify")
  local db

  setup(function() db = assert(zever_db.open(fx.dsn)) end)
  teardown(function() if db then db:close() end end)

  it("calls the listener in a coroutine with the payload and the channel", function()
    local got = {}
    local sub = db:listen("jobs", function(payload, channel)
      got[#got + 1] = { payload, channel, coroutine.running() ~= nil }
    end)
    assert.is_true(db:notify("jobs", "hello"))
    db:notify("other", "not for us")
    db:notify("jobs", "again")
    pump_until(function() return #got == 2 end)
    assert.are.same({ { "hello", "jobs", true }, { "again", "jobs", true } }, got)
    sub:close()
    db:notify("jobs", "after close")
    db:first("SELECT 1 AS one")
    assert.are.equal(2, #got)
  end)

  it("loads rows with copy_in, escaping tabs, newlines, backslashes and NULLs", function()
    db:exec("CREATE TABLE loaded (id int8, name text, body bytea, ok bool)")
    local rows = {
      { 1, "plain", zever_db.blob("\0\1"), true },
      { 9007199254740993LL, "tab\there\nnewline\\back", nil, false },
      { 3, zever_db.null, zever_db.blob(""), nil },
    }
    assert.are.equal(3, db:copy_in("loaded", { "id", "name", "body", "ok" }, rows))
    local back = db:query("SELECT * FROM loaded ORDER BY id")
    assert.are.same({ id = 1, name = "plain", body = "\0\1", ok = true }, back[1])
    assert.are.same({ id = 3, body = "" }, back[2])
    assert.are.equal(9007199254740993LL, back[3].id)
    assert.are.equal("tab\there\nnewline\\back", back[3].name)
    assert.is_false(back[3].ok)
    assert.is_nil(back[3].body)
  end)

  it("reports a COPY into a missing table as a schema error and keeps the pool usable", function()
    local ok, err = pcall(db.copy_in, db, "no_such", { "a" }, { { 1 } })
    assert.is_false(ok)
    assert.are.equal("schema", err.code)
    assert.are.equal(1, db:first("SELECT 1 AS one").one)
  end)

  it("reports the server version and the pool state", function()
    local v, text = db:server_version()
    assert.is_true(v >= 150000 and v < 160000)
    assert.are.equal("15.", text:sub(1, 3))
    local st = db:pool_stats()
    assert.are.equal(10, st.size)
    assert.is_true(st.open >= 1)
    assert.are.equal(0, st.busy)
  end)
end)

describe("zever.db postgres server restart #pg", function()
  local srv, dsn

  setup(function()
    srv = assert(pg_server.start())
    dsn = srv:database("restart")
  end)
  teardown(function() if srv then srv:stop() end end)

  it("fails a transaction cut by a restart with unavailable, then works again", function()
    local db = assert(zever_db.open(dsn, { pool_size = 2 }))
    db:exec("CREATE TABLE r (id int)")
    local attempts = 0
    local ok, err = pcall(db.transaction, db, function(tx)
      attempts = attempts + 1
      tx:exec("INSERT INTO r VALUES (1)")
      assert(srv:restart())
      tx:exec("INSERT INTO r VALUES (2)")
    end)
    assert.is_false(ok)
    assert.are.equal("unavailable", err.code)
    assert.are.equal(1, attempts) -- not retried
    assert.are.equal(0, db:first("SELECT count(*) AS n FROM r").n)
    db:exec("INSERT INTO r VALUES (3)")
    assert.are.equal(1, db:first("SELECT count(*) AS n FROM r").n)
    db:close()
  end)

  it("answers unavailable while the server is down and reconnects once it is back", function()
    local db = assert(zever_db.open(dsn, { pool_size = 2 }))
    srv:kill()
    local ok, err = pcall(db.first, db, "SELECT 1 AS one")
    assert.is_false(ok)
    assert.are.equal("unavailable", err.code)
    assert.is_nil(tostring(err):find(srv.password, 1, true))
    assert(srv:launch())
    assert.are.equal(1, db:first("SELECT 1 AS one").one)
    assert.is_true(db:pool_stats().connect_failures >= 1)
    db:close()
  end)

  it("listens again after the listen connection was lost", function()
    local db = assert(zever_db.open(dsn))
    local got = {}
    db:listen("events", function(payload) got[#got + 1] = payload end)
    db:notify("events", "one")
    pump_until(function() return #got == 1 end)
    local before = db:pool_stats().listener_connects
    assert(srv:restart())
    pump_until(function() return db:pool_stats().listener_connects > before end)
    db:notify("events", "two")
    pump_until(function() return #got == 2 end)
    assert.are.same({ "one", "two" }, got)
    db:close()
  end)
end)

describe("zever.db postgres from config #pg", function()
  local fx = pg_server.fixture("dbpgcfg")

  it("picks the postgres adapter from DB_DSN alone and resolves app.db on it", function()
    local cfg = assert(config.load{ dir = "/nonexistent-zever-dir", env = { DB_DSN = fx.dsn,
      DB_POOL_SIZE = "3" } })
    assert.are.equal("postgres", cfg.db.adapter)
    local c = container.new(cfg)
    local db = assert(c:get("db"))
    assert.are.equal("postgres", db.dialect)
    assert.are.equal(1, db:first("SELECT 1 AS one").one)
    assert.are.equal(3, db:pool_stats().size)
    assert.is_true(c:close())
  end)
end)

-- The idle timer: idle_timeout and max_lifetime close idle connections nobody takes, on the
-- pool's clock (opts.clock: spec/support/fake_clock, so time moves only when the spec says).
describe("zever.db postgres idle timer #pg", function()
  local fx = pg_server.fixture("dbpgidle")
  local fake_clock = require "spec.support.fake_clock"
  local process = require "spec.support.process"
  local sys = require "zever.sys"

  -- Opens n connections at once (n coroutines, each holding one until all n are held).
  local function open_n(db, n)
    local held, parked, done = 0, {}, 0
    for i = 1, n do
      sched.spawn(function()
        db:transaction(function(tx)
          tx:first("SELECT 1 AS one")
          held = held + 1
          parked[i] = coroutine.running()
          coroutine.yield()
        end)
        done = done + 1
      end)
    end
    pump_until(function() return held == n end)
    for i = 1, n do sched.wake(parked[i]) end
    pump_until(function() return done == n end)
  end

  -- Backends of this database other than the asking one, as the server sees them (a closed
  -- connection's backend exits just after the client left: asked again until it is gone).
  local function backends(want)
    local n
    for _ = 1, 200 do
      local r = fx.server:psql(fx.dsn, "SELECT count(*) FROM pg_stat_activity WHERE datname = "
        .. "current_database() AND pid <> pg_backend_pid()")
      assert.are.equal(0, r.code, r.stderr)
      n = tonumber(r.stdout:match("%d+"))
      if n == want then return n end
    end
    return n
  end

  it("closes connections idle for idle_timeout, keeps the ones still within it", function()
    local clock = fake_clock.new()
    local db = assert(zever_db.open(fx.dsn, { pool_size = 3, idle_timeout = 10,
      max_lifetime = 0, clock = clock }))
    finally(function() db:close() end)
    open_n(db, 3)
    assert.are.equal(3, db:pool_stats().idle)
    assert.are.equal(3, backends(3))
    clock.advance(6)
    assert.are.equal(1, db:first("SELECT 1 AS one").one)   -- one connection used again at 6
    clock.advance(4.5)                                      -- 10.5: the two others are idle 10.5 s
    local stats = db:pool_stats()
    assert.are.equal(1, stats.open)
    assert.are.equal(1, stats.idle)
    assert.are.equal(2, stats.idle_closed)
    assert.are.equal(1, backends(1))
    clock.advance(6)                                        -- 16.5: the last one, idle since 6
    assert.are.equal(0, db:pool_stats().open)
    assert.are.equal(0, backends(0))
    assert.is_nil(clock.next())                             -- nothing idle: the timer is off
    assert.are.equal(1, db:first("SELECT 1 AS one").one)   -- and the pool opens a new one
    assert.are.equal(4, db:pool_stats().connects)
  end)

  it("closes an idle connection at max_lifetime even though it was used just before", function()
    local clock = fake_clock.new()
    local db = assert(zever_db.open(fx.dsn, { pool_size = 1, idle_timeout = 10,
      max_lifetime = 25, clock = clock }))
    finally(function() db:close() end)
    for _ = 1, 3 do
      clock.advance(8)
      assert.are.equal(1, db:first("SELECT 1 AS one").one)   -- used at 8, 16, 24
    end
    assert.are.equal(1, db:pool_stats().open)
    clock.advance(1.5)                                          -- 25.5: born at 0
    assert.are.equal(0, db:pool_stats().open)
    assert.are.equal(1, db:pool_stats().idle_closed)
    assert.are.equal(0, backends(0))
  end)

  it("never closes a connection in use; it goes when idle past its deadline", function()
    local clock = fake_clock.new()
    local db = assert(zever_db.open(fx.dsn, { pool_size = 1, idle_timeout = 10,
      max_lifetime = 0, clock = clock }))
    finally(function() db:close() end)
    db:transaction(function(tx)
      clock.advance(30)                                       -- held the whole time
      assert.are.equal(1, tx:first("SELECT 1 AS one").one)
      assert.are.equal(1, db:pool_stats().busy)
    end)
    assert.are.equal(1, db:pool_stats().idle)                -- used at 30: idle until 40
    clock.advance(9)
    assert.are.equal(1, db:pool_stats().open)
    clock.advance(2)
    assert.are.equal(0, db:pool_stats().open)
  end)

  it("runs on the loop's clock by default without keeping the loop running", function()
    local db = assert(zever_db.open(fx.dsn, { pool_size = 1, idle_timeout = 0.05 }))
    local defer = require("spec.support.defer")(finally)
    defer(function() db:close() end)
    assert.are.equal(1, db:first("SELECT 1 AS one").one)
    pump_until(function() return db:pool_stats().open == 0 end)
    assert.are.equal(1, db:pool_stats().idle_closed)
    -- A script whose pool holds an idle connection (idle_timeout 300 s) and then runs the loop
    -- to its end: loop.run() returns at once, as without a pool (the guard is `timeout`).
    local dir = os.tmpname()
    local script = dir .. ".lua"
    local f = assert(io.open(script, "w"))
    f:write([[
local db = assert(require("zever.db").open(arg[1], { idle_timeout = 300 }))
assert(db:first("SELECT 1 AS one").one == 1)
assert(db:pool_stats().idle == 1)
require("zever.loop").run()
io.write("returned ", db:pool_stats().idle)
db:close()
]])
    f:close()
    defer(function() os.remove(script); os.remove(dir) end)
    local r = process.run("timeout 60 " .. process.quote(sys.exe()) .. " run "
      .. process.quote(script) .. " " .. process.quote(fx.dsn))
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("returned 1", r.stdout)
  end)

  it("refuses a clock that is not one", function()
    assert.has_error(function() zever_db.open(fx.dsn, { clock = function() end }) end,
      "db.open: clock must be a table with now and timer functions")
  end)
end)
