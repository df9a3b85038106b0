-- zever add BATTERY[/ADAPTER] writes the migration of every battery that keeps tables in the app's
-- database (zever.cli.tables); a second add changes nothing; `zever migrate up` then creates the
-- tables (on SQLite, and on a real PostgreSQL 15 with #pg), and `migrate down` drops them.

local process = require "spec.support.process"
local fs = require "spec.support.files"
local pg_server = require "spec.support.pg_server"
local json = require "zever.json"
local sys = require "zever.sys"

local quote = process.quote

-- What to add, and the tables migrate up must create (written here, not taken from the module).
local CASES = {
  { add = "cache/db", tables = { "cache_entries" } },
  { add = "session/db", tables = { "sessions" } },
  { add = "queue", tables = { "queue_messages" } },
  { add = "jobs", tables = { "queue_messages", "failed_jobs" } },
  { add = "scheduler/db", tables = { "scheduler_locks" } },
  { add = "idempotency/db", tables = { "idempotency_keys" } },
  { add = "search", tables = { "zever_search" }, sqlite = { "zever_search_fts", "zever_search_pending" } },
  { add = "vectors", tables = { "zever_vectors" } },
  { add = "outbox", tables = { "queue_messages", "outbox_messages" } },
}

local function zever_in(dir, ...)
  local parts = { "cd " .. quote(dir) .. " && " .. quote(sys.exe()) }
  for i = 1, select("#", ...) do parts[#parts + 1] = quote((select(i, ...))) end
  return process.run(table.concat(parts, " "))
end

local function checksum(dir)
  return process.output("cd " .. quote(dir) .. " && find . -type f -print0 | sort -z | xargs -0 md5sum")
end

local function sqlite_tables(file)
  local out = process.output("sqlite3 " .. quote(file) .. " \"SELECT name FROM sqlite_master WHERE type = 'table'\"")
  local set = {}
  for name in out:gmatch("[^\n]+") do set[name] = true end
  return set
end

describe("zever add writes migrations #cli", function()
  local root

  before_each(function() root = fs.tmpdir() end)
  after_each(function() os.execute("rm -rf " .. quote(root)) end)

  for _, case in ipairs(CASES) do
    it(case.add .. ": a migration, once; migrate up creates its tables on SQLite, down drops them", function()
      local r = zever_in(root, "new", "shop", "--batteries", "db")
      assert.are.equal(0, r.code, r.stderr)
      local app = root .. "/shop"
      r = zever_in(app, "add", case.add, "--json")
      assert.are.equal(0, r.code, r.stdout .. r.stderr)
      local report = json.decode(r.stdout)
      assert.is_true(#report.migrations >= 1, r.stdout)
      for _, m in ipairs(report.migrations) do
        assert.matches("^migrations/%d%d%d%d_zever_[%w_]+%.lua$", m)
        assert.is_truthy(fs.slurp(app .. "/" .. m), m)
      end
      -- Idempotent: the second add writes no byte.
      local before = checksum(app)
      r = zever_in(app, "add", case.add)
      assert.are.equal(0, r.code, r.stderr)
      assert.matches("already configured", r.stdout, 1, true)
      assert.are.equal(before, checksum(app))
      -- Nothing is created before migrate up runs.
      local db = app .. "/data/app.db"
      for _, t in ipairs(case.tables) do assert.is_nil(sqlite_tables(db)[t], t) end
      r = zever_in(app, "migrate", "up", "--json")
      assert.are.equal(0, r.code, r.stderr)
      assert.are.equal(#report.migrations, #json.decode(r.stdout).applied)
      local have = sqlite_tables(db)
      for _, t in ipairs(case.tables) do assert.is_true(have[t], t .. " after migrate up") end
      for _, t in ipairs(case.sqlite or {}) do assert.is_true(have[t], t .. " after migrate up") end
      r = zever_in(app, "migrate", "down", "-n", tostring(#report.migrations))
      assert.are.equal(0, r.code, r.stderr)
      have = sqlite_tables(db)
      for _, t in ipairs(case.tables) do assert.is_nil(have[t], t .. " after migrate down") end
    end)
  end

  it("leaves a table the adapter already made as it is (IF NOT EXISTS), with its rows", function()
    assert.are.equal(0, zever_in(root, "new", "shop", "--batteries", "db").code)
    local app = root .. "/shop"
    assert.are.equal(0, zever_in(app, "add", "cache/db").code)
    fs.write(app .. "/use.lua", [[
local app = require("zever.app").load("app.lua", (require("zever.config.paths").cwd()))
assert(app.cache:set("k", "v"))
app:close()
]])
    local r = zever_in(app, "run", "use.lua")
    assert.are.equal(0, r.code, r.stdout .. r.stderr)
    r = zever_in(app, "migrate", "up")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("1", process.output("sqlite3 " .. quote(app .. "/data/app.db") ..
      " 'SELECT count(*) FROM cache_entries'"))
  end)

  it("numbers migrations after the app's own and says what it would write with --dry-run", function()
    assert.are.equal(0, zever_in(root, "new", "shop", "--batteries", "db").code)
    local app = root .. "/shop"
    assert.are.equal(0, zever_in(app, "migrate", "new", "users").code)
    local before = checksum(app)
    local r = zever_in(app, "add", "jobs", "--dry-run")
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("would write migrations/0002_zever_queue.lua (tables queue_messages)", r.stdout, 1, true)
    assert.matches("would write migrations/0003_zever_jobs.lua (tables failed_jobs)", r.stdout, 1, true)
    assert.are.equal(before, checksum(app))
    r = zever_in(app, "add", "jobs")
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("wrote migrations/0003_zever_jobs.lua", r.stdout, 1, true)
    assert.matches("next: zever migrate up", r.stdout, 1, true)
  end)
end)

describe("zever add migrations on PostgreSQL #pg #cli", function()
  local fx = pg_server.fixture("add_migrations")
  local root

  setup(function() root = fs.tmpdir() end)
  teardown(function() os.execute("rm -rf " .. quote(root)) end)

  it("migrate up creates every battery's tables on PostgreSQL, down drops them", function()
    local r = zever_in(root, "new", "shop", "--batteries", "db")
    assert.are.equal(0, r.code, r.stderr)
    local app = root .. "/shop"
    local count = 0
    for _, case in ipairs(CASES) do
      r = zever_in(app, "add", case.add, "--json")
      assert.are.equal(0, r.code, r.stdout .. r.stderr)
      count = count + #json.decode(r.stdout).migrations
    end
    r = zever_in(app, "migrate", "up", "--json", "--dsn", fx.dsn)
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal(count, #json.decode(r.stdout).applied)
    local srv = pg_server.shared()
    for _, case in ipairs(CASES) do
      for _, t in ipairs(case.tables) do
        local q = srv:psql(fx.dsn, "SELECT to_regclass('" .. t .. "') IS NOT NULL")
        assert.are.equal(0, q.code, q.stderr)
        assert.are.equal("t", (q.stdout:gsub("%s+", "")), t .. " after migrate up")
      end
    end
    r = zever_in(app, "migrate", "down", "-n", tostring(count), "--dsn", fx.dsn)
    assert.are.equal(0, r.code, r.stderr)
    local q = srv:psql(fx.dsn, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'")
    assert.are.equal(0, q.code, q.stderr)
    assert.are.equal("0", (q.stdout:gsub("%s+", "")))
  end)
end)
