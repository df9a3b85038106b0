-- zever.trace: tracing spans (app.trace) with W3C Trace Context (`traceparent`) in and out,
-- exported by an adapter: stdout (JSON lines), otlp (OTLP/HTTP JSON to a collector), noop.
--
--   trace.parse(value)  -> ctx { trace_id, span_id, flags, sampled } | nil, err   (traceparent)
--   trace.format(ctx)   -> "00-<32 hex>-<16 hex>-<2 hex>"
--   trace.current()     -> the span of the running coroutine, or nil
--   trace.inject(headers) -> true when a span is current: headers gets its traceparent (a map
--                          headers.traceparent = ..., or a flat list { k, v, k, v } appended to);
--                          the hook for outgoing HTTP calls (zever's HTTP client, #22)
--   trace.context()     -> the current span's traceparent text, or nil (what jobs carry)
--
--   local tracer = app.trace
--   local span = tracer:start("charge", { parent = ctx | span | "00-...", kind = "client",
--                                         attributes = { ["order.id"] = 7 } })
--   span:set("http.status_code", 200) ; span:fail(err) ; span:finish()
--   tracer:run("name", opts, fn, ...) -> fn's results: a span current while fn runs (a raise
--                                       fails the span and is re-raised)
--   app:trace([{ http = true }])       the request middleware: a server span per request, its
--                                       parent from the request's traceparent header; the
--                                       response carries traceparent back (the server span's)
--   tracer:flush()                      export what the adapter buffers now
--
-- A span is sampled when its parent was (the flags' low bit), or, for a new trace, with the
-- probability trace.sample; an unsampled span still propagates its context (never exported).
-- A malformed traceparent starts a new trace (the W3C rule), never an error. The current span
-- is per coroutine (each request and job runs in its own), kept in a weak table and cleared
-- when the span finishes. It must not know the HTTP server or the jobs battery: they call it.

local battery = require "zever.battery"
local ffi = require "ffi"
require "zever.cdef.libc"

local type, error, tostring, pairs, ipairs, setmetatable, format, running, random, byte =
  type, error, tostring, pairs, ipairs, setmetatable, string.format, coroutine.running, math.random,
  string.byte
local C = ffi.C

local M = {}

local Tracer = battery.define("trace", "the tracer is closed")
M.error = Tracer.error

M.KINDS = { internal = 1, server = 2, client = 3, producer = 4, consumer = 5 }

-- --- traceparent ------------------------------------------------------------------------------

local ZERO32, ZERO16 = ("0"):rep(32), ("0"):rep(16)

-- Parses a traceparent header (W3C Trace Context level 1, §3.2): version-traceid-parentid-flags
-- in lower-case hex; version ff and all-zero ids are invalid; a version above 00 may carry more
-- fields after a "-" (ignored), version 00 may not.
function M.parse(value)
  if type(value) ~= "string" then return nil, "traceparent: not a string" end
  if #value < 55 then return nil, "traceparent: too short" end
  local version, trace_id, span_id, flags, rest =
    value:match("^(%x%x)%-(%x+)%-(%x+)%-(%x%x)(.*)$")
  if not version or value:find("[A-F]") then return nil, "traceparent: not lower-case hex fields" end
  if #trace_id ~= 32 or #span_id ~= 16 then return nil, "traceparent: wrong id length" end
  if version == "ff" then return nil, "traceparent: version ff is invalid" end
  if version == "00" and rest ~= "" then return nil, "traceparent: data after version 00's flags" end
  if rest ~= "" and rest:sub(1, 1) ~= "-" then return nil, "traceparent: bad field separator" end
  if trace_id == ZERO32 then return nil, "traceparent: all-zero trace id" end
  if span_id == ZERO16 then return nil, "traceparent: all-zero parent id" end
  local f = tonumber(flags, 16)
  return { trace_id = trace_id, span_id = span_id, flags = f, sampled = f % 2 == 1 }
end

function M.format(ctx)
  if type(ctx) ~= "table" or type(ctx.trace_id) ~= "string" or type(ctx.span_id) ~= "string" then
    error("trace.format: expects { trace_id, span_id, flags }", 2)
  end
  return format("00-%s-%s-%02x", ctx.trace_id, ctx.span_id, (ctx.flags or 0) % 256)
end

-- --- ids and clocks ------------------------------------------------------------------------

-- Random ids from the kernel, read in blocks (one read per 4 KiB of ids).
local urandom
local function random_hex(nbytes)
  if not urandom then urandom = assert(io.open("/dev/urandom", "rb")) end
  local s = urandom:read(nbytes)
  local out = {}
  for i = 1, nbytes do out[i] = format("%02x", byte(s, i)) end
  return table.concat(out)
end

local function new_trace_id()
  local id = random_hex(16)
  if id == ZERO32 then return new_trace_id() end
  return id
end

local function new_span_id()
  local id = random_hex(8)
  if id == ZERO16 then return new_span_id() end
  return id
end

-- Wall-clock Unix time (OTLP wants nanoseconds): seconds and nanoseconds apart, since a double
-- cannot hold today's time in nanoseconds exactly; M.record joins them as decimal text.
local ts = ffi.new("struct timespec")
local function unix_now()
  C.clock_gettime(0, ts)   -- CLOCK_REALTIME
  return tonumber(ts.tv_sec), tonumber(ts.tv_nsec)
end

-- --- current span per coroutine ---------------------------------------------------------------

local current = setmetatable({}, { __mode = "k" })
local MAIN = {}   -- the key outside any coroutine

function M.current()
  return current[running() or MAIN]
end

local function set_current(span)
  current[running() or MAIN] = span
end

function M.context()
  local span = M.current()
  return span and span:traceparent() or nil
end

function M.inject(headers)
  if type(headers) ~= "table" then error("trace.inject: headers must be a table", 2) end
  local span = M.current()
  if not span then return false end
  local value = span:traceparent()
  if #headers > 0 then
    headers[#headers + 1] = "traceparent"
    headers[#headers + 1] = value
  else
    headers.traceparent = value
  end
  return true
end

-- --- spans ----------------------------------------------------------------------------------

local Span = {}
Span.__index = Span

function Span:set(key, value)
  if type(key) ~= "string" then error("span:set: key must be a string", 2) end
  local t = type(value)
  if t ~= "string" and t ~= "number" and t ~= "boolean" then
    error("span:set: value must be a string, number or boolean", 2)
  end
  self.attributes[key] = value
  return self
end

-- Marks the span failed with a message (an error object's message, never its fields).
function Span:fail(err)
  self.status = "error"
  self.message = type(err) == "table" and tostring(err.message or err) or tostring(err)
  return self
end

function Span:traceparent()
  return format("00-%s-%s-%02x", self.trace_id, self.span_id, self.sampled and 1 or 0)
end

function Span:context()
  return { trace_id = self.trace_id, span_id = self.span_id, flags = self.sampled and 1 or 0,
    sampled = self.sampled }
end

-- Ends the span (once; later calls do nothing) and hands it to the exporter when sampled.
function Span:finish(status)
  if self.end_s then return self end
  if status == "error" or status == "ok" then self.status = status end
  self.end_s, self.end_ns = unix_now()
  if current[self.co] == self then current[self.co] = self.previous end
  local tracer = self.tracer
  if self.sampled and not tracer.closed then tracer.impl:export(self) end
  return self
end

local function parent_ctx(parent)
  if parent == nil then return nil end
  if type(parent) == "string" then return M.parse(parent) end
  if getmetatable(parent) == Span then return parent:context() end
  if type(parent) == "table" and type(parent.trace_id) == "string" then return parent end
  return nil
end

-- Starts a span and makes it the current one of the running coroutine (until it finishes).
function Tracer:start(name, opts)
  battery.string(name, "trace:start", "name")
  battery.opt_table(opts, "trace:start", "opts")
  opts = opts or {}
  local kind = opts.kind or "internal"
  if not M.KINDS[kind] then error("trace:start: unknown kind " .. tostring(kind), 2) end
  local parent = opts.parent
  if parent == nil and opts.root ~= true then parent = M.current() end
  local ctx = parent_ctx(parent)
  local sampled
  if ctx then
    sampled = ctx.sampled
    if sampled == nil then sampled = (ctx.flags or 0) % 2 == 1 end
  else
    sampled = self.sample >= 1 or random() < self.sample
  end
  local s, ns = unix_now()
  local co = running() or MAIN
  local span = setmetatable({ tracer = self, name = name, kind = kind,
    trace_id = ctx and ctx.trace_id or new_trace_id(), span_id = new_span_id(),
    parent_id = ctx and ctx.span_id or nil, sampled = sampled, start_s = s, start_ns = ns,
    attributes = {}, status = "unset", co = co, previous = current[co],
    service = self.service }, Span)
  for k, v in pairs(opts.attributes or {}) do span:set(k, v) end
  current[co] = span
  return span
end

function Tracer:run(name, opts, fn, ...)
  if type(fn) ~= "function" then error("trace:run: fn must be a function", 2) end
  local span = self:start(name, opts)
  local r = { pcall(fn, ...) }
  if not r[1] then
    span:fail(r[2]):finish()
    error(r[2], 0)
  end
  span:finish()
  return unpack(r, 2, table.maxn(r))
end

function Tracer:flush()
  if self.impl.flush then return self.impl:flush() end
  return true
end

Tracer.current = function() return M.current() end
Tracer.inject = function(_, headers) return M.inject(headers) end

-- Outgoing calls of the HTTP client (zever.httpc) carry the current span's traceparent: inject
-- joins the client's before_send list once, when a tracer is first installed on an app.
local function trace_http_client()
  local httpc = require "zever.httpc"
  for _, fn in ipairs(httpc.before_send) do
    if fn == M.inject then return end
  end
  httpc.before_send[#httpc.before_send + 1] = M.inject
end

-- app:trace(opts) is app.trace(app, opts): the request middleware (see the header).
function Tracer.__call(self, app, opts)
  if opts ~= nil and type(opts) ~= "table" then error("app:trace: opts must be a table", 2) end
  if rawget(app, "_traced") then return app end   -- once per app (config and file may both ask)
  rawset(app, "_traced", true)
  trace_http_client()
  local tracer = self
  app:use(function(req, res, nxt)
    -- The span's name is the method (OpenTelemetry's rule without a route): never the raw path.
    local span = tracer:start(req.method, {
      parent = req:header("traceparent") or false, root = true, kind = "server",
      attributes = { ["http.request.method"] = req.method, ["url.path"] = req.path } })
    res:header("traceparent", span:traceparent())
    local ok, r = pcall(nxt)
    if not ok then
      span:fail(r):set("http.response.status_code", 500):finish()
      error(r, 0)
    end
    span:set("http.response.status_code", res.code or 200)
    if (res.code or 200) >= 500 then span.status = "error" end
    span:finish()
    return r
  end)
  return app
end

-- The job hook (zever.worker's opts.observe): a consumer span per job, child of the span that
-- dispatched it when its payload carries a traceparent.
function M.job_observer(tracer)
  return function(job, rec)
    local span = tracer:start("job " .. tostring(job.name), { kind = "consumer", root = true,
      parent = type(rec.traceparent) == "string" and rec.traceparent or false,
      attributes = { ["job.name"] = tostring(job.name), ["job.id"] = tostring(job.id),
        ["job.attempt"] = job.attempt or 1, ["job.queue"] = tostring(job.queue) } })
    return function(ok, err)
      if not ok then span:fail(err) end
      span:finish()
    end
  end
end

-- zever worker's opts.observe for an app: a consumer span per job when trace.adapter is not
-- noop, and the job metrics (zever.metrics.job_observer) when http.metrics is on; nil when
-- neither is.
function M.job_observer_for(app)
  local cfg = app:config()
  local hooks = {}
  if cfg.trace and cfg.trace.adapter ~= "noop" then hooks[#hooks + 1] = M.job_observer(app.trace) end
  if cfg.http and cfg.http.metrics then
    hooks[#hooks + 1] = require("zever.metrics").job_observer(app.metrics)
  end
  if #hooks == 0 then return nil end
  if #hooks == 1 then return hooks[1] end
  return function(job, rec)
    local done = {}
    for i, h in ipairs(hooks) do done[i] = h(job, rec) end
    return function(ok, err)
      for i = #done, 1, -1 do done[i](ok, err) end
    end
  end
end

-- The span as a plain table (what the stdout adapter writes and the otlp one converts).
function M.record(span)
  return { name = span.name, kind = span.kind, trace_id = span.trace_id, span_id = span.span_id,
    parent_id = span.parent_id, service = span.service, status = span.status,
    message = span.message, attributes = span.attributes,
    start = format("%d%09d", span.start_s, span.start_ns),
    ["end"] = format("%d%09d", span.end_s, span.end_ns) }
end

function M.wrap(impl, opts)
  opts = opts or {}
  local sample = opts.sample or 1
  if type(sample) ~= "number" or sample < 0 or sample > 1 then
    error("trace: sample must be a number in 0..1", 2)
  end
  return battery.object(Tracer, impl, { sample = sample, service = opts.service or "zever" })
end

function M.wrap_config(impl, section)
  return M.wrap(impl, section)
end

-- A tracer outside any app (specs, scripts): opts as the trace config section; adapter
-- "stdout" (default), "otlp" or "noop".
function M.new(opts)
  if opts ~= nil and type(opts) ~= "table" then error("trace.new: opts must be a table", 2) end
  opts = opts or {}
  local impl, err = require("adapters.trace." .. (opts.adapter or "stdout")).open(opts)
  if not impl then error(tostring(err), 2) end
  return M.wrap(impl, opts)
end

M.set_current = set_current
return M
