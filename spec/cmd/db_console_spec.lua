-- luacheck: no max line length
-- zever db console / zever dbshell through the real binary: sqlite3 on the app's SQLite file, psql
-- on a real PostgreSQL 15 (#pg) with the password in psql's environment and never on its command
-- line (read back from /proc by psql itself), usage errors, and no DSN in any output.

local process = require "spec.support.process"
local fs = require "spec.support.files"
local sys = require "zever.sys"
local pg_server = require "spec.support.pg_server"

local quote = process.quote

-- Runs zever in cwd with env ("A=1", may be nil) and the arguments (each quoted).
local function zever_in(cwd, env, ...)
  local parts = { "cd", quote(cwd), "&&", env or "", quote(sys.exe()) }
  for i = 1, select("#", ...) do parts[#parts + 1] = quote((select(i, ...))) end
  return process.run(table.concat(parts, " ") .. " </dev/null")
end

describe("zever db console on sqlite", function()
  local dir
  before_each(function()
    dir = fs.tmpdir({ ["zever.yaml"] = "db:\n  dsn: sqlite:data/app.db\n" })
    os.execute("mkdir -p " .. quote(dir .. "/data"))
    local db = assert(require("zever.db").open("sqlite:" .. dir .. "/data/app.db"))
    db:exec("CREATE TABLE t (x INTEGER)")
    db:exec("INSERT INTO t VALUES (41)")
    db:close()
  end)
  after_each(function() fs.rm_rf(dir) end)

  it("runs sqlite3 on the configured file, with the arguments after --", function()
    local r = zever_in(dir, nil, "db", "console", "--", "SELECT x + 1 FROM t;")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("42\n", r.stdout)
  end)

  it("is the same command as zever dbshell, from another folder with -C", function()
    local elsewhere = fs.tmpdir()
    local r = zever_in(elsewhere, nil, "dbshell", "-C", dir, "--", "SELECT count(*) FROM t;")
    fs.rm_rf(elsewhere)
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("1\n", r.stdout)
  end)

  it("takes --dsn over the configuration", function()
    local other = assert(require("zever.db").open("sqlite:" .. dir .. "/other.db"))
    other:exec("CREATE TABLE o (y)")
    other:close()
    local r = zever_in(dir, nil, "db", "console", "--dsn", "sqlite:other.db", "--", ".tables")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("o\n", r.stdout)
  end)

  it("exits 2 on a missing or unknown subcommand, an in-memory database or an unknown scheme", function()
    local r = zever_in(dir, nil, "db")
    assert.are.equal(2, r.code)
    assert.truthy(r.stderr:find("missing subcommand", 1, true), r.stderr)
    r = zever_in(dir, nil, "db", "consol")
    assert.are.equal(2, r.code)
    assert.truthy(r.stderr:find('Did you mean "console"?', 1, true), r.stderr)
    r = zever_in(dir, nil, "db", "console", "--dsn", "sqlite::memory:")
    assert.are.equal(2, r.code)
    assert.truthy(r.stderr:find("in memory", 1, true), r.stderr)
    r = zever_in(dir, nil, "db", "console", "--dsn", "mysql://u:hidden-pw@h/db")
    assert.are.equal(2, r.code)
    assert.truthy(r.stderr:find('not "mysql:"', 1, true), r.stderr)
    assert.is_nil(r.stderr:find("hidden-pw", 1, true))
  end)
end)

describe("zever db console on postgres #pg", function()
  local fx = pg_server.fixture("db_console")
  local dir
  before_each(function() dir = fs.tmpdir() end)
  after_each(function() fs.rm_rf(dir) end)

  it("runs psql with the password in its environment, not on its command line", function()
    -- psql prints its own command line (/proc/<psql>/cmdline: psql is this process after exec)
    -- and whether PGPASSWORD is in its environment, then runs a query.
    local show = [[\! tr '\0' ' ' < /proc/$PPID/cmdline; echo; tr '\0' '\n' < /proc/$PPID/environ | grep -c '^PGPASSWORD=' ]]
    local r = zever_in(dir, "DB_DSN=" .. quote(fx.dsn), "db", "console", "--", "-X", "-q", "-A", "-t",
      "-c", show, "-c", "SELECT current_user || '@' || current_database()")
    assert.are.equal(0, r.code, r.stderr)
    local argv, npw, who = r.stdout:match("^(.-)\n(%d+)\n(.-)\n$")
    assert.truthy(argv, r.stdout)
    assert.truthy(argv:find("psql postgres://zever@127.0.0.1:" .. fx.server.port .. "/" .. fx.name, 1, true), argv)
    assert.is_nil(argv:find(fx.server.password, 1, true), argv)
    assert.are.equal("1", npw)
    assert.are.equal("zever@" .. fx.name, who)
    assert.is_nil((r.stdout .. r.stderr):find(fx.server.password, 1, true))
  end)

  it("takes the password from the query string too, and zever dbshell is the same", function()
    local dsn = fx.dsn:gsub(":" .. fx.server.password .. "@", "@") .. "?password=" .. fx.server.password .. "&application_name=zever_console"
    local r = zever_in(dir, nil, "dbshell", "--dsn", dsn, "--", "-X", "-q", "-A", "-t",
      "-c", [[\! tr '\0' ' ' < /proc/$PPID/cmdline; echo]], "-c", "SELECT current_setting('application_name')")
    assert.are.equal(0, r.code, r.stderr)
    assert.is_nil(r.stdout:find(fx.server.password, 1, true), r.stdout)
    assert.truthy(r.stdout:find("?application_name=zever_console", 1, true), r.stdout)
    assert.truthy(r.stdout:find("\nzever_console\n$"), r.stdout)
  end)

  it("exits with psql's status and prints no password when the server refuses", function()
    local bad = fx.dsn:gsub(":" .. fx.server.password .. "@", ":wrong-" .. fx.server.password .. "@")
    local r = zever_in(dir, nil, "db", "console", "--dsn", bad, "--", "-X", "-c", "SELECT 1")
    assert.are_not.equal(0, r.code)
    assert.truthy(r.stderr:find("password authentication failed", 1, true), r.stderr)
    assert.is_nil((r.stdout .. r.stderr):find(fx.server.password, 1, true))
  end)
end)

describe("db console's URI split", function()
  local split = require("cmd.zever.db").split_password
  -- { DSN, URI without the password, password }
  local rows = {
    { "postgres://u:p@h:5432/db", "postgres://u@h:5432/db", "p" },
    { "postgresql://u:p%40ss%3A@h/db?sslmode=disable", "postgresql://u@h/db?sslmode=disable", "p@ss:" },
    { "postgres://u@h/db?password=x%26y&connect_timeout=3", "postgres://u@h/db?connect_timeout=3", "x&y" },
    { "postgres://h/db", "postgres://h/db", nil },
    { "postgres://u:@h/db", "postgres://u@h/db", "" },
  }
  for _, row in ipairs(rows) do
    it("splits " .. row[1], function()
      local uri, pw = split(row[1])
      assert.are.equal(row[2], uri)
      assert.are.equal(row[3], pw)
    end)
  end
end)
