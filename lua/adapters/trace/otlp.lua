-- adapters.trace.otlp: spans exported to an OpenTelemetry collector over OTLP/HTTP with the
-- JSON encoding (POST <endpoint>, application/json, an ExportTraceServiceRequest), in batches:
-- when section.batch spans wait, when the oldest waited section.flush seconds (a timer on the
-- worker's loop, unref'd), and on flush/close.
--
--   otlp.open(section) -> impl | nil, err   section: endpoint (http(s)://host:port/path), service,
--                                           batch, flush, timeout, send (optional function)
--   impl:export(span) ; impl:flush() -> true | nil, err ; impl:stats() ; impl:close()
--   otlp.encode(records, service) -> the request body (JSON text)
--
-- Sending: section.send(url, body, timeout) -> status | nil, message when given; otherwise a
-- POST through zever's HTTP client (zever.httpc: http:// or https://, on the worker's loop, with
-- a total timeout of section.timeout seconds). An export the timer starts runs in a coroutine of
-- its own, and so does a full batch (the span that filled it does not wait); flush() and close()
-- send what is buffered and wait until no export is in flight. A failed export drops the batch
-- (counted in stats().dropped) and is logged once per failure streak to stderr: tracing never
-- fails a request.

local json = require "zever.json"
local errors = require "zever.errors"
local sched = require "zever.sched"

local ipairs, pairs, type, tostring, format = ipairs, pairs, type, tostring,
  string.format

local M = {}

local KIND = { internal = 1, server = 2, client = 3, producer = 4, consumer = 5 }
local STATUS = { unset = 0, ok = 1, error = 2 }

local function attr_value(v)
  local t = type(v)
  if t == "boolean" then return { boolValue = v } end
  if t == "number" then
    if v % 1 == 0 and v > -2 ^ 53 and v < 2 ^ 53 then return { intValue = format("%d", v) } end
    return { doubleValue = v }
  end
  return { stringValue = tostring(v) }
end

local function attributes(t)
  local keys = {}
  for k in pairs(t or {}) do keys[#keys + 1] = k end
  table.sort(keys)
  local out = json.array()
  for i, k in ipairs(keys) do out[i] = { key = k, value = attr_value(t[k]) } end
  return out
end

function M.encode(records, service)
  local spans = json.array()
  for i, r in ipairs(records) do
    local status = { code = STATUS[r.status] or 0 }
    if r.message then status.message = r.message end
    spans[i] = { traceId = r.trace_id, spanId = r.span_id, parentSpanId = r.parent_id,
      name = r.name, kind = KIND[r.kind] or 1, startTimeUnixNano = r.start,
      endTimeUnixNano = r["end"], attributes = attributes(r.attributes), status = status }
  end
  return json.encode({ resourceSpans = { { resource = { attributes = attributes({
    ["service.name"] = service or "zever" }) }, scopeSpans = { { scope = { name = "zever" },
    spans = spans } } } } })
end

local function valid_url(url)
  return tostring(url):match("^https?://[^/%s]+/%S*$") ~= nil
end

local function default_send(url, body, timeout)
  local res, err = require("zever.httpc").post(url, body, { timeout = timeout,
    headers = { ["content-type"] = "application/json" } })
  if not res then return nil, tostring(err and err.message or err) end
  return res.status
end

local Impl = {}
Impl.__index = Impl

-- Sends one batch and accounts for it. Several may be in flight at once (a full batch goes out
-- in a coroutine of its own); flush() waits for all of them.
local function send_batch(self, batch)
  local n = #batch
  self.inflight = self.inflight + 1
  local ok, status, err = pcall(self.send, self.endpoint, M.encode(batch, self.service), self.timeout)
  if not ok then status, err = nil, tostring(status) end
  self.inflight = self.inflight - 1
  local result, failure
  if status and status >= 200 and status < 300 then
    self.exported = self.exported + n
    self.failing = false
    result = true
  else
    self.dropped = self.dropped + n
    local msg = err or ("the collector answered " .. tostring(status))
    if not self.failing then
      io.stderr:write("zever: trace: otlp export to ", self.endpoint, " failed: ", msg,
        " (spans dropped)\n")
    end
    self.failing = msg
    failure = errors.new("trace", "unavailable", "trace: otlp export failed: " .. msg)
  end
  if self.inflight == 0 and self.waiters then
    local waiters = self.waiters
    self.waiters = nil
    for _, token in ipairs(waiters) do sched.complete(token) end
  end
  return result, failure
end

local function take(self)
  local batch = self.buffer
  self.buffer = {}
  if self.timer then self.timer:stop() end
  return batch
end

-- Sends what is buffered and waits until no export is in flight: when it returns, every span
-- exported before the call has been sent or dropped.
function Impl:flush()
  local ok, err = true, nil
  if #self.buffer > 0 then ok, err = send_batch(self, take(self)) end
  while self.inflight > 0 do
    local token = sched.token()
    local waiters = self.waiters or {}
    self.waiters = waiters
    waiters[#waiters + 1] = token
    sched.await(token)
  end
  if ok and self.failing then
    return nil, errors.new("trace", "unavailable", "trace: otlp export failed: " .. self.failing)
  end
  return ok, err
end

function Impl:export(span)
  local buf = self.buffer
  buf[#buf + 1] = require("zever.trace").record(span)
  if #buf >= self.batch then
    -- The span that filled the batch does not wait for the collector: the POST runs in a
    -- coroutine of its own (a request is never held up by tracing).
    sched.spawn(send_batch, self, take(self))
  elseif #buf == 1 and self.flush_every > 0 then
    if not self.timer then
      local ok, loop = pcall(require, "zever.loop")
      if ok then
        self.timer = loop.timer(function() sched.spawn(self.flush, self) end)
        if self.timer.unref then self.timer:unref() end
      end
    end
    if self.timer then self.timer:start(self.flush_every) end
  end
end

function Impl:stats()
  return { exported = self.exported, dropped = self.dropped, buffered = #self.buffer }
end

function Impl:close()
  self:flush()
  if self.timer then self.timer:stop() end
  return true
end

function M.open(section)
  section = section or {}
  local endpoint = section.endpoint or "http://127.0.0.1:4318/v1/traces"
  if not section.send and not valid_url(endpoint) then
    return nil, errors.new("trace", "invalid",
      "trace: endpoint must be http(s)://host[:port]/path")
  end
  if section.send ~= nil and type(section.send) ~= "function" then
    return nil, errors.new("trace", "invalid", "trace: send must be a function")
  end
  return setmetatable({ endpoint = endpoint, service = section.service or "zever",
    batch = section.batch or 64, flush_every = section.flush or 1, timeout = section.timeout or 2,
    send = section.send or default_send, buffer = {}, exported = 0, dropped = 0, inflight = 0 },
    Impl)
end

return M
