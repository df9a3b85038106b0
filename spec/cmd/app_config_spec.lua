-- luacheck: no max line length
-- Every command and the app's configuration, through the real binary: one way to name the app
-- (-C DIR, --app, the positional; old spellings with a deprecation line), flags over the
-- configuration over the defaults, relative paths resolved against the app folder from any
-- current directory, the app: section and APP_<KEY>, doctor pinging Redis, no secret in any
-- output, and no internal file reachable as a command. Each describe owns a temporary app folder
-- and an empty folder to run from ("elsewhere"), so nothing depends on the current directory.

local process = require "spec.support.process"
local fs = require "spec.support.files"
local sys = require "zever.sys"
local json = require "zever.json"

local quote = process.quote

-- Temporary folders and files: spec/support/files.
local function tmpdir() return fs.tmpdir() end
local function write(dir, name, text) fs.write(dir .. "/" .. name, text) end
local read = fs.slurp

local function exists(path)
  return read(path) ~= nil
end

-- A folder holding files { name = text }.
local function app_dir(files) return fs.tmpdir(files) end

local function rm(dir)
  if dir then fs.rm_rf(dir) end
end

-- Runs zever in cwd with env ("A=1 B=2", may be nil) and the arguments (each quoted).
local function zever_in(cwd, env, ...)
  local parts = { "cd", quote(cwd), "&&", env or "", quote(sys.exe()) }
  for i = 1, select("#", ...) do parts[#parts + 1] = quote((select(i, ...))) end
  return process.run(table.concat(parts, " "))
end

-- The names of the tables of a SQLite file.
local function tables(file)
  local db = assert(require("zever.db").open("sqlite:" .. file))
  local names = {}
  for _, r in ipairs(db:query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")) do
    names[#names + 1] = r.name
  end
  db:close()
  return names
end

local function has(list, x)
  for _, v in ipairs(list) do
    if v == x then return true end
  end
  return false
end

-- Waits (polling, at most secs) until cond() is true.
local wait_for = process.wait_for

local alive = process.alive

-- Starts zever in the background in cwd; waits until its stderr/stdout log shows ready (a
-- pattern); returns { pid, log }.
-- Processes started by the running spec; its finally kills any a failed assertion left behind.
local started = {}

local function start_in(cwd, env, ready, ...)
  local log = os.tmpname()
  local parts = { "cd", quote(cwd), "&&", env or "", "exec", quote(sys.exe()) }
  for i = 1, select("#", ...) do parts[#parts + 1] = quote((select(i, ...))) end
  local p = io.popen(table.concat(parts, " ") .. " >" .. log .. " 2>&1 & echo $!")
  local pid = tonumber(p:read("*l"))
  p:close()
  started[#started + 1] = pid
  finally(function()
    for i = #started, 1, -1 do
      if alive(started[i]) then os.execute("kill -KILL " .. started[i] .. " 2>/dev/null") end
      started[i] = nil
    end
  end)
  assert(wait_for(function() return (read(log) or ""):find(ready) end, 15),
    "did not start: " .. (read(log) or ""))
  return { pid = pid, log = log }
end

local function stop(proc)
  if alive(proc.pid) then os.execute("kill -TERM " .. proc.pid) end
  assert(wait_for(function() return not alive(proc.pid) end, 15), "still running")
  local out = read(proc.log) or ""
  os.remove(proc.log)
  return out
end

-- A port nothing listens on: the kernel gives a free one, we close it at once.
local function closed_port()
  local srv = assert(require("zever.http").listen({ host = "127.0.0.1", port = 0, reuseport = false },
    function() end))
  local port = srv:port()
  srv:close()
  return port
end

describe("zever commands name the app one way", function()
  local dir, elsewhere
  setup(function()
    dir = app_dir({
      ["zever.yaml"] = "http:\n  app: main.lua\napp:\n  name: Bookmarks\n",
      ["main.lua"] = 'local app = require("zever").app()\napp:get("/main", function() return "main" end)\nreturn app\n',
      ["other.lua"] = 'local app = require("zever").app()\napp:get("/other", function() return "other" end)\nreturn app\n',
      ["src/main.lua"] = 'local app = require("zever").app()\n'
        .. 'app:get("/name", function() return app:config().app.name end)\nreturn app\n',
    })
    elsewhere = tmpdir()
  end)
  teardown(function()
    rm(dir)
    rm(elsewhere)
  end)

  it("loads the app file http.app names, unless a positional file or --app overrides it", function()
    local r = zever_in(elsewhere, nil, "routes", "-C", dir, "--json")
    assert.equal(0, r.code, r.stderr)
    assert.equal("/main", json.decode(r.stdout)[1].pattern)
    r = zever_in(elsewhere, nil, "-C", dir, "routes", "--json")
    assert.equal(0, r.code, r.stderr)
    assert.equal("/main", json.decode(r.stdout)[1].pattern)
    r = zever_in(elsewhere, nil, "routes", dir, "--json")
    assert.equal("/main", json.decode(r.stdout)[1].pattern)
    r = zever_in(elsewhere, nil, "routes", "--app", dir, "--json")
    assert.equal("/main", json.decode(r.stdout)[1].pattern)
    r = zever_in(elsewhere, nil, "routes", dir .. "/other.lua", "--json")
    assert.equal("/other", json.decode(r.stdout)[1].pattern)
    r = zever_in(elsewhere, "HTTP_APP=other.lua", "routes", dir, "--json")
    assert.equal("/other", json.decode(r.stdout)[1].pattern)
  end)

  it("takes a positional app relative to -C DIR, like make -C", function()
    local r = zever_in(elsewhere, nil, "-C", dir, "routes", "other.lua", "--json")
    assert.equal(0, r.code, r.stderr)
    assert.equal("/other", json.decode(r.stdout)[1].pattern)
  end)

  it("refuses two different apps, and a missing one, with exit 2", function()
    local r = zever_in(elsewhere, nil, "routes", dir, "--app", dir .. "/other.lua")
    assert.equal(2, r.code)
    assert.matches("give the app once", r.stderr, 1, true)
    r = zever_in(elsewhere, nil, "routes", "--app", dir .. "/nothing-here")
    assert.equal(2, r.code)
    assert.matches('no app at "', r.stderr, 1, true)
    r = zever_in(elsewhere, nil, "-C", dir .. "/nothing-here", "routes")
    assert.equal(2, r.code)
    assert.matches("no such folder", r.stderr, 1, true)
  end)

  it("keeps --dir working for config, doctor and mail with one deprecation line", function()
    local want = zever_in(elsewhere, nil, "config", "show", "--json", "-C", dir)
    assert.equal(0, want.code, want.stderr)
    assert.equal("", want.stderr)
    assert.equal(dir .. "/main.lua", json.decode(want.stdout).http.app)
    local r = zever_in(elsewhere, nil, "config", "show", "--json", "--dir", dir)
    assert.equal(0, r.code, r.stderr)
    assert.same(json.decode(want.stdout), json.decode(r.stdout))
    assert.equal("zever config: --dir is deprecated; use -C DIR (or --app DIR)\n", r.stderr)
    r = zever_in(elsewhere, nil, "config", "show", "--json", "--app", dir)
    assert.same(json.decode(want.stdout), json.decode(r.stdout))
    assert.equal("", r.stderr)
    r = zever_in(elsewhere, nil, "doctor", "--dir", dir, "--json")
    assert.matches("^zever doctor: %-%-dir is deprecated; use %-C DIR %(or %-%-app DIR%)\n", r.stderr)
    r = zever_in(elsewhere, "MAILER_LOG_FILE=mail.log", "mail", "test", "--to", "a@example.com", "--dir", dir)
    assert.equal(0, r.code, r.stderr)
    assert.equal("zever mail: --dir is deprecated; use -C DIR (or --app DIR)\n", r.stderr)
  end)

  it("serves an http.app in a subfolder with the app folder's configuration", function()
    local srv = start_in(elsewhere, "HTTP_APP=src/main.lua", "on http://127%.0%.0%.1:%d+", "serve", dir,
      "--listen", "127.0.0.1:0", "--workers", "1")
    local port = (read(srv.log) or ""):match("on http://127%.0%.0%.1:(%d+)")
    local r = process.run("curl -s -S --max-time 10 http://127.0.0.1:" .. port .. "/name")
    local log = stop(srv)
    assert.equal("Bookmarks", r.stdout, log)
    r = zever_in(elsewhere, "HTTP_APP=src/main.lua", "routes", "-C", dir)
    assert.equal(0, r.code, r.stderr)
    assert.matches(dir .. "/src/main.lua:2", r.stdout, 1, true)
  end)

  it("serves the app http.app names from another directory", function()
    local srv = start_in(elsewhere, nil, "on http://127%.0%.0%.1:%d+", "serve", "-C", dir,
      "--listen", "127.0.0.1:0", "--workers", "1")
    local port = (read(srv.log) or ""):match("on http://127%.0%.0%.1:(%d+)")
    local r = process.run("curl -s -S --max-time 10 http://127.0.0.1:" .. port .. "/main")
    local log = stop(srv)
    assert.equal("main", r.stdout, log)
    assert.matches(dir .. "/main.lua", log, 1, true)
  end)
end)

describe("zever migrate and the configuration", function()
  local dir, elsewhere
  before_each(function()
    dir = app_dir({
      ["zever.yaml"] = "db:\n  dsn: sqlite:data/app.db\n  migrations: db/migrate\n",
      ["db/migrate/0001_t.lua"] = 'return { up = function(db) db:exec("CREATE TABLE t (id INTEGER)") end,\n'
        .. '  down = function(db) db:exec("DROP TABLE t") end }\n',
    })
    elsewhere = tmpdir()
  end)
  after_each(function()
    rm(dir)
    rm(elsewhere)
  end)

  it("migrates db.dsn with db.migrations, relative to the app folder, from any directory", function()
    local r = zever_in(elsewhere, nil, "migrate", "up", "-C", dir)
    assert.equal(0, r.code, r.stderr)
    assert.truthy(has(tables(dir .. "/data/app.db"), "t"))
    assert.is_false(exists(dir .. "/app.db"))
    assert.same({}, sys.listdir(elsewhere))
    r = zever_in(elsewhere, nil, "migrate", "status", "--json", "--app", dir)
    assert.equal(0, r.code, r.stderr)
    assert.equal(true, json.decode(r.stdout)[1].applied)
    r = zever_in(elsewhere, nil, "migrate", "new", "add_u", "-C", dir)
    assert.equal(0, r.code, r.stderr)
    assert.equal("db/migrate/0002_add_u.lua\n", r.stdout)
  end)

  it("lets --dsn and --migrations override the configuration", function()
    write(dir, "flagged/0001_f.lua", 'return { up = function(db) db:exec("CREATE TABLE f (id)") end }\n')
    local r = zever_in(dir, nil, "migrate", "up", "--dsn", "sqlite:flag.db", "--migrations", "flagged")
    assert.equal(0, r.code, r.stderr)
    assert.truthy(has(tables(dir .. "/flag.db"), "f"))
    assert.is_false(exists(dir .. "/data/app.db"))
  end)

  it("uses the environment over the file", function()
    local r = zever_in(elsewhere, "DB_DSN=sqlite:env.db", "migrate", "up", "-C", dir)
    assert.equal(0, r.code, r.stderr)
    assert.truthy(has(tables(dir .. "/env.db"), "t"))
    assert.is_false(exists(dir .. "/data/app.db"))
  end)

  it("uses the defaults without a configuration: app.db and migrations/ in the app folder", function()
    os.remove(dir .. "/zever.yaml")
    write(dir, "migrations/0001_d.lua", 'return { up = function(db) db:exec("CREATE TABLE d (id)") end }\n')
    local r = zever_in(elsewhere, nil, "migrate", "up", "-C", dir)
    assert.equal(0, r.code, r.stderr)
    assert.truthy(has(tables(dir .. "/app.db"), "d"))
  end)

  it("keeps --dir as the migrations folder with a deprecation line", function()
    write(dir, "old/0001_o.lua", 'return { up = function(db) db:exec("CREATE TABLE o (id)") end }\n')
    local r = zever_in(dir, nil, "migrate", "up", "--dir", "old")
    assert.equal(0, r.code, r.stderr)
    assert.equal("zever migrate: --dir is deprecated; use --migrations DIR\n", r.stderr)
    assert.truthy(has(tables(dir .. "/data/app.db"), "o"))
  end)

  it("prints no password and no module search path for a DSN without an adapter", function()
    local r = zever_in(elsewhere, nil, "migrate", "status", "--dsn", "mysql://app:pw@db.example/app")
    assert.equal(1, r.code)
    assert.equal("", r.stdout)
    local lines = select(2, r.stderr:gsub("\n", ""))
    assert.equal(1, lines, r.stderr)
    assert.equal('zever migrate: status: db: adapter "mysql" is not available: this build has no db adapter '
      .. 'by that name (available: postgres, sqlite)\n', r.stderr)
    assert.is_nil(r.stderr:find("pw", 1, true))
    assert.is_nil(r.stderr:find("no file", 1, true))
    assert.is_nil(r.stderr:find("traceback", 1, true))
  end)

  it("hides the password of a DSN in any failure", function()
    local r = zever_in(elsewhere, "DB_ADAPTER=postgres DB_DSN=postgres://app:hunter2@db.example/app",
      "doctor", "-C", dir)
    assert.equal(1, r.code)
    assert.matches('FAIL  db', r.stdout, 1, true)
    assert.is_nil((r.stdout .. r.stderr):find("hunter2", 1, true))
    r = zever_in(elsewhere, "MAILER_ADAPTER=smtp MAILER_SMTP_HOST=127.0.0.1 MAILER_SMTP_PORT=" .. closed_port()
      .. " MAILER_SMTP_TLS=none MAILER_SMTP_USERNAME=app MAILER_SMTP_PASSWORD=hunter2 MAILER_TIMEOUT=2s",
      "mail", "test", "--to", "a@example.com", "-C", dir)
    assert.equal(1, r.code)
    assert.matches("zever mail: ", r.stderr, 1, true)
    assert.is_nil((r.stdout .. r.stderr):find("hunter2", 1, true))
  end)
end)

describe("zever worker, jobs, mail and search use the app's configuration from any directory", function()
  local dir, elsewhere, was_testing
  -- The specs load the app in this process as `zever serve` would (not in the test mode that
  -- swaps its database for :memory:), so that the commands they start see the same file.
  local app_mod = require "zever.app"
  setup(function()
    was_testing, app_mod.testing = app_mod.testing, false
    dir = app_dir({
      ["zever.yaml"] = "db:\n  dsn: sqlite:data/app.db\nmailer:\n  log_file: mail.log\n  from: app@example.com\n"
        .. "jobs:\n  concurrency: 3\n  attempts: 1\nqueue:\n  poll_max: 20ms\nlog:\n  level: error\n",
      ["data/.keep"] = "",
      ["app.lua"] = [[
local app = require("zever").app()
app.jobs:register("welcome", function(args)
  assert(app.mailer:send{ to = args.to, subject = "welcome", text = "hi" })
end)
app.jobs:register("boom", function() error("boom") end)
return app
]],
    })
    elsewhere = tmpdir()
  end)
  teardown(function()
    app_mod.testing = was_testing
    rm(dir)
    rm(elsewhere)
  end)

  it("runs a mail job started from elsewhere, writing mailer.log_file in the app folder", function()
    local app = require("zever.app").load(dir)
    assert(app.jobs:dispatch("welcome", { to = "ann@example.com" }))
    assert(app.jobs:dispatch("boom"))
    assert(app:close())
    local w = start_in(elsewhere, nil, "worker for", "worker", dir)
    assert(wait_for(function() return (read(dir .. "/mail.log") or ""):find("ann@example.com", 1, true) end, 15),
      "no mail in " .. dir .. "/mail.log")
    local r
    assert(wait_for(function()
      r = zever_in(elsewhere, nil, "jobs", "failed", "--json", "-C", dir)
      return r.code == 0 and #json.decode(r.stdout) == 1
    end, 15), r and (r.stdout .. r.stderr))
    local log = stop(w)
    assert.matches("(concurrency 3)", log, 1, true)
    assert.equal("boom", json.decode(r.stdout)[1].name)
    assert.same({}, sys.listdir(elsewhere))
  end)

  it("takes --concurrency over jobs.concurrency, and the default without either", function()
    local w = start_in(elsewhere, nil, "worker for", "worker", "--app", dir, "--concurrency", "2")
    assert.matches("(concurrency 2)", stop(w), 1, true)
    local bare = app_dir({ ["app.lua"] = 'return require("zever").app()\n' })
    w = start_in(elsewhere, "DB_DSN=sqlite::memory:", "worker for", "-C", bare, "worker")
    local log = stop(w)
    rm(bare)
    assert.matches("(concurrency 1)", log, 1, true)
  end)

  it("fails a dispatch of a job name the app did not register, with a did-you-mean", function()
    write(dir, "typo.lua", 'local app = require("zever.app").load(arg[1])\napp.jobs:dispatch("welcom", {})\n')
    local r = zever_in(elsewhere, nil, "run", dir .. "/typo.lua", dir)
    assert.equal(1, r.code)
    assert.matches('no job named "welcom" is registered; did you mean "welcome"?', r.stderr, 1, true)
  end)

  it("sends a test mail with mailer.from, or --from over it", function()
    local r = zever_in(elsewhere, nil, "mail", "test", "--to", "bob@example.com", "-C", dir)
    assert.equal(0, r.code, r.stderr)
    local line = (read(dir .. "/mail.log") or ""):match("[^\n]*bob@example%.com[^\n]*")
    assert.truthy(line)
    assert.matches("app@example.com", line, 1, true)
    r = zever_in(elsewhere, nil, "mail", "test", "--to", "cy@example.com", "--from", "ops@example.com", "--app", dir)
    assert.equal(0, r.code, r.stderr)
    line = (read(dir .. "/mail.log") or ""):match("[^\n]*cy@example%.com[^\n]*")
    assert.matches("ops@example.com", line, 1, true)
    assert.is_nil(line:find("app@example.com", 1, true))
  end)

  it("reindexes the search documents of the app's database", function()
    local app = require("zever.app").load(dir)
    assert(app.search:index_batch({ { id = "b1", content = "lua web framework" },
      { id = "b2", content = "redis cache" } }))
    assert(app:close())
    local r = zever_in(elsewhere, nil, "search", "reindex", "-C", dir)
    assert.equal(0, r.code, r.stderr)
    assert.matches("^reindexed 2 document%(s%)", r.stdout)
    assert.same({}, sys.listdir(elsewhere))
  end)

  it("lists the schedules of the app named by -C, --app or the positional alike", function()
    local a = zever_in(elsewhere, nil, "schedule", "list", "--json", "-C", dir)
    local b = zever_in(elsewhere, nil, "schedule", "list", "--json", "--app", dir)
    local c = zever_in(elsewhere, nil, "schedule", "list", dir, "--json")
    assert.equal(0, a.code, a.stderr)
    assert.equal("[]\n", a.stdout)
    assert.equal(a.stdout, b.stdout)
    assert.equal(a.stdout, c.stdout)
  end)
end)

describe("the app: section", function()
  local dir, elsewhere
  setup(function()
    dir = app_dir({
      ["zever.yaml"] = "app:\n  name: Bookmarks\n  per_page: 20\n  stripe_api_key: sk_live_secret\n"
        .. "  features:\n    tags: true\n",
      ["app.lua"] = 'local app = require("zever").app()\nreturn app\n',
      ["show.lua"] = 'local app = require("zever.app").load(arg[1])\nlocal c = app:config().app\n'
        .. 'print(c.name, c.per_page, type(c.per_page), c.features.tags)\n',
    })
    elsewhere = tmpdir()
  end)
  teardown(function()
    rm(dir)
    rm(elsewhere)
  end)

  it("reaches the app as app:config().app, with APP_<KEY> over the file", function()
    local r = zever_in(elsewhere, nil, "run", dir .. "/show.lua", dir)
    assert.equal(0, r.code, r.stderr)
    assert.equal("Bookmarks\t20\tnumber\ttrue\n", r.stdout)
    r = zever_in(elsewhere, "APP_NAME=Links APP_PER_PAGE=50", "run", dir .. "/show.lua", dir)
    assert.equal(0, r.code, r.stderr)
    assert.equal("Links\t50\tnumber\ttrue\n", r.stdout)
  end)

  it("is shown by config show with its secrets redacted", function()
    local r = zever_in(elsewhere, "APP_PER_PAGE=50", "config", "show", "-C", dir)
    assert.equal(0, r.code, r.stderr)
    assert.matches("\napp:\n  features:\n    tags: true\n  name: Bookmarks\n  per_page: 50\n"
      .. '  stripe_api_key: "[REDACTED]"\n', r.stdout, 1, true)
    assert.is_nil(r.stdout:find("sk_live", 1, true))
    r = zever_in(elsewhere, nil, "config", "show", "--json", "-C", dir)
    assert.equal("[REDACTED]", json.decode(r.stdout).app.stripe_api_key)
  end)

  it("rejects an APP_ value that does not fit the file's type, naming the variable only", function()
    local r = zever_in(elsewhere, "APP_PER_PAGE=lots", "config", "show", "-C", dir)
    assert.equal(1, r.code)
    assert.matches("environment variable APP_PER_PAGE (app.per_page): expected a number", r.stderr, 1, true)
    assert.is_nil(r.stderr:find("lots", 1, true))
  end)
end)

describe("zever doctor pings what it resolves", function()
  local dir, elsewhere
  setup(function()
    dir = app_dir({ ["zever.yaml"] = "db:\n  dsn: sqlite:data/app.db\n" })
    fs.write(dir .. "/data/.keep", "")
    elsewhere = tmpdir()
  end)
  teardown(function()
    rm(dir)
    rm(elsewhere)
  end)

  it("prints FAIL and exits 1 when the Redis of CACHE_ADAPTER=redis does not answer", function()
    local url = "redis://:hunter2@127.0.0.1:" .. closed_port() .. "/0"
    local r = zever_in(elsewhere, "CACHE_ADAPTER=redis REDIS_URL=" .. quote(url), "doctor", "-C", dir)
    assert.equal(1, r.code, r.stdout .. r.stderr)
    assert.matches("\nFAIL  cache%s+redis%s+redis: ", r.stdout)
    assert.is_nil((r.stdout .. r.stderr):find("hunter2", 1, true))
    local j = zever_in(elsewhere, "CACHE_ADAPTER=redis REDIS_URL=" .. quote(url), "doctor", "--json", "-C", dir)
    assert.equal(1, j.code)
    local rows = {}
    for _, row in ipairs(json.decode(j.stdout).rows) do rows[row.battery] = row end
    assert.equal("FAIL", rows.cache.status)
    assert.equal("OK", rows.db.status)
  end)

  it("prints FAIL for a postgres database that does not answer, without its password", function()
    local dsn = "postgres://app:pw-doctor-secret@127.0.0.1:" .. closed_port() .. "/app"
    local r = zever_in(elsewhere, "DB_DSN=" .. quote(dsn), "doctor", "-C", dir)
    assert.equal(1, r.code)
    assert.matches("\nFAIL  db%s+postgres%s+", r.stdout)
    assert.is_nil((r.stdout .. r.stderr):find("pw-doctor-secret", 1, true))
  end)
end)

describe("zever doctor with a real Redis #redis", function()
  local redis_server = require "spec.support.redis_server"
  local srv = redis_server.fixture({ password = "s3cret-doctor" })
  local dir, elsewhere
  setup(function()
    dir = app_dir({ ["zever.yaml"] = "db:\n  dsn: sqlite:app.db\n" })
    elsewhere = tmpdir()
  end)
  teardown(function()
    rm(dir)
    rm(elsewhere)
  end)

  it("prints OK and exits 0 when every battery answers", function()
    local r = zever_in(elsewhere, "CACHE_ADAPTER=redis LIMITER_ADAPTER=redis REDIS_URL=" .. quote(srv.url),
      "doctor", "-C", dir)
    assert.equal(0, r.code, r.stdout .. r.stderr)
    assert.matches("\nOK    cache%s+redis%s+resolved and pinged in", r.stdout)
    assert.matches("\nOK    limiter%s+redis%s+resolved and pinged in", r.stdout)
    assert.is_nil((r.stdout .. r.stderr):find("s3cret", 1, true))
  end)
end)

describe("the dispatcher", function()
  local elsewhere
  setup(function() elsewhere = tmpdir() end)
  teardown(function() rm(elsewhere) end)

  it("takes zever init for an unknown command with a did-you-mean and exit 2", function()
    local r = zever_in(elsewhere, nil, "init")
    assert.equal(2, r.code)
    assert.equal("", r.stdout)
    assert.equal('zever: unknown command "init". Did you mean "new"?\n', r.stderr)
    r = zever_in(elsewhere, nil, "help", "init")
    assert.equal(2, r.code)
  end)

  it("maps every name it accepts to a command table of that name", function()
    local dispatch = require "cmd.zever"
    local names = dispatch.names()
    assert.truthy(#names > 10)
    assert.is_false(has(names, "init"))
    for _, name in ipairs(names) do
      local cmd = dispatch.load(name)
      assert.equal("table", type(cmd), name)
      assert.equal(name, cmd.name)
      assert.equal("function", type(cmd.run), name)
    end
    assert.is_nil(dispatch.load("init"))
  end)

  it("runs any command in -C DIR, a passthrough one included, and wants a value", function()
    local dir = app_dir({ ["where.lua"] = 'print(io.open("where.lua") ~= nil, ...)\n' })
    local r = zever_in(elsewhere, nil, "-C", dir, "run", "where.lua", "x", "-C", "y")
    rm(dir)
    assert.equal(0, r.code, r.stderr)
    assert.equal("true\tx\t-C\ty\n", r.stdout)
    r = zever_in(elsewhere, nil, "-C")
    assert.equal(2, r.code)
    assert.equal('zever: flag "-C" needs a value (DIR)\n', r.stderr)
  end)

  it("creates an app with zever new that serves its own routes", function()
    local r = zever_in(elsewhere, nil, "new", "shop")
    assert.equal(0, r.code, r.stderr)
    r = zever_in(elsewhere, nil, "routes", "shop", "--json")
    assert.equal(0, r.code, r.stderr)
    local patterns = {}
    for _, route in ipairs(json.decode(r.stdout)) do patterns[#patterns + 1] = route.pattern end
    assert.same({ "/healthz", "/readyz", "/" }, patterns)   -- zever new's app (docs/new.md)
    r = zever_in(elsewhere, nil, "new", "shop")
    assert.equal(1, r.code)
  end)
end)

describe("zever explain with a bare rpc name", function()
  local dir
  setup(function()
    dir = app_dir({ ["schema/bookmarks.zen"] = [[
entity Bookmark { id: int64 @primary  url: string }
service BookmarkService {
  rpc GetBookmark(id: int64) -> Bookmark { http: GET "/v1/bookmarks/{id}" }
}
]] })
  end)
  teardown(function() rm(dir) end)

  it("suggests the full Service.Rpc for a typo", function()
    local r = zever_in(dir, nil, "explain", "GetBookmar")
    assert.equal(2, r.code)
    assert.matches('unknown rpc "GetBookmar". Did you mean "BookmarkService.GetBookmark"?', r.stderr, 1, true)
  end)
end)
