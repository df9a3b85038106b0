-- zever.metrics: the observability battery's metrics (app.metrics): counters, gauges and
-- histograms with fixed buckets, exposed at /metrics in the Prometheus text format or
-- OpenMetrics, plus the built-in HTTP metrics of app:metrics().
--
--   local m = app.metrics                          (or metrics.new{ registry = "x" })
--   local hits = m:counter("shop_orders_total", "Orders placed.", { "plan" })
--   hits:labels("pro"):inc()          hits:labels("pro"):inc(3)      (a child per label values)
--   local temp = m:gauge("shop_queue_depth", "Jobs waiting.")       temp:set(4) :inc() :dec(2)
--   local lat = m:histogram("shop_checkout_seconds", "Checkout time.", { "plan" },
--                           { 0.01, 0.1, 1 })                        lat:labels("pro"):observe(0.2)
--   m:collect("shop_carts", "Open carts.", "gauge", function() return 12 end)   (read at scrape:
--       a number, or { { labels = { ... }, value = n }, ... } for a family with labels)
--   m:render([format]) -> text, content type   ("prometheus" (default) | "openmetrics")
--   m:negotiate(accept_header) -> format       (OpenMetrics when the Accept header asks for it)
--   app:metrics([{ path = "/metrics", http = true }])   GET /metrics, and the HTTP metrics:
--       zever_http_requests_total{route,method,status}        counter
--       zever_http_request_duration_seconds{route,method}     histogram (HTTP_BUCKETS)
--     route is the route's pattern ("/users/:id"), never the raw path; "" for a request no route
--     matched (404, 405, a redirect), so a scan of random paths adds no series.
--
-- A family without labels is used directly (hits:inc()); with labels, labels(...) takes one
-- string per label name (numbers are turned into strings) and returns the child, cached: keep
-- it in a local on a hot path. Counters only go up (a negative inc raises). Names follow
-- Prometheus: [a-zA-Z_:][a-zA-Z0-9_:]*; a name declared twice with the same kind, labels and
-- buckets returns the same family (every worker declares its own), otherwise the call fails
-- with err.code "conflict". Too many label combinations for the registry (metrics.max_cells)
-- fails with "invalid": label values must come from a bounded set (never a raw path or an id).
--
-- Writes go into this worker's own cells (zever.metrics_core, per-worker slots), through the
-- FFI: an increment is one add; a scrape sums every worker's cells. It must not know HTTP
-- servers, routes or batteries other than through app:metrics().

local battery = require "zever.battery"
local ffi = require "ffi"
require "zever.cdef.metrics"

local type, error, tostring, pairs, ipairs, pcall, setmetatable, select, format, concat =
  type, error, tostring, pairs, ipairs, pcall, setmetatable, select, string.format,
  table.concat
local C = ffi.C
local observe_ffi = C.zv_metrics_observe

local M = {}

local Metrics = battery.define("metrics", "the metrics are closed")
M.error = Metrics.error

M.HTTP_BUCKETS = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
  10 }
M.DEFAULT_BUCKETS = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 }

M.CONTENT_TYPE = {
  prometheus = "text/plain; version=0.0.4; charset=utf-8",
  openmetrics = "application/openmetrics-text; version=1.0.0; charset=utf-8",
}

-- --- series: the hot path -------------------------------------------------------------------

local Counter, Gauge, Histogram = {}, {}, {}
Counter.__index, Gauge.__index, Histogram.__index = Counter, Gauge, Histogram

function Counter:inc(n)
  if n == nil then n = 1 elseif type(n) ~= "number" or n ~= n or n < 0 then
    error("metrics: a counter's inc takes a number >= 0", 2)
  end
  local cells, i = self.cells, self.cell
  cells[i] = cells[i] + n
end

function Gauge:inc(n)
  if n == nil then n = 1 elseif type(n) ~= "number" then error("metrics: inc takes a number", 2) end
  local cells, i = self.cells, self.cell
  cells[i] = cells[i] + n
end

