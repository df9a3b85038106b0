-- zever.cli.scaffold: what `zever new` and `zever add` write: the battery catalogue (which
-- batteries exist, their adapters, what each needs), the zever.yaml stanza of a battery, and the
-- files of a new app. It only computes text; the commands write it. It must not load a battery
-- (no SQLite, no OpenSSL, no Redis: `zever new` stays a start-up plus a few writes).
--
--   scaffold.plan(names, adapters) -> { order = { battery... }, adapter = { [b] = name } } | nil, msg
--   scaffold.stanza(battery, adapter, app_name) -> YAML text (a top-level section)
--   scaffold.files(app_name, plan) -> { { path =, content = }, ... } (sorted by path)
--   scaffold.CATALOGUE, scaffold.list() (the rows of --list-batteries)

local schema = require "zever.config.schema"

local format, concat = string.format, table.concat

local M = {}

-- What a battery is for and what it needs besides itself. needs: batteries picked with it;
-- infra: adapters that need a server (the rest run in the process or on the app's SQLite file).
M.CATALOGUE = {
  db = { doc = "the database (SQLite file; PostgreSQL with db=postgres)" },
  cache = { doc = "key-value cache with TTLs" },
  queue = { doc = "message queue (claims, acks, dead letters)" },
  jobs = { doc = "background jobs and retries over the queue", needs = { "queue" } },
  scheduler = { doc = "cron and every() schedules, one run per slot" },
  mailer = { doc = "outgoing mail (log file in development, SMTP)" },
  limiter = { doc = "token-bucket rate limiter" },
  idempotency = { doc = "Idempotency-Key replay for POSTs" },
  search = { doc = "full-text search on the database", needs = { "db" } },
  vectors = { doc = "vector similarity search on the database", needs = { "db" } },
  crypto = { doc = "keys for encryption and signing" },
  session = { doc = "server-side or cookie sessions" },
  password = { doc = "argon2id password hashing" },
  auth = { doc = "JWT or opaque-token authentication" },
  log = { doc = "the application log (text or JSON)" },
  -- The relay publishes to app.queue unless outbox.relay_sink says eventbus.
  outbox = { doc = "transactional outbox: messages recorded with the data, relayed after commit",
    needs = { "queue" } },
}

-- Adapters that need a server: not zero-infrastructure.
M.INFRA = { redis = true, postgres = true, smtp = true }

-- The batteries, in the configuration schema's order (the order zever.yaml lists them in).
function M.batteries()
  local out = {}
  for _, name in ipairs(schema.batteries) do
    if M.CATALOGUE[name] then out[#out + 1] = name end
  end
  return out
end

function M.adapters(battery)
  local s = schema.by_name[battery]
  return s and s.by_name.adapter.values or {}
end

function M.default_adapter(battery)
  return schema.by_name[battery].by_name.adapter.default
end

-- The rows of --list-batteries: { battery, default adapter, adapters, doc }.
function M.list()
  local rows = {}
  for _, b in ipairs(M.batteries()) do
    rows[#rows + 1] = { b, M.default_adapter(b), concat(M.adapters(b), ","), M.CATALOGUE[b].doc }
  end
  return rows
end

local function did_you_mean(word, known)
  local best = require("zever.text").closest(word, known)
  return best and format('; did you mean "%s"?', best) or ""
end

-- Parses "cache=redis" items; { [battery] = adapter } | nil, message.
function M.parse_adapters(items)
  local out = {}
  for _, item in ipairs(items or {}) do
    local b, a = item:match("^([%w_]+)=([%w_]+)$")
    if not b then return nil, format('--adapters: want battery=adapter items, got "%s"', item) end
    out[b] = a
  end
  return out
end

-- Checks a battery name and an adapter name; true | nil, message with a did-you-mean.
function M.check(battery, adapter)
  if not M.CATALOGUE[battery] then
    return nil, format('unknown battery "%s"%s (zever new --list-batteries lists them)', battery,
      did_you_mean(battery, M.batteries()))
  end
  if adapter ~= nil then
    local known = M.adapters(battery)
    for _, a in ipairs(known) do if a == adapter then return true end end
    return nil, format('%s: unknown adapter "%s"%s (known: %s)', battery, adapter,
      did_you_mean(adapter, known), concat(known, ", "))
  end
  return true
end

-- The batteries to configure: the named ones, what they need (jobs -> queue; an adapter "db"
-- -> db; auth on sessions -> session), each once, in schema order, with its adapter (the one
-- asked for, else the default). An adapter for a battery that was not named adds it.
function M.plan(names, adapters)
  local want, adapter = {}, {}
  adapters = adapters or {}
  for _, b in ipairs(names or {}) do
    local ok, err = M.check(b)
    if not ok then return nil, err end
    want[b] = true
  end
  for b, a in pairs(adapters) do
    local ok, err = M.check(b, a)
    if not ok then return nil, err end
    want[b] = true
  end
  local changed = true
  while changed do
    changed = false
    for b in pairs(want) do
      local a = adapters[b] or M.default_adapter(b)
      adapter[b] = a
      local needs = {}
      for _, n in ipairs(M.CATALOGUE[b].needs or {}) do needs[#needs + 1] = n end
      if a == "db" then needs[#needs + 1] = "db" end
      if b == "auth" and a == "session" then needs[#needs + 1] = "session" end
      for _, n in ipairs(needs) do
        if not want[n] then want[n], changed = true, true end
      end
    end
  end
  local order = {}
  for _, b in ipairs(M.batteries()) do
    if want[b] then order[#order + 1] = b end
  end
  return { order = order, adapter = adapter }
end

-- A battery's section of zever.yaml: its adapter when not the default, and what a new app
-- needs set (the SQLite file in data/, the mail log in data/). No secret is ever written:
-- crypto.keys stays empty (an ephemeral key per process) until the deployment sets CRYPTO_KEYS.
function M.stanza(battery, adapter, app_name)
  local lines = { battery .. ":" }
  local function add(k, v) lines[#lines + 1] = format("  %s: %s", k, v) end
  if adapter ~= M.default_adapter(battery) then add("adapter", adapter) end
  if battery == "db" then
    if adapter == "postgres" then
      add("dsn", format("postgres://localhost/%s   # or DB_DSN", app_name:gsub("[^%w_]", "_")))
    else
      add("dsn", "sqlite:data/app.db")
    end
  elseif battery == "mailer" then
    add("from", format("%s@localhost", app_name:gsub("[^%w_.-]", "_")))
    if adapter == "log" then add("log_file", "data/mail.log") end
    if adapter == "smtp" then add("smtp_host", "127.0.0.1   # MAILER_SMTP_HOST") end
  end
  if #lines == 1 then add("adapter", adapter) end
  if battery == "crypto" then
    lines[#lines + 1] = "  # keys: set CRYPTO_KEYS in production (empty: an ephemeral key per process)"
  end
  return concat(lines, "\n") .. "\n"
end

-- The redis: section, written once when any battery is on Redis.
M.REDIS = "redis:\n  url: redis://127.0.0.1:6379/0   # or REDIS_URL\n"

function M.uses_redis(plan)
  for _, b in ipairs(plan.order) do
    if plan.adapter[b] == "redis" then return true end
  end
  return false
end

function M.config(app_name, plan)
  local parts = { "# zever.yaml: only what this app uses (zever config show prints every key;\n" ..
    "# docs/config.md). Relative paths are relative to this folder.\n" }
  if M.uses_redis(plan) then parts[#parts + 1] = M.REDIS end
  for _, b in ipairs(plan.order) do parts[#parts + 1] = M.stanza(b, plan.adapter[b], app_name) end
  parts[#parts + 1] = format("app:\n  name: %q\n", app_name)
  return concat(parts, "")
end

-- Makes dir and its parents (mkdir(2) through the FFI: no shell per folder); true | nil, msg.
function M.mkdir_p(dir)
  local sys = require "zever.sys"
  if sys.isdir(dir) then return true end
  local ffi = require "ffi"
  require "zever.cdef.libc"
  local path = dir:sub(1, 1) == "/" and "" or "."
  for part in dir:gmatch("[^/]+") do
    path = path .. "/" .. part
    if not sys.isdir(path) and ffi.C.mkdir(path, 493) ~= 0 and not sys.isdir(path) then
      return nil, format('cannot create "%s": %s', path, ffi.string(ffi.C.strerror(ffi.errno())))
    end
  end
  return true
end

-- --- the files of a new app ------------------------------------------------------------------

local APP = [[
-- %s: a zever app. `zever serve` serves it, `zever routes` lists its routes, `zever test` runs
-- spec/, `zever dev` serves it and reloads on every change.
local zever = require "zever"
local assets = require "zever.assets"
local home = require "handlers.home"

local app = zever.app()

-- GET /healthz (the process answers) and GET /readyz (every configured battery answers).
app:health()

app:get("home", "/", home.index)
%s
-- The RPCs of schema/*.zen, once `zever gen` has compiled them into generated/routes.lua; their
-- handlers are yours, in handlers/<service>.lua (`zever gen` writes a stub for each new one).
if assets.module("generated.routes") then
  require("generated.routes").register(app, nil, %s)
end

-- The jobs and schedules of schema/*.zen (generated/jobs.lua); their handlers are yours, in
-- handlers/jobs.lua. `zever serve` dispatches them, `zever worker` runs them.
if assets.module("generated.jobs") then
  require("generated.jobs").register(app)
end

return app
]]

-- Without the auth battery: a hook of the app's own that finds no caller, so an RPC with
-- `auth: required` answers 401 until the user writes it (docs/new.md, "Generated RPCs").
local APP_AUTH_HOOK = [[

-- Who calls an RPC marked `auth: required` (what `zever generate rpc` writes unless told
-- --auth none): return the caller (a table: a user row, token claims) or nil. nil answers 401,
-- so every such RPC answers 401 until you write this; `zever add auth` gives tokens
-- (docs/auth.md), then return (app.auth:authenticate(req)).
local function current_user(req) -- luacheck: no unused args
  return nil
end
]]

local HANDLER = [[
-- handlers/home.lua: the handlers of app.lua's routes. Yours: `zever gen` never writes here.
local M = {}

-- res.app is the app serving the request.
function M.index(_, res)
  return { app = res.app:config().app.name, message = "hello from zever" }
end

return M
]]

local SPEC = [[
-- The app's own spec: `zever test` runs it in the test environment (zever.test.yaml), with a
-- fresh database of its own. One request in-process, then the same app on a real socket.
local testing = require "zever.testing"

local APP = debug.getinfo(1, "S").source:match("^@(.*)/spec/[^/]*$") or "."

describe("%s", function()
  local t
  before_each(function() t = testing.app(APP) end)
  after_each(function() t:close() end)

  it("answers / with the app's name", function()
    local res = t:get("/")
    assert.are.equal(200, res.status)
    assert.are.same({ app = %q, message = "hello from zever" }, res:json())
  end)

  it("is ready when every configured battery answers", function()
    local res = t:get("/readyz")
    assert.are.equal(200, res.status, res.body)
    assert.are.equal("ok", res:json().status)
  end)

  it("serves on a real socket", function()
    local srv = t:serve()
    local res = srv:get("/healthz")
    srv:close()
    assert.are.equal(200, res.status)
  end)
end)
]]

local TEST_YAML = [[
# zever.test.yaml: the test environment (`zever test` sets ZEVER_ENV=test). zever.testing gives
# each spec a fresh SQLite database and captures mail, whatever zever.yaml says.
log:
  level: warn
]]

local GITIGNORE = "data/\n*.db\n*.db-wal\n*.db-shm\n"

local ZEN = [[
// schema/app.zen: the app's entities, services and jobs. `zever gen` compiles this folder into
// generated/ (models, migrations, routes, jobs, OpenAPI); your handlers live in handlers/.
// `zever generate entity Post title:string` appends a declaration here.
]]

local README = [[
# %s

A [zever](https://github.com/zever) app. Batteries: %s.

```sh
zever serve            # http://127.0.0.1:8080/ (and /healthz, /readyz)
zever dev              # the same, reloaded on every change
zever test             # spec/
zever routes           # every route and its handler
zever doctor           # pings every configured battery
zever migrate up       # migrations/
zever gen              # schema/*.zen -> generated/
```

Layout: `app.lua` (routes), `handlers/` (your code), `schema/` (.zen declarations),
`migrations/`, `spec/`, `zever.yaml` (configuration), `zever.test.yaml` (the test environment).
]]

-- app.lua: with the auth battery the generated routes authenticate through it (a bearer token
-- or the session's; 401 with a WWW-Authenticate challenge otherwise), else through the
-- app's own current_user hook.
function M.app_lua(app_name, plan)
  for _, b in ipairs(plan.order) do
    if b == "auth" then return format(APP, app_name, "", "app.auth:rpc_options()") end
  end
  return format(APP, app_name, APP_AUTH_HOOK, "{ auth = current_user }")
end

function M.files(app_name, plan)
  local batteries = #plan.order > 0 and concat(plan.order, ", ") or "none"
  local files = {
    { path = ".gitignore", content = GITIGNORE },
    { path = "README.md", content = format(README, app_name, batteries) },
    { path = "app.lua", content = M.app_lua(app_name, plan) },
    { path = "data/.keep", content = "" },
    { path = "handlers/home.lua", content = HANDLER },
    { path = "migrations/.keep", content = "" },
    { path = "schema/app.zen", content = ZEN },
    { path = "spec/app_spec.lua", content = format(SPEC, app_name, app_name) },
    { path = "zever.test.yaml", content = TEST_YAML },
    { path = "zever.yaml", content = M.config(app_name, plan) },
  }
  return files
end

return M
