-- zever.dashboard: the /_zever development dashboard (issue #21): a page served by zever
-- itself (HTML, CSS and JS inline: no CDN) and its JSON API, read by the page.
--
--   dashboard.install(app[, { path = "/_zever", token = "...", recent = 100 }]) -> app | nil, why
--   GET  /_zever                     the page (zever.dashboard_page)
--   GET  /_zever/api/overview        app name, environment, pid, worker uptime
--   GET  /_zever/api/routes          method, pattern, name, handler file:line
--   GET  /_zever/api/health          each configured battery: status, adapter, ms (zever.health)
--   GET  /_zever/api/metrics         the exposition's samples as JSON (app.metrics), when on
--   GET  /_zever/api/queues          jobs per queue: waiting (queue:len), registered job names
--   GET  /_zever/api/failed          failed jobs (app.jobs:failed, newest 100)
--   POST /_zever/api/failed/retry    { id } -> { retried = n }   (the page's retry button)
--   POST /_zever/api/failed/forget   { id } -> { forgotten = n }
--   GET  /_zever/api/requests        the last `recent` requests this worker answered
--   GET  /_zever/api/config          the merged configuration, secrets redacted
--   GET  /_zever/api/workflows       workflow runs (app.workflow:list; ?status=S, ?limit=N <= 100)
--   GET  /_zever/api/workflows/:id   one run (app.workflow:status): steps, compensated, error
--   POST /_zever/api/workflows/retry  { id } -> { retried = id }   a stuck run runs again
--   POST /_zever/api/workflows/cancel { id } -> { cancelled = id }
--   GET  /_zever/api/breakers        circuit breakers of app.breaker this worker opened (by
--                                    name): state, calls, failures, slow, rejected, opened
--
-- Who may see it: the dashboard is installed only when dashboard.enabled is true (off by
-- default; `zever dev` turns it on). With dashboard.token set, every request must carry it
-- (Authorization: Bearer <token>, or ?token= on the page, which passes it on to the API);
-- without a token it is installed only in the development environment (ZEVER_ENV=development,
-- which `zever dev` sets) and is meant for a server on loopback. In any other environment,
-- enabled without a token, it is not installed and install returns nil and the reason (the
-- app loader logs it). Recent requests are kept per worker (each worker has its own Lua
-- state): the list is the answering worker's. It must not be reachable when not installed:
-- nothing of it is routed then.

local json = require "zever.json"

local bit = require "bit"

local type, tostring, tonumber, pairs, ipairs, pcall, select, floor = type, tostring, tonumber,
  pairs, ipairs, pcall, select, math.floor

local M = {}

local function now() return require("zever.sys").now() end

-- Compares two strings in time independent of where they differ.
local function same(a, b)
  if type(a) ~= "string" or type(b) ~= "string" or #a ~= #b then return false end
  local diff = 0
  for i = 1, #a do diff = bit.bor(diff, bit.bxor(a:byte(i), b:byte(i))) end
  return diff == 0
end

-- The samples of a Prometheus text exposition: { { name, labels = {}, value } } (the page
-- shows them; the exposition itself is what /metrics answers).
local function samples(text)
  local out = {}
  for line in text:gmatch("[^\n]+") do
    if line:sub(1, 1) ~= "#" then
      local name, lab, value = line:match("^([%w_:]+){(.-)} (%S+)$")
      if not name then name, value = line:match("^([%w_:]+) (%S+)$") lab = "" end
      if name then
        local labels = {}
        for k, v in lab:gmatch('([%w_]+)="(.-)"') do labels[k] = v end
        out[#out + 1] = { name = name, labels = json.object(labels), value = tonumber(value) or value }
      end
    end
  end
  return out
end

local function resolved_or_configured(app, name)
  local c = app:container()
  local b = c:resolved(name)
  if b then return b end
  local cfg = app:config()
  local origin = require("zever.config").sources(cfg).origin or {}
  for path in pairs(origin) do
    if path:match("^" .. name .. "%.") then
      local ok, got = pcall(c.get, c, name)
      if ok then return got end
    end
  end
  return nil
end

function M.install(app, opts)
  if opts ~= nil and type(opts) ~= "table" then error("dashboard.install: opts must be a table", 2) end
  opts = opts or {}
  local cfg = app:config()
  local section = cfg.dashboard or {}
  local base = opts.path or section.path or "/_zever"
  local token = opts.token or section.token
  if token == "" then token = nil end
  local environment = require("zever.config").sources(cfg).environment
  if not token and environment ~= "development" then
    return nil, "dashboard: not installed: without dashboard.token it is served only in " ..
      "development (ZEVER_ENV=development, as zever dev sets)"
  end
  local keep = opts.recent or section.recent or 100
  local recent, head = {}, 0
  local started = now()

  local function allowed(req)
    if not token then return true end
    local auth = req:header("authorization")
    local given = auth and auth:match("^[Bb]earer%s+(.+)$") or (req.query and req.query.token)
    return same(given, token)
  end

  -- Recent requests: one middleware in front of everything (the dashboard's own calls too).
  app:use(function(req, res, nxt)
    local t0 = now()
    local r = nxt()
    head = head % keep + 1
    recent[head] = { method = req.method, path = req.path, status = res.code or 200,
      ms = floor((now() - t0) * 1e6) / 1000, at = os.time() }
    return r
  end)

  local function api(method, sub, fn)
    app[method](app, base .. "/api/" .. sub, function(req, res)
      if not allowed(req) then return res:status(401):json({ error = "unauthorized" }) end
      res:header("Cache-Control", "no-store")
      return res:json(fn(req, res))
    end)
  end

  app:get(base, function(req, res)
    if not allowed(req) then return res:status(401):json({ error = "unauthorized" }) end
    res:header("Content-Type", "text/html; charset=utf-8")
    res:header("Cache-Control", "no-store")
    res:header("Content-Security-Policy",
      "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
    return require("zever.dashboard_page").html(base)
  end)

  api("get", "overview", function()
    local n = 0
    for _, r in ipairs(app.routes) do
      if r.pattern:sub(1, #base) ~= base then n = n + 1 end
    end
    return { app = app.dir, environment = environment or json.null,
      uptime = floor((now() - started) * 1000) / 1000, routes = n }
  end)

  api("get", "routes", function()
    local out = json.array()
    for _, r in ipairs(app:list_routes()) do
      if r.pattern:sub(1, #base) ~= base then
        out[#out + 1] = { method = r.method, pattern = r.pattern, name = r.name or json.null,
          source = r.source or json.null }
      end
    end
    return { routes = out }
  end)

  api("get", "health", function()
    local health = require "zever.health"
    local names = health.batteries(app)
    local ok, results = health.check(app, names, 2)
    local out = json.array()
    for _, name in ipairs(names) do
      local r = results[name]
      out[#out + 1] = { battery = name, adapter = cfg[name] and cfg[name].adapter or json.null,
        status = r.status, ms = r.ms or json.null, error = r.error or json.null }
    end
    return { status = ok and "ok" or "fail", batteries = out }
  end)

  api("get", "metrics", function()
    local m = app:container():resolved("metrics")
    if not m then return { enabled = false, samples = json.array() } end
    local text = m:render("prometheus") or ""
    local s = samples(text)
    local arr = json.array()
    for i, v in ipairs(s) do arr[i] = v end
    return { enabled = true, samples = arr }
  end)

  api("get", "queues", function()
    local out = json.array()
    local jobs = resolved_or_configured(app, "jobs")
    if not jobs then return { queues = out } end
    local by_queue = {}
    for name, e in pairs(jobs.registry or {}) do
      local q = e.queue or "default"
      by_queue[q] = by_queue[q] or {}
      table.insert(by_queue[q], name)
    end
    local queue = app:container():resolved("queue")
    local names = {}
    for q in pairs(by_queue) do names[#names + 1] = q end
    table.sort(names)
    for _, q in ipairs(names) do
      table.sort(by_queue[q])
      local len = queue and select(2, pcall(queue.len, queue, "jobs:" .. q))
      out[#out + 1] = { queue = q, waiting = type(len) == "number" and len or json.null,
        jobs = by_queue[q] }
    end
    return { queues = out }
  end)

  local function failed_list()
    local jobs = resolved_or_configured(app, "jobs")
    local out = json.array()
    if not jobs then return out end
    local rows = jobs:failed({ limit = 100 }) or {}
    for i, r in ipairs(rows) do
      out[i] = { id = r.id, name = r.name, queue = r.queue, error = r.error,
        attempts = r.attempts, failed_at = r.failed_at }
    end
    return out
  end

  api("get", "failed", function() return { failed = failed_list() } end)

  local function act(what, field)
    return function(req, res)
      local body = req:json()
      local id = type(body) == "table" and body.id
      if id == nil or (type(id) ~= "string" and type(id) ~= "number") then
        res:status(400)
        return { error = "want {\"id\": ...}" }
      end
      local jobs = resolved_or_configured(app, "jobs")
      if not jobs then
        res:status(404)
        return { error = "no jobs battery" }
      end
      local n, err = jobs[what](jobs, id)
      if not n then
        res:status(err and err.code == "not_found" and 404 or 500)
        return { error = tostring(err and err.message or err) }
      end
      return { [field] = n }
    end
  end
  api("post", "failed/retry", act("retry", "retried"))
  api("post", "failed/forget", act("forget", "forgotten"))

  api("get", "requests", function()
    local out = json.array()
    -- Newest first.
    for i = 0, keep - 1 do
      local r = recent[(head - 1 - i) % keep + 1]
      if not r then break end
      out[#out + 1] = r
    end
    return { requests = out, worker_only = true }
  end)

  api("get", "config", function()
    local config = require "zever.config"
    return { config = config.plain(config.redact(cfg)) }
  end)

  -- Workflows (docs/workflow.md): the runs of app.workflow when the app uses it.
  local function workflows() return resolved_or_configured(app, "workflow") end

  api("get", "workflows", function(req, res)
    local wf = workflows()
    local out = json.array()
    if not wf then return { enabled = false, workflows = out } end
    local q = req.query or {}
    local limit = tonumber(q.limit) or 100
    if limit < 1 or limit > 100 or limit % 1 ~= 0 then
      res:status(400)
      return { error = "limit is a whole number from 1 to 100" }
    end
    local status = type(q.status) == "string" and q.status ~= "" and q.status or nil
    local runs = wf:list(status, limit) or {}
    for i, r in ipairs(runs) do
      out[i] = { id = r.id, name = r.name, status = r.status, attempts = r.attempts or 0,
        error = r.error or json.null, created_at = r.created_at or json.null,
        updated_at = r.updated_at or json.null }
    end
    return { enabled = true, workflows = out }
  end)

  api("get", "workflows/:id", function(req, res)
    local wf = workflows()
    if not wf then
      res:status(404)
      return { error = "no workflow battery" }
    end
    local st, err = wf:status(req.params.id)
    if not st then
      res:status(err.code == "not_found" and 404 or 500)
      return { error = err.message }
    end
    local steps, comp = json.array(), json.array()
    for i, v in ipairs(st.steps) do steps[i] = v end
    for i, v in ipairs(st.compensated) do comp[i] = v end
    return { id = st.id, name = st.name, status = st.status, attempts = st.attempts or 0,
      error = st.error or json.null, steps = steps, compensated = comp, committed = st.committed,
      created_at = st.created_at or json.null, updated_at = st.updated_at or json.null }
  end)

  local function wf_act(what, field)
    return function(req, res)
      local body = req:json()
      local id = type(body) == "table" and body.id
      if type(id) ~= "string" or id == "" then
        res:status(400)
        return { error = "want {\"id\": \"<run id>\"}" }
      end
      local wf = workflows()
      if not wf then
        res:status(404)
        return { error = "no workflow battery" }
      end
      local ok, err = wf[what](wf, id)
      if not ok then
        res:status(err.code == "not_found" and 404 or 409)
        return { error = err.message, code = err.code }
      end
      return { [field] = id }
    end
  end
  api("post", "workflows/retry", wf_act("retry", "retried"))
  api("post", "workflows/cancel", wf_act("cancel", "cancelled"))

  -- Circuit breakers (docs/breaker.md): those app.breaker handed out in this worker, by name.
  api("get", "breakers", function()
    local out = json.array()
    local b = app:container():resolved("breaker")
    if not b then return { enabled = false, breakers = out } end
    local names = {}
    for name in pairs(b.by_name or {}) do names[#names + 1] = name end
    table.sort(names)
    for i, name in ipairs(names) do
      local st = b.by_name[name]:stats()
      out[i] = { name = name, state = st.state, calls = st.calls or 0, failures = st.failures or 0,
        slow = st.slow or 0, rejected = st.rejected or 0, opened = st.opened or 0 }
    end
    return { enabled = true, breakers = out }
  end)

  return app
end

-- The app loader's hook: installs the dashboard when dashboard.enabled is set; a refusal is
-- written to stderr once (the reason names what to set).
function M.maybe_install(app)
  local ok, cfg = pcall(app.config, app)
  if not ok or not cfg.dashboard or not cfg.dashboard.enabled then return end
  local done, why = M.install(app)
  if not done then io.stderr:write("zever: ", why, "\n") end
end

M.samples = samples
return M