function Gauge:dec(n)
  if n == nil then n = 1 elseif type(n) ~= "number" then error("metrics: dec takes a number", 2) end
  local cells, i = self.cells, self.cell
  cells[i] = cells[i] - n
end

-- This worker's share: a scrape sums the workers' values (see the file's header).
function Gauge:set(v)
  if type(v) ~= "number" then error("metrics: set takes a number", 2) end
  self.cells[self.cell] = v
end

function Histogram:observe(v)
  if type(v) ~= "number" then error("metrics: observe takes a number", 2) end
  observe_ffi(self.cells, self.cell, self.bounds, self.nb, v)
end

local CLASS = { counter = Counter, gauge = Gauge, histogram = Histogram }

-- --- families -------------------------------------------------------------------------------

local Family = {}
Family.__index = Family

local function child(fam, values, key)
  local s, err = fam.impl:series(values)
  if not s then error(tostring(err), 3) end
  s.family = fam
  setmetatable(s, fam.class)
  fam.children[key] = s
  return s
end

-- The child of these label values (created on first use, then cached).
function Family:labels(...)
  local n = select("#", ...)
  if n ~= self.nlabels then
    error(format("metrics: %s has %d label(s) (%s), got %d value(s)", self.name, self.nlabels,
      concat(self.label_names, ", "), n), 2)
  end
  local key
  if n == 1 then
    key = tostring((...))
  else
    local parts = { ... }
    for i = 1, n do parts[i] = tostring(parts[i]) end
    key = concat(parts, "\0")
  end
  local c = self.children[key]
  if c then return c end
  local values = { ... }
  for i = 1, n do
    local v = values[i]
    if type(v) ~= "string" and type(v) ~= "number" then
      error("metrics: label values must be strings or numbers", 2)
    end
    values[i] = tostring(v)
  end
  return child(self, values, key)
end

local function unlabelled(method)
  return function(self, ...)
    if self.nlabels ~= 0 then
      error(format("metrics: %s has labels (%s): use :labels(...):%s()", self.name,
        concat(self.label_names, ", "), method), 2)
    end
    local c = self.children[""] or child(self, {}, "")
    return c[method](c, ...)
  end
end
Family.inc = unlabelled("inc")
Family.dec = unlabelled("dec")
Family.set = unlabelled("set")
Family.observe = unlabelled("observe")

-- The merged value (over every worker) of a child: a counter's or gauge's value; for a
-- histogram, { count =, sum =, buckets = { [bound] = cumulative count } }.
function Family:value(...)
  local c = self.nlabels == 0 and (self.children[""] or child(self, {}, "")) or self:labels(...)
  local impl = self.impl
  if self.kind ~= "histogram" then return impl:value(c) end
  local out, cum = { buckets = {} }, 0
  for i = 0, c.nb do
    cum = cum + impl:value(c, i)
    out.buckets[i < c.nb and self.bucket_list[i + 1] or math.huge] = cum
  end
  out.count, out.sum = cum, impl:value(c, c.nb + 1)
  return out
end

-- --- the battery ----------------------------------------------------------------------------

local function check_labels(labels, fname)
  if labels == nil then return {} end
  if type(labels) ~= "table" then error(fname .. ": labels must be a list of names", 3) end
  for i, l in ipairs(labels) do
    if type(l) ~= "string" then error(fname .. ": label " .. i .. " must be a string", 3) end
  end
  return labels
end

local function declare(self, kind, name, help, labels, bounds, fname)
  battery.string(name, fname, "name")
  if help ~= nil and type(help) ~= "string" then error(fname .. ": help must be a string", 3) end
  labels = check_labels(labels, fname)
  if self.closed then return nil, Metrics.CLOSED end
  local key = kind .. "\0" .. name
  local fam = self.families[key]
  if fam then return fam end
  local impl, err = self.impl:family(name, help or "", kind, labels, bounds)
  if not impl then return nil, err end
  fam = setmetatable({ name = name, kind = kind, impl = impl, class = CLASS[kind],
    children = {}, nlabels = #labels, label_names = labels, bucket_list = bounds }, Family)
  self.families[key] = fam
  return fam
end

function Metrics:counter(name, help, labels)
  return declare(self, "counter", name, help, labels, nil, "metrics:counter")
end

function Metrics:gauge(name, help, labels)
  return declare(self, "gauge", name, help, labels, nil, "metrics:gauge")
end

function Metrics:histogram(name, help, labels, buckets)
  if buckets == nil then buckets = M.DEFAULT_BUCKETS end
  if type(buckets) ~= "table" or #buckets == 0 then
    error("metrics:histogram: buckets must be a non-empty list of numbers", 2)
  end
  for i, b in ipairs(buckets) do
    if type(b) ~= "number" or b ~= b or b == math.huge or b == -math.huge
      or (i > 1 and b <= buckets[i - 1]) then
      error("metrics:histogram: buckets must be finite numbers in increasing order", 2)
    end
  end
  return declare(self, "histogram", name, help, labels, buckets, "metrics:histogram")
end

local function escape_label(v)
  return (tostring(v):gsub('[\\\n"]', { ["\\"] = "\\\\", ["\n"] = "\\n", ['"'] = '\\"' }))
end

local function number_text(v)
  if v ~= v then return "NaN" end
  if v == math.huge then return "+Inf" elseif v == -math.huge then return "-Inf" end
  if v % 1 == 0 and v > -1e15 and v < 1e15 then return format("%d", v) end
  return format("%.17g", v)
end

-- Families whose values are read when scraped (a queue's length): fn() -> number, or a list
-- of { labels = { name = value, ... }, value = n }.
function Metrics:collect(name, help, kind, fn)
  battery.string(name, "metrics:collect", "name")
  if kind ~= "gauge" and kind ~= "counter" then
    error('metrics:collect: kind must be "gauge" or "counter"', 2)
  end
  if type(fn) ~= "function" then error("metrics:collect: fn must be a function", 2) end
  if not name:match("^[%a_:][%w_:]*$") then
    error("metrics:collect: invalid metric name " .. name, 2)
  end
  self.collectors[#self.collectors + 1] = { name = name, help = help or "", kind = kind, fn = fn }
  return self
end

local function render_collector(c, om, out)
  local ok, v = pcall(c.fn)
  if not ok or (type(v) ~= "number" and type(v) ~= "table") then return end
  local name, sample = c.name, c.name
  if om and c.kind == "counter" then
    name = name:gsub("_total$", "")
    sample = name .. "_total"
  end
  local help = c.help:gsub("\\", "\\\\"):gsub("\n", "\\n")
  if om then help = help:gsub('"', '\\"') end
  out[#out + 1] = format("# HELP %s %s\n# TYPE %s %s\n", name, help, name, c.kind)
  if type(v) == "number" then
    out[#out + 1] = format("%s %s\n", sample, number_text(v))
    return
  end
  for _, row in ipairs(v) do
    if type(row) == "table" and type(row.value) == "number" then
      local pairs_ = {}
      local names = {}
      for k in pairs(row.labels or {}) do names[#names + 1] = k end
      table.sort(names)
      for _, k in ipairs(names) do
        if type(k) == "string" and k:match("^[%a_][%w_]*$") then
          pairs_[#pairs_ + 1] = format('%s="%s"', k, escape_label(row.labels[k]))
        end
      end
      out[#out + 1] = format("%s%s %s\n", sample,
        #pairs_ > 0 and "{" .. concat(pairs_, ",") .. "}" or "", number_text(row.value))
    end
  end
end

-- The exposition: text and its content type. format: "prometheus" (text 0.0.4, the default)
-- or "openmetrics" (1.0.0, ends with "# EOF").
function Metrics:render(fmt)
  fmt = fmt or "prometheus"
  if not M.CONTENT_TYPE[fmt] then
    error('metrics:render: format must be "prometheus" or "openmetrics"', 2)
  end
  if self.closed then return nil, Metrics.CLOSED end
  local out = { self.impl:render(fmt) }
  for _, c in ipairs(self.collectors) do render_collector(c, fmt == "openmetrics", out) end
  if fmt == "openmetrics" then out[#out + 1] = "# EOF\n" end
  return concat(out), M.CONTENT_TYPE[fmt]
end

-- The format an Accept header asks for: OpenMetrics when it names
-- application/openmetrics-text (with a q above text/plain's), Prometheus text otherwise.
function M.negotiate(accept)
  if type(accept) ~= "string" then return "prometheus" end
  local media = require("zever.accept").media(accept)
  local best = require("zever.accept").best_media(media,
    { "text/plain", "application/openmetrics-text" })
  if best == "application/openmetrics-text" and accept:find("openmetrics", 1, true) then
    return "openmetrics"
  end
  return "prometheus"
end
Metrics.negotiate = function(_, accept) return M.negotiate(accept) end

-- app:metrics(opts) is app.metrics(app, opts): the battery object, called, installs the route.
function Metrics.__call(_, app, opts)
  return M.install(app, opts)
end

function M.wrap(impl, opts)
  opts = opts or {}
  return battery.object(Metrics, impl, { families = {}, collectors = {},
    http_enabled = opts.http ~= false, path = opts.path or "/metrics" })
end

function M.wrap_config(impl, section)
  return M.wrap(impl, section)
end

-- A battery outside any app (specs, scripts): opts as the metrics config section (registry,
-- max_cells, path, http) on the prometheus adapter.
function M.new(opts)
  if opts ~= nil and type(opts) ~= "table" then error("metrics.new: opts must be a table", 2) end
  local impl, err = require("adapters.metrics.prometheus").open(opts or {})
  if not impl then error(tostring(err), 2) end
  return M.wrap(impl, opts)
end

-- --- the built-in HTTP metrics ----------------------------------------------------------------

-- The monotonic clock in seconds, read in C (one FFI call returning a double, so the request's
-- trace is not cut by a classic C call).
local clock = C.zv_metrics_clock
M.clock = clock
Metrics.clock = clock   -- app.metrics.clock(): the same clock, from the battery
local request_ffi = C.zv_metrics_request

local STANDARD = { GET = true, HEAD = true, POST = true, PUT = true, PATCH = true, DELETE = true,
  OPTIONS = true }

-- The recorder zever.server calls once per request: observe.start() -> t0;
-- observe.finish(t0, route_id, method, status). The series of a request are found through
-- last[route id]: the (method, status) that route answered last time and its two series, so a
-- request like the previous one of its route is one array read, two compares and one FFI call
-- (the counter's add and the histogram's observe together, with the end time read in C).
-- Otherwise nested tables by route, method and status (registered in C on first use).
function M.http_observer(app, m)
  local requests = assert(m:counter("zever_http_requests_total",
    "HTTP requests answered, by route pattern, method and status.",
    { "route", "method", "status" }))
  local durations = assert(m:histogram("zever_http_request_duration_seconds",
    "Time from the request's dispatch to its response, by route pattern and method.",
    { "route", "method" }, M.HTTP_BUCKETS))
  local by_route, last = {}, {}
  local routes = app.routes
  local function find(rid, method, code)
    local t = by_route[rid]
    if not t then t = {} by_route[rid] = t end
    local tm = t[method]
    if not tm then
      local pattern = rid > 0 and routes[rid] and routes[rid].pattern or ""
      tm = { pattern = pattern, hist = durations:labels(pattern, STANDARD[method] and method or "other") }
      t[method] = tm
    end
    local c = tm[code]
    if not c then
      c = requests:labels(tm.pattern, STANDARD[method] and method or "other", tostring(code))
      tm[code] = c
    end
    local h = tm.hist
    local e = { method = method, code = code, pair = ffi.new("zv_metrics_pair_t", c.cells,
      h.bounds, c.cell, h.cell, h.nb), cells = c.cells }   -- cells: keeps the array alive
    last[rid] = e
    return e
  end
  local obs = {}
  obs.start = clock
  function obs.finish(t0, rid, method, code)
    rid = rid or 0
    local e = last[rid]
    if not e or e.method ~= method or e.code ~= code then e = find(rid, method, code) end
    request_ffi(e.pair, t0)
  end
  return obs
end

-- The job metrics (zever.trace.job_observer_for puts them on zever worker):
--   zever_jobs_total{job,status}              counter, status "done" | "failed"
--   zever_job_duration_seconds{job}           histogram (DEFAULT_BUCKETS)
function M.job_observer(m)
  local total = assert(m:counter("zever_jobs_total", "Jobs run, by job name and outcome.",
    { "job", "status" }))
  local dur = assert(m:histogram("zever_job_duration_seconds", "Time a job's handler ran.",
    { "job" }, M.DEFAULT_BUCKETS))
  return function(job)
    local t0 = clock()
    return function(ok)
      total:labels(job.name, ok and "done" or "failed"):inc()
      dur:labels(job.name):observe(clock() - t0)
    end
  end
end

-- What a scrape reads from the app's batteries (no hook on their paths): each resolved
-- battery's numeric stats() as zever_battery_stat{battery,stat}, and the length of each
-- jobs queue as zever_jobs_queue_length{queue}. A battery that fails to answer is skipped.
local function battery_collectors(app, m)
  m:collect("zever_battery_stat", "Numeric stats() of each resolved battery.", "gauge",
    function()
      local rows = {}
      local c = rawget(app, "_container")
      if not c then return rows end
      for _, name in ipairs(require("zever.config").schema.batteries) do
        local b = name ~= "metrics" and c:resolved(name)
        if b and type(b.stats) == "function" then
          local ok, st = pcall(b.stats, b)
          if ok and type(st) == "table" then
            for k, v in pairs(st) do
              if type(v) == "number" then
                rows[#rows + 1] = { labels = { battery = name, stat = tostring(k) }, value = v }
              end
            end
          end
        end
      end
      table.sort(rows, function(a, b)
        return a.labels.battery .. a.labels.stat < b.labels.battery .. b.labels.stat
      end)
      return rows
    end)
  m:collect("zever_jobs_queue_length", "Jobs waiting in each queue of the app's jobs.", "gauge",
    function()
      local rows = {}
      local c = rawget(app, "_container")
      local jobs = c and c:resolved("jobs")
      local queue = c and c:resolved("queue")
      if not jobs or not queue then return rows end
      local seen = {}
      for _, e in pairs(jobs.registry or {}) do
        local q = e.queue or (jobs.defaults and jobs.defaults.queue) or "default"
        if not seen[q] then
          seen[q] = true
          local ok, n = pcall(queue.len, queue, "jobs:" .. q)
          if ok and type(n) == "number" then rows[#rows + 1] = { labels = { queue = q }, value = n } end
        end
      end
      return rows
    end)
end

-- app:metrics(opts): GET opts.path (default the metrics section's path, "/metrics") answers the
-- exposition (Accept negotiation); opts.http ~= false (and metrics.http) records the built-in
-- HTTP metrics for every request the server answers. Returns the app.
function M.install(app, opts)
  if opts ~= nil and type(opts) ~= "table" then error("app:metrics: opts must be a table", 3) end
  opts = opts or {}
  local m = app.metrics
  local path = opts.path or m.path or "/metrics"
  if type(path) ~= "string" or path:sub(1, 1) ~= "/" then
    error("app:metrics: path must start with /", 3)
  end
  app:get("metrics", path, function(req, res)
    local fmt = M.negotiate(req:header("accept"))
    local text, ctype = app.metrics:render(fmt)
    if not text then return res:status(503):json({ error = "closed" }) end
    res:header("Content-Type", ctype)
    res:header("Cache-Control", "no-store")
    return text
  end)
  local http = opts.http
  if http == nil then http = m.http_enabled end
  if not rawget(m, "app_collectors") then
    rawset(m, "app_collectors", true)
    battery_collectors(app, m)
  end
  if http then rawset(app, "observe_request", M.http_observer(app, m)) end
  local quiet = rawget(app, "quiet_paths") or {}
  quiet[path] = true
  rawset(app, "quiet_paths", quiet)
  return app
end

return M
