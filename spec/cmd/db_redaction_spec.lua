-- luacheck: no max line length
-- The database commands on a real PostgreSQL 15 (#pg) through the real binary: zever doctor shows
-- the server's version, the pool's state and a SELECT 1 latency; and the DSN's password appears
-- in no output of doctor, config show, migrate (success and failures) or db console, whether the
-- server answers, refuses the password or is not there.

local process = require "spec.support.process"
local fs = require "spec.support.files"
local sys = require "zever.sys"
local json = require "zever.json"
local pg_server = require "spec.support.pg_server"

local quote = process.quote

local function zever_in(cwd, env, ...)
  local parts = { "cd", quote(cwd), "&&", env or "", quote(sys.exe()) }
  for i = 1, select("#", ...) do parts[#parts + 1] = quote((select(i, ...))) end
  return process.run(table.concat(parts, " ") .. " </dev/null")
end

-- A port nothing listens on: the kernel gives a free one, which is closed again.
local function closed_port()
  local srv = assert(require("zever.http").listen({ host = "127.0.0.1", port = 0, reuseport = false },
    function() end))
  local port = srv:port()
  srv:close()
  return port
end

describe("zever doctor on postgres #pg", function()
  local fx = pg_server.fixture("doctor_pg")
  local dir
  before_each(function() dir = fs.tmpdir({ ["zever.yaml"] = "db:\n  adapter: postgres\n" }) end)
  after_each(function() fs.rm_rf(dir) end)

  it("shows the server version, the pool's state and a SELECT 1 latency", function()
    local env = "DB_DSN=" .. quote(fx.dsn)
    local r = zever_in(dir, env, "doctor")
    local line = r.stdout:match("\n(OK  +db +postgres +[^\n]*)")
    assert.truthy(line, r.stdout .. r.stderr)
    local version = fx.server:psql(fx.dsn, "SHOW server_version").stdout:match("^(%d+%.%d+)")
    assert.truthy(line:find("PostgreSQL " .. version, 1, true), line)
    assert.truthy(line:match("SELECT 1 in %d+%.%d%d ms"), line)
    assert.truthy(line:match("pool %d+/%d+ open %(%d+ idle, %d+ busy, %d+ waiting%)"), line)
    local j = zever_in(dir, env, "doctor", "--json")
    local db
    for _, row in ipairs(json.decode(j.stdout).rows) do if row.battery == "db" then db = row end end
    assert.are.equal("OK", db.status)
    assert.are.equal("PostgreSQL " .. version, db.db.server)
    assert.are.equal("number", type(db.db.latency_ms))
    assert.is_true(db.db.pool.open >= 1, json.encode(db.db.pool))
    assert.is_true(db.db.pool.size >= db.db.pool.open)
    for _, out in ipairs { r.stdout, r.stderr, j.stdout, j.stderr } do
      assert.is_nil(out:find(fx.server.password, 1, true))
    end
  end)
end)

describe("no database password in any output #pg", function()
  local fx = pg_server.fixture("redaction_pg")
  local dir
  before_each(function()
    dir = fs.tmpdir({ ["migrations/0001_ok.lua"] = 'return { up = function(db) db:exec("CREATE TABLE ok (id int)") end,\n  down = function(db) db:exec("DROP TABLE ok") end }\n' })
  end)
  after_each(function()
    fx.server:psql(fx.dsn, "DROP TABLE IF EXISTS ok; DROP TABLE IF EXISTS schema_migrations")
    fs.rm_rf(dir)
  end)

  -- Every output of the commands run with DSN dsn; password is what must not appear.
  local function outputs(dsn)
    local env = "DB_DSN=" .. quote(dsn)
    local list = {}
    for _, args in ipairs {
      { "doctor" }, { "doctor", "--json" }, { "config", "show" }, { "config", "show", "--json" },
      { "migrate", "up" }, { "migrate", "status" }, { "migrate", "status", "--json" }, { "migrate", "down" },
      { "db", "console", "--", "-X", "-c", "SELECT 1" },
    } do
      local r = zever_in(dir, env, unpack(args))
      list[#list + 1] = { table.concat(args, " "), r }
    end
    -- --dsn on the command line, and a failing migration
    fs.write(dir .. "/migrations/0002_bad.lua", 'return { up = function(db) db:exec("NOT SQL") end }\n')
    local r = zever_in(dir, nil, "migrate", "up", "--dsn", dsn)
    list[#list + 1] = { "migrate up --dsn (a failing migration)", r }
    os.remove(dir .. "/migrations/0002_bad.lua")
    return list
  end

  local function check(list, password)
    for _, item in ipairs(list) do
      local r = item[2]
      assert.is_nil((r.stdout .. r.stderr):find(password, 1, true), item[1] .. " printed the password:\n" .. r.stdout .. r.stderr)
    end
  end

  it("when the server answers", function()
    local list = outputs(fx.dsn)
    check(list, fx.server.password)
    -- the commands did run against the server (a redaction test that only saw failures proves little)
    assert.are.equal(0, list[5][2].code, list[5][2].stderr)                      -- migrate up
    assert.truthy(list[6][2].stdout:find("applied  0001_ok", 1, true))          -- migrate status
    assert.are.equal(1, list[10][2].code)                                        -- the failing migration
    assert.truthy(list[10][2].stderr:find("0002_bad.lua", 1, true), list[10][2].stderr)
    assert.truthy(list[3][2].stdout:find("[REDACTED]", 1, true), list[3][2].stdout) -- config show
  end)

  it("when the server refuses the password", function()
    local wrong = "wrong-" .. fx.server.password
    local dsn = fx.dsn:gsub(":" .. fx.server.password .. "@", ":" .. wrong .. "@")
    local list = outputs(dsn)
    check(list, wrong)
    assert.are.equal(1, list[1][2].code)                                          -- doctor FAILs
    assert.truthy(list[1][2].stdout:find("password authentication failed", 1, true), list[1][2].stdout)
    assert.are.equal(1, list[5][2].code)                                          -- migrate up fails
  end)

  it("when no server listens", function()
    local pw = "no-server-" .. fx.server.password
    local dsn = ("postgres://zever:%s@127.0.0.1:%d/app"):format(pw, closed_port())
    local list = outputs(dsn)
    check(list, pw)
    assert.are.equal(1, list[1][2].code)
    assert.are.equal(1, list[5][2].code)
  end)
end)
