-- zever.adapters: the registry of battery adapters the container resolves from config.
--
--   adapters.register(battery, name, factory[, check])   (re-registering replaces)
--   adapters.get(battery, name)    -> entry | nil, err    entry = { battery, name, factory, check }
--   adapters.names(battery)        -> sorted array of registered adapter names
--   adapters.batteries()           -> sorted array of batteries with at least one adapter
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
-- Built-in adapters register themselves below, but only when their implementation is present
-- in this tree (package.searchpath), so `zever doctor` lists what can really run. Today those
-- are db/sqlite (zever.db), cache/memory, limiter/memory and idempotency/memory (process-wide
-- C tables shared by the workers), queue/db (a table of the app's database) and queue/memory
-- (a process-wide C queue), vectors/db and search/db (tables of the app's database: a C top-k scan, FTS5),
-- jobs/queue (jobs over ctx:get("queue"), dead letters in the db), scheduler/memory and
-- scheduler/db (the one-run-per-slot lock), log/text, log/json
-- (zever.log), mailer/log (zever.mailer over
-- adapters.mailer.log) and mailer/smtp (over adapters.mailer.smtp). It must not resolve anything.

local type, error, pairs, ipairs, next, sort, format, tostring = type, error, pairs, ipairs, next,
  table.sort, string.format, tostring

local M = {}

local registry = {}   -- registry[battery][name] = entry

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
  local t = registry[battery]
  if not t then
    t = {}
    registry[battery] = t
  end
  t[name] = { battery = battery, name = name, factory = factory, check = check }
end

-- Removes an adapter (specs); returns true when one was registered.
function M.unregister(battery, name)
  local t = registry[battery]
  if not t or not t[name] then return false end
  t[name] = nil
  return true
end

function M.names(battery)
  local names = {}
  for name in pairs(registry[battery] or {}) do names[#names + 1] = name end
  sort(names)
  return names
end

function M.batteries()
  local names = {}
  for b, t in pairs(registry) do
    if next(t) ~= nil then names[#names + 1] = b end
  end
  sort(names)
  return names
end

local Error = {}
Error.__index = Error
Error.__tostring = function(e) return e.message end

function M.get(battery, name)
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
  return nil, setmetatable({ code = "invalid", message = msg }, Error)
end

-- --- built-in adapters ---------------------------------------------------------------------

local function present(module)
  if package.preload[module] or package.loaded[module] then return true end
  return package.searchpath(module, package.path) ~= nil
end

local function fail(code, message)
  return nil, setmetatable({ code = code, message = message }, Error)
end

if present("zever.db") and present("adapters.db.sqlite") then
  M.register("db", "sqlite", function(section, ctx)
    local dsn = section.dsn
    local conn, err = ctx:shared("db", dsn, function()
      return require("zever.db").open(dsn, { busy_timeout = math.floor(section.busy_timeout * 1000) })
    end, function(db) db:close() end)
    if not conn then
      return fail(err and err.code or "unavailable", "db: " .. tostring(err and err.message or err))
    end
    return conn
  end, function(db)
    local row, err = db:try(function(d) return d:first("SELECT 1 AS ok") end)
    if not row then return nil, err end
    return true
  end)
end

if present("zever.cache_core") and present("adapters.cache.memory") then
  M.register("cache", "memory", function(section)
    return require("adapters.cache.memory").open(section)
  end)
end

if present("zever.limiter_core") and present("adapters.limiter.memory") then
  M.register("limiter", "memory", function(section)
    return require("adapters.limiter.memory").open(section)
  end)
end

if present("zever.idempotency_core") and present("adapters.idempotency.memory") then
  M.register("idempotency", "memory", function(section)
    return require("adapters.idempotency.memory").open(section)
  end)
end

if present("zever.vectors_core") and present("adapters.vectors.db") then
  M.register("vectors", "db", function(section, ctx)
    return require("adapters.vectors.db").open(section, ctx)
  end)
end

if present("adapters.search.db") then
  M.register("search", "db", function(section, ctx)
    return require("adapters.search.db").open(section, ctx)
  end)
end

if present("zever.queue_core") and present("adapters.queue.memory") then
  M.register("queue", "memory", function(section)
    return require("adapters.queue.memory").open(section)
  end)
end

if present("zever.queue") and present("adapters.queue.db") then
  M.register("queue", "db", function(section, ctx)
    return require("adapters.queue.db").open(section, ctx)
  end)
end

if present("zever.jobs") and present("adapters.jobs.queue") then
  M.register("jobs", "queue", function(section, ctx)
    return require("adapters.jobs.queue").open(section, ctx)
  end)
end

if present("zever.cron") and present("zever.cache_core") and present("adapters.scheduler.memory") then
  M.register("scheduler", "memory", function(section, ctx)
    return require("adapters.scheduler.memory").open(section, ctx)
  end)
end

if present("zever.cron") and present("adapters.scheduler.db") then
  M.register("scheduler", "db", function(section, ctx)
    return require("adapters.scheduler.db").open(section, ctx)
  end)
end

-- db and redis adapters of the shared-state and background batteries: each module has
-- open(section, ctx) -> battery | nil, err. ctx:get("db") is the app's database; a redis adapter
-- uses section.url, else config.redis.url, through zever.redis' shared client.
for _, a in ipairs{
  { "cache", "db" }, { "cache", "redis" },
  { "limiter", "redis" },
  { "idempotency", "db" }, { "idempotency", "redis" },
  { "queue", "redis" },
  { "scheduler", "redis" },
} do
  local battery, name = a[1], a[2]
  local module = "adapters." .. battery .. "." .. name
  if present(module) and (name ~= "redis" or present("zever.redis")) then
    M.register(battery, name, function(section, ctx)
      return require(module).open(section, ctx)
    end)
  end
end

if present("zever.log") then
  local function logger(section)
    return require("zever.log").new{ format = section.adapter, level = section.level }
  end
  M.register("log", "text", logger)
  M.register("log", "json", logger)
end

if present("zever.mailer") and present("adapters.mailer.log") then
  M.register("mailer", "log", function(section)
    local backend, err = require("adapters.mailer.log").new(section)
    if not backend then return nil, err end
    return require("zever.mailer").new(backend, section)
  end)
end

if present("zever.mailer") and present("zever.smtp_core") and present("adapters.mailer.smtp") then
  M.register("mailer", "smtp", function(section)
    local backend, err = require("adapters.mailer.smtp").new(section)
    if not backend then return nil, err end
    return require("zever.mailer").new(backend, section)
  end)
end

return M
