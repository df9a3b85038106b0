-- zever.health: liveness and readiness routes (app:health() installs them).
--
--   app:health([{ live = "/healthz", ready = "/readyz", timeout = 2, batteries = { "db", ... },
--                 log = false }])
--   health.check(app, names, timeout) -> ok, { [battery] = { status =, adapter =, ms =, error = } }
--   health.batteries(app) -> the batteries /readyz checks by default
--
-- GET /healthz answers 200 {"status":"ok"} while the worker runs its loop: it touches nothing.
-- GET /readyz resolves each battery (the app's container: the same connections the handlers
-- use) and pings it: the adapter's own check (db: SELECT 1), PING for a battery on Redis, and
-- for the others resolving is the check. The checks run at once, each in its own coroutine, and
-- the answer waits at most `timeout` seconds: a battery that has not answered by then is
-- "timeout". 200 when every one is ok, else 503; the body has one entry per battery. Errors are
-- the container's (scrubbed of secrets). Both paths are left out of the access log unless
-- opts.log is true. By default /readyz checks the batteries the configuration files or the
-- environment set (a db: section, CACHE_ADAPTER=...) and any the app resolved already.

local sched = require "zever.sched"
local loop = require "zever.loop"
local now = require("zever.sys").now

local pairs, ipairs, type, tostring, pcall = pairs, ipairs, type, tostring, pcall

local M = {}

function M.batteries(app)
  local config = require "zever.config"
  local schema = config.schema
  local cfg = app:config()
  local origin = config.sources(cfg).origin or {}
  local want = {}
  for path in pairs(origin) do
    local section = path:match("^([%w_]+)%.")
    if section and schema.by_name[section] and schema.by_name[section].by_name.adapter then
      want[section] = true
    end
  end
  local c = app:container()
  for _, name in ipairs(schema.batteries) do
    if c:resolved(name) then want[name] = true end
  end
  local out = {}
  for _, name in ipairs(schema.batteries) do
    if want[name] then out[#out + 1] = name end
  end
  return out
end

local function message(err)
  return type(err) == "table" and err.message or tostring(err)
end

-- One battery's check: true | nil, message.
local function ping(app, name)
  local c = app:container()
  local b, err = c:get(name)
  if not b then return nil, message(err) end
  local section = c.config[name]
  local entry = require("zever.adapters").get(name, section.adapter)
  if entry and entry.check then
    local ok, r, e = pcall(entry.check, b)
    if not ok then return nil, c:scrub(message(r)) end
    if not r then return nil, c:scrub(message(e)) end
    return true
  end
  if section.adapter == "redis" then
    local url = (section.url ~= nil and section.url ~= "") and section.url or c.config.redis.url
    local redis = require "zever.redis"
    local conn = redis.shared(url)
    local pong, perr = conn:call("PING")
    conn:close()
    if pong ~= "PONG" then return nil, c:scrub("redis: PING: " .. message(perr or pong)) end
  end
  return true
end

-- Runs every check at once; waits at most timeout seconds. Returns ok, results.
function M.check(app, names, timeout)
  local results, pending = {}, #names
  local token = sched.token()
  local done, waiting = pending == 0, false
  -- A check that returns without waiting (SQLite) finishes before the await: complete the token
  -- only once this coroutine waits on it.
  local function finish()
    if not done then
      done = true
      if waiting then sched.complete(token) end
    end
  end
  for _, name in ipairs(names) do
    results[name] = { status = "timeout", adapter = app:config()[name].adapter }
    sched.spawn(function()
      local t0 = now()
      local ok, okv, err = pcall(ping, app, name)
      if done then return end
      local r = results[name]
      r.ms = math.floor((now() - t0) * 1e5 + 0.5) / 100
      if ok and okv then
        r.status = "ok"
      else
        r.status, r.error = "fail", ok and err or message(okv)
      end
      pending = pending - 1
      if pending == 0 then finish() end
    end)
  end
  local timer
  if not done then
    timer = loop.after(timeout, finish)
    waiting = true
    sched.await(token)
    timer:stop()
  end
  done = true
  local all = true
  for _, name in ipairs(names) do
    if results[name].status ~= "ok" then all = false end
  end
  return all, results
end

function M.install(app, opts)
  if opts ~= nil and type(opts) ~= "table" then error("app:health: opts must be a table", 3) end
  opts = opts or {}
  local live, ready = opts.live or "/healthz", opts.ready or "/readyz"
  local timeout = opts.timeout or 2
  if type(timeout) ~= "number" or timeout <= 0 then
    error("app:health: timeout must be a number of seconds > 0", 3)
  end
  if opts.batteries ~= nil and type(opts.batteries) ~= "table" then
    error("app:health: batteries must be a list of battery names", 3)
  end
  app:get("healthz", live, function(_, res)
    res:header("Cache-Control", "no-store")
    return { status = "ok" }
  end)
  app:get("readyz", ready, function(_, res)
    res:header("Cache-Control", "no-store")
    local names = opts.batteries or M.batteries(app)
    local ok, results = M.check(app, names, timeout)
    return res:status(ok and 200 or 503):json({ status = ok and "ok" or "fail",
      checks = require("zever.json").object(results) })
  end)
  if not opts.log then
    local quiet = rawget(app, "quiet_paths") or {}
    quiet[live], quiet[ready] = true, true
    rawset(app, "quiet_paths", quiet)
  end
  return app
end

return M
