-- zever.adapters: the registry of battery adapters the container resolves from config.
--
--   adapters.register(battery, name, factory[, check])   (re-registering replaces)
--   adapters.get(battery, name)    -> entry | nil, err    entry = { battery, name, factory, check }
--   adapters.names(battery)        -> sorted array of registered adapter names
--   adapters.batteries()           -> sorted array of batteries with at least one adapter
--   adapters.BUILTIN               the table below (read it, do not change it)
--
-- factory(section, ctx) -> battery | nil, err
--   section: the battery's config section (a table; do not modify it)
--   ctx:get(name)      -> another battery of the same container (the db of a db queue, ...)
--   ctx:shared(kind, key, open, close) -> one connection per (kind, key) per worker, opened
--                         by open() -> conn | nil, err; reference-counted; close(conn) runs when
--                         the last container that asked for it closes
--   ctx.config         the whole config
-- The battery may have close() (called by container:close) and the entry's check(battery)
-- -> true | nil, err is what `zever doctor` runs (db: SELECT 1).
--
-- The built-in adapters are one table, BUILTIN[battery] = { front = module, adapters = {
-- [name] = { modules the adapter needs } } }. The adapter contract: adapters.<battery>.<name>
-- exports open(section, ctx) -> impl | nil, err and never requires its front-end; the factory
-- registered here opens the implementation and wraps it with the front-end's wrap_config(impl,
-- section, ctx) (or wrap(impl, section): section carries the front-end's options). An adapter
-- is registered only when its module, its front-end and what it needs are present in this tree
-- (package.searchpath), so `zever doctor` lists what can really run. An entry with its own open
-- (db/sqlite: a connection shared per worker; log/*: zever.log itself) is used as it is. It must
-- not resolve anything.
--
-- The built-in adapters of a battery are registered on the first call that names the battery
-- (get, names, register, unregister; batteries() does every battery): the presence checks cost
-- ~100 module searches, which an app that resolves only its db (or nothing, as examples/hello)
-- does not pay (BENCHMARKS.md, "Start-up: the first request of zever serve"). The result is the
-- same as registering them all when this file loads: a battery's built-ins are in place before
-- anything registered for it by hand, which replaces them.

local errors = require "zever.errors"

local type, error, pairs, next, sort, format, tostring, require = type, error, pairs, next,
  table.sort, string.format, tostring, require

local M = {}

local registry = {}   -- registry[battery][name] = entry
local builtins        -- builtins(battery): registers the battery's built-in adapters once

function M.register(battery, name, factory, check)
  if type(battery) ~= "string" or battery == "" then
    error("adapters.register: battery must be a non-empty string", 2)
  end
  if type(name) ~= "string" or name == "" then
    error("adapters.register: name must be a non-empty string", 2)
  end
  if type(factory) ~= "function" then error("adapters.register: factory must be a function", 2) end
  if check ~= nil and type(check) ~= "function" then
    error("adapters.register: check must be a function", 2)
  end
  builtins(battery)
  local t = registry[battery]
  if not t then
    t = {}
    registry[battery] = t
  end
  t[name] = { battery = battery, name = name, factory = factory, check = check }
end

-- Removes an adapter (specs); returns true when one was registered.
function M.unregister(battery, name)
  builtins(battery)
  local t = registry[battery]
  if not t or not t[name] then return false end
  t[name] = nil
  return true
end

function M.names(battery)
  builtins(battery)
  local names = {}
  for name in pairs(registry[battery] or {}) do names[#names + 1] = name end
  sort(names)
  return names
end

function M.batteries()
  builtins()
  local names = {}
  for b, t in pairs(registry) do
    if next(t) ~= nil then names[#names + 1] = b end
  end
  sort(names)
  return names
end

function M.get(battery, name)
  builtins(battery)
  local t = registry[battery]
  local entry = t and t[name]
  if entry then return entry end
  local known = M.names(battery)
  local msg
  if #known == 0 then
    msg = format('%s: unknown adapter "%s" (no %s adapter is registered)', battery, name, battery)
  else
    local best = require("zever.text").closest(name, known)
    msg = format('%s: unknown adapter "%s"%s (known: %s)', battery, name,
      best and format('; did you mean "%s"?', best) or "", table.concat(known, ", "))
  end
  return nil, errors.new(battery, "invalid", msg)
end

-- --- built-in adapters ---------------------------------------------------------------------

-- The db entry: one zever.db per worker per DSN (ctx:shared), so every battery on the db shares
-- one SQLite connection or one PostgreSQL pool.
local function db_options(section)
  local ms = function(s) return s and math.floor(s * 1000) end
  if section.adapter == "postgres" then
    return { pool_size = section.pool_size, idle_timeout = section.idle_timeout,
      max_lifetime = section.max_lifetime, connect_timeout = section.connect_timeout,
      statement_timeout = section.statement_timeout }
  end
  return { busy_timeout = ms(section.busy_timeout) }
end

local function db_open(section, ctx)
  local dsn = section.dsn
  local conn, err = ctx:shared("db", dsn, function()
    return require("zever.db").open(dsn, db_options(section))
  end, function(db) db:close() end)
  if not conn then
    return nil, errors.new("db", err and err.code or "unavailable",
      "db: " .. tostring(err and err.message or err))
  end
  return conn
end

local function db_check(db)
  -- zever.db raises on SQL errors; doctor wants the failure as a value.
  local row, err = db:try(function(d) return d:first("SELECT 1 AS ok") end)
  if not row then return nil, err end
  return true
end

local function logger(section)
  return require("zever.log").new{ format = section.adapter, level = section.level }
end

local REDIS = { "zever.redis" }

local BUILTIN = {
  db = { adapters = {
    sqlite = { "zever.db", "adapters.db.sqlite", open = db_open, check = db_check },
    postgres = { "zever.db", "adapters.db.postgres", "zever.pg", open = db_open,
      check = db_check } } },
  log = { adapters = { text = { "zever.log", open = logger }, json = { "zever.log", open = logger } } },
  cache = { front = "zever.cache",
    adapters = { memory = { "zever.cache_core" }, db = {}, redis = REDIS } },
  limiter = { front = "zever.limiter",
    adapters = { memory = { "zever.limiter_core" }, redis = REDIS } },
  idempotency = { front = "zever.idempotency",
    adapters = { memory = { "zever.idempotency_core" }, db = {}, redis = REDIS } },
  queue = { front = "zever.queue",
    adapters = { memory = { "zever.queue_core" }, db = {}, redis = REDIS } },
  jobs = { front = "zever.jobs", adapters = { queue = {} } },
  scheduler = { front = "zever.scheduler", adapters = {
    memory = { "zever.cron", "zever.cache_core" }, db = { "zever.cron" },
    redis = { "zever.cron", "zever.redis" } } },
  search = { front = "zever.search", adapters = { db = {} } },
  vectors = { front = "zever.vectors", adapters = { db = { "zever.vectors_core" } } },
  mailer = { front = "zever.mailer", adapters = { log = {}, smtp = { "zever.smtp_core" } } },
  crypto = { front = "zever.crypto", adapters = { ["local"] = { "zever.crypto_core" } } },
  session = { front = "zever.session", adapters = { memory = { "zever.cache_core" }, db = {},
    redis = REDIS, cookie = { "zever.crypto_core" } } },
  password = { front = "zever.password", adapters = { argon2id = { "zever.password_core" } } },
  auth = { front = "zever.auth", adapters = { jwt = { "zever.crypto_core" }, session = {} } },
  lock = { front = "zever.lock", adapters = { memory = { "zever.lock_core" }, db = {},
    redis = REDIS, postgres = { "zever.pg", "zever.crypto_core" } } },
  eventbus = { front = "zever.eventbus", adapters = { memory = {},
    inproc = { "zever.bus_core" }, redis = REDIS,
    postgres = { "zever.pg" } } },
  -- /readyz fails while the relay is stalled: a pending message older than 60 s (ob:check).
  outbox = { front = "zever.outbox", adapters = { db = { check = function(ob) return ob:check() end } } },
  breaker = { front = "zever.breaker", adapters = { memory = { "zever.breaker_core" },
    inproc = { "zever.breaker_core" }, redis = REDIS } },
  webhook = { front = "zever.webhook", adapters = { memory = { "zever.crypto_core" },
    db = { "zever.crypto_core" } } },
  workflow = { front = "zever.workflow", adapters = { memory = {}, db = {}, redis = REDIS } },
}
BUILTIN.flag = { front = "zever.flag", adapters = { file = {}, memory = {} } }
BUILTIN.i18n = { front = "zever.i18n", adapters = { file = {}, memory = {} } }
BUILTIN.permission = { front = "zever.permission", adapters = { rbac = {}, noop = {} } }
BUILTIN.tenant = { front = "zever.tenant", adapters = { single = {}, header = {} } }
BUILTIN.storage = { front = "zever.storage", adapters = { ["local"] = { "zever.crypto_core" },
  s3 = { "zever.crypto_core" } } }
BUILTIN.media = { front = "zever.media", adapters = { storage = {} } }
BUILTIN.secrets = { front = "zever.secrets", adapters = { env = {}, file = {} } }
BUILTIN.notification = { front = "zever.notification", adapters = { log = {} } }
BUILTIN.analytics = { front = "zever.analytics", adapters = { log = {} } }
BUILTIN.payment = { front = "zever.payment", adapters = { stub = { "zever.crypto_core" } } }
BUILTIN.billing = { front = "zever.billing", adapters = { stub = { "zever.crypto_core" } } }
BUILTIN.geo = { front = "zever.geo", adapters = { static = {} } }
-- The observability battery (docs/observability.md): metrics in the C registry, and tracing.
BUILTIN.metrics = { front = "zever.metrics", adapters = {
  prometheus = { "zever.metrics_core" }, noop = {} } }
BUILTIN.trace = { front = "zever.trace", adapters = { stdout = {}, otlp = {}, noop = {} } }
M.BUILTIN = BUILTIN

local function present(module)
  if package.preload[module] or package.loaded[module] then return true end
  return require("zever.assets").module(module) -- in a bundle: its payload (docs/deploy.md)
end

-- The factory of a built-in adapter: open the implementation, wrap it with the front-end.
local function builtin(front, module)
  return function(section, ctx)
    local impl, err = require(module).open(section, ctx)
    if not impl then return nil, err end
    local F = require(front)
    return (F.wrap_config or F.wrap)(impl, section, ctx)
  end
end

local done = {}   -- done[battery] = true once its built-ins are registered

-- builtins(battery): the built-in adapters of battery, registered on its first mention;
-- builtins(): every battery's.
function builtins(battery)
  if battery == nil then
    for name in pairs(BUILTIN) do builtins(name) end
    return
  end
  if done[battery] then return end
  done[battery] = true
  local b = BUILTIN[battery]
  if type(b) ~= "table" then return end
  for name, a in pairs(b.adapters) do
    local module = "adapters." .. battery .. "." .. name
    local ok = a.open ~= nil or (present(module) and present(b.front))
    for i = 1, #a do ok = ok and present(a[i]) end
    if ok then M.register(battery, name, a.open or builtin(b.front, module), a.check) end
  end
end

return M
