-- zever migrate status is read only: on a database without schema_migrations it lists every
-- migration as pending and creates nothing (the SQLite file keeps every byte, no -wal/-shm is
-- left next to it; on a real PostgreSQL 15 no table appears); once up ran, it reads the table.

local process = require "spec.support.process"
local fs = require "spec.support.files"
local pg_server = require "spec.support.pg_server"
local json = require "zever.json"
local sys = require "zever.sys"

local quote = process.quote

local function zever_in(dir, ...)
  local parts = { "cd " .. quote(dir) .. " && " .. quote(sys.exe()) }
  for i = 1, select("#", ...) do parts[#parts + 1] = quote((select(i, ...))) end
  return process.run(table.concat(parts, " "))
end

-- path -> md5 of every file under dir.
local function checksum(dir)
  return process.output("cd " .. quote(dir) .. " && find . -type f -print0 | sort -z | xargs -0 md5sum")
end

-- An app folder with two migrations and a database file holding one table of its own.
local function app_with_migrations(root)
  local dir = root .. "/app"
  assert(os.execute("mkdir -p " .. quote(dir .. "/migrations") .. " " .. quote(dir .. "/data")))
  fs.write(dir .. "/zever.yaml", "db:\n  dsn: sqlite:data/app.db\n")
  fs.write(dir .. "/migrations/0001_users.lua",
    'return { up = function(db) db:exec("CREATE TABLE users (id INTEGER)") end,\n' ..
    '  down = function(db) db:exec("DROP TABLE users") end }\n')
  fs.write(dir .. "/migrations/0002_posts.lua",
    'return { up = function(db) db:exec("CREATE TABLE posts (id INTEGER)") end,\n' ..
    '  down = function(db) db:exec("DROP TABLE posts") end }\n')
  return dir
end

local function states(stdout)
  local list = assert(json.decode(stdout), stdout)
  local out = {}
  for i, m in ipairs(list) do out[i] = m.version .. (m.applied and " applied" or " pending") end
  return out
end

describe("zever migrate status on SQLite #cli", function()
  local root, dir

  setup(function()
    root = fs.tmpdir()
    dir = app_with_migrations(root)
    local r = process.run("sqlite3 " .. quote(dir .. "/data/app.db") .. " 'CREATE TABLE notes (id INTEGER)'")
    assert(r.code == 0, r.stderr)
  end)

  teardown(function()
    if root then os.execute("rm -rf " .. quote(root)) end
  end)

  it("lists every migration pending and leaves the database file byte-identical", function()
    local before = checksum(dir)
    local r = zever_in(dir, "migrate", "status", "--json")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.same({ "0001 pending", "0002 pending" }, states(r.stdout))
    r = zever_in(dir, "migrate", "status")
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("^pending  0001_users\npending  0002_posts\n$", r.stdout)
    assert.are.equal(before, checksum(dir))
    assert.is_nil(process.output("sqlite3 " .. quote(dir .. "/data/app.db") ..
      " \"SELECT name FROM sqlite_master WHERE name = 'schema_migrations'\""):match("%S"))
  end)

  it("does not create a database file that does not exist", function()
    local r = zever_in(dir, "migrate", "status", "--json", "--dsn", "sqlite:data/none.db")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.same({ "0001 pending", "0002 pending" }, states(r.stdout))
    assert.is_nil(sys.mtime(dir .. "/data/none.db"))
  end)

  it("reads schema_migrations once up created it, still without writing", function()
    local r = zever_in(dir, "migrate", "up", "--dsn", "sqlite:data/other.db")
    assert.are.equal(0, r.code, r.stderr)
    local before = checksum(dir)
    r = zever_in(dir, "migrate", "status", "--json", "--dsn", "sqlite:data/other.db")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.same({ "0001 applied", "0002 applied" }, states(r.stdout))
    assert.are.equal(before, checksum(dir))
  end)
end)

describe("zever migrate status on PostgreSQL #pg #cli", function()
  local fx = pg_server.fixture("migrate_status")
  local root, dir

  setup(function()
    root = fs.tmpdir()
    dir = app_with_migrations(root)
  end)

  teardown(function()
    if root then os.execute("rm -rf " .. quote(root)) end
  end)

  local function tables()
    local q = pg_server.shared():psql(fx.dsn,
      "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'")
    assert(q.code == 0, q.stderr)
    return (q.stdout:gsub("%s+", ""))
  end

  it("lists every migration pending and creates no table", function()
    assert.are.equal("", tables())
    local r = zever_in(dir, "migrate", "status", "--json", "--dsn", fx.dsn)
    assert.are.equal(0, r.code, r.stderr)
    assert.are.same({ "0001 pending", "0002 pending" }, states(r.stdout))
    assert.are.equal("", tables())
    r = zever_in(dir, "migrate", "up", "--dsn", fx.dsn)
    assert.are.equal(0, r.code, r.stderr)
    r = zever_in(dir, "migrate", "status", "--json", "--dsn", fx.dsn)
    assert.are.equal(0, r.code, r.stderr)
    assert.are.same({ "0001 applied", "0002 applied" }, states(r.stdout))
    assert.are.equal("posts,schema_migrations,users", tables())
  end)
end)
