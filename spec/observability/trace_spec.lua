-- zever.trace (app.trace): traceparent golden rows, spans and their parents, a request's
-- context carried into its response, into an outgoing call's headers (trace.inject) and into a
-- job it dispatches, and the OTLP/HTTP JSON exporter against a collector that zever itself
-- serves on a free port (a zever app receiving and storing the export requests).

local trace = require "zever.trace"
local json = require "zever.json"
local testing = require "zever.testing"
local fs = require "spec.support.files"
local process = require "spec.support.process"
local serve = require "spec.support.serve"

local TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

describe("zever.trace traceparent", function()
  -- { name, input, expected ctx or nil }
  local rows = {
    { "sampled", TP, { trace_id = "4bf92f3577b34da6a3ce929d0e0e4736",
      span_id = "00f067aa0ba902b7", flags = 1, sampled = true } },
    { "not sampled", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
      { trace_id = "4bf92f3577b34da6a3ce929d0e0e4736", span_id = "00f067aa0ba902b7", flags = 0,
        sampled = false } },
    { "a future version with more fields", "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-xyz",
      { trace_id = "4bf92f3577b34da6a3ce929d0e0e4736", span_id = "00f067aa0ba902b7", flags = 9,
        sampled = true } },
    { "version ff", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", nil },
    { "upper-case hex", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", nil },
    { "all-zero trace id", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", nil },
    { "all-zero span id", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", nil },
    { "short trace id", "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", nil },
    { "data after version 00", TP .. "-extra", nil },
    { "bad separator", "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", nil },
    { "not hex", "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", nil },
    { "empty", "", nil },
  }
  for _, row in ipairs(rows) do
    it("parses " .. row[1], function()
      local ctx, err = trace.parse(row[2])
      if row[3] then
        assert.are.same(row[3], ctx)
      else
        assert.is_nil(ctx)
        assert.are.equal("string", type(err))
      end
    end)
  end

  it("formats what it parses", function()
    assert.are.equal(TP, trace.format(trace.parse(TP)))
    assert.has_error(function() trace.format({}) end,
      "trace.format: expects { trace_id, span_id, flags }")
  end)
end)

describe("zever.trace spans", function()
  local out, tracer
  before_each(function()
    out = {}
    tracer = trace.wrap({ export = function(_, span) out[#out + 1] = trace.record(span) end })
  end)

  it("continues the parent's trace and nests the current span", function()
    local root = tracer:start("root", { parent = TP, kind = "server" })
    local child = tracer:start("child")
    assert.are.equal(child, tracer:current())
    assert.are.equal(child, trace.current())
    child:set("k", 1):finish()
    assert.are.equal(root, trace.current())
    root:finish()
    assert.is_nil(trace.current())
    assert.are.equal(2, #out)
    assert.are.equal("child", out[1].name)
    assert.are.equal("4bf92f3577b34da6a3ce929d0e0e4736", out[1].trace_id)
    assert.are.equal(out[2].span_id, out[1].parent_id)
    assert.are.equal("00f067aa0ba902b7", out[2].parent_id)
    assert.are.equal(1, out[1].attributes.k)
    assert.is_true(tonumber(out[1]["end"]) >= tonumber(out[1].start))
  end)

  it("exports nothing of an unsampled trace but still propagates it", function()
    local span = tracer:start("quiet", { parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00" })
    local h = {}
    assert.is_true(trace.inject(h))
    assert.are.equal(span:traceparent(), h.traceparent)
    assert.truthy(h.traceparent:match("%-00$"))
    span:finish()
    assert.are.equal(0, #out)
  end)

  it("fails the span of a raising run and re-raises", function()
    assert.has_error(function()
      tracer:run("boom", nil, function() error("kaput (expected by the spec)", 0) end)
    end, "kaput (expected by the spec)")
    assert.are.equal("error", out[1].status)
    assert.are.equal("kaput (expected by the spec)", out[1].message)
  end)

  it("injects into a flat header list and does nothing without a span", function()
    local h = { "accept", "*/*" }
    assert.is_false(trace.inject(h))
    assert.are.equal(2, #h)
    local span = tracer:start("call", { kind = "client" })
    assert.is_true(trace.inject(h))
    assert.are.same({ "accept", "*/*", "traceparent", span:traceparent() }, h)
    span:finish()
  end)
end)

local APP = [[
local zever = require "zever"
local trace = require "zever.trace"
local app = zever.app()
app:trace()
app.jobs:register("report", function(args)
  local f = assert(io.open(args.out, "a"))
  f:write(trace.context() or "none", "\n")
  f:close()
end)
app:get("/call", function()
  local headers = {}
  trace.inject(headers)                -- what the HTTP client does for an outgoing call
  return { outgoing = headers.traceparent, current = trace.context() }
end)
app:post("/dispatch", function(req)
  assert(app.jobs:dispatch("report", { out = req:json().out }))
  return { dispatched = trace.context() }
end)
return app
]]

describe("app:trace()", function()
  local dir, t
  before_each(function()
    dir = fs.tmpdir({ ["app.lua"] = APP,
      ["zever.yaml"] = "trace:\n  adapter: stdout\n  file: spans.jsonl\n  service: shop\n" ..
        "queue:\n  adapter: memory\n" })
    t = testing.app(dir)
  end)
  after_each(function()
    if t then t:close() end
    t = nil
    os.execute("rm -rf " .. process.quote(dir))
  end)

  local function spans()
    local out = {}
    for line in serve.slurp(dir .. "/spans.jsonl"):gmatch("[^\n]+") do out[#out + 1] = json.decode(line) end
    return out
  end

  it("continues the request's traceparent, answers with its own and injects it in calls", function()
    local res = t:get("/call", { headers = { traceparent = TP } })
    assert.are.equal(200, res.status, res.body)
    local body = res:json()
    local answered = assert(trace.parse(res.headers.traceparent))
    assert.are.equal("4bf92f3577b34da6a3ce929d0e0e4736", answered.trace_id)
    assert.are.equal(res.headers.traceparent, body.outgoing)
    assert.are.equal(body.current, body.outgoing)
    t.app.trace:flush()
    local s = spans()
    assert.are.equal(1, #s)
    assert.are.equal("GET", s[1].name)
    assert.are.equal("server", s[1].kind)
    assert.are.equal("shop", s[1].service)
    assert.are.equal("00f067aa0ba902b7", s[1].parent_id)
    assert.are.equal(answered.span_id, s[1].span_id)
    assert.are.equal(200, s[1].attributes["http.response.status_code"])
    assert.are.equal("/call", s[1].attributes["url.path"])
  end)

  it("starts a new trace for a malformed traceparent", function()
    local res = t:get("/call", { headers = { traceparent = "00-zz-bad-01" } })
    local ctx = assert(trace.parse(res.headers.traceparent))
    assert.are_not.equal("4bf92f3577b34da6a3ce929d0e0e4736", ctx.trace_id)
  end)

  it("carries the context into a job it dispatches, whose span is the request's child", function()
    local out = dir .. "/job.txt"
    local res = t:post("/dispatch", { json = { out = out }, headers = { traceparent = TP } })
    assert.are.equal(200, res.status, res.body)
    local dispatched = assert(trace.parse(res:json().dispatched))
    local w = require("zever.worker").new(t.app.jobs, {
      observe = trace.job_observer_for(t.app), log = function() end })
    for _ = 1, 20 do
      if w.stats.done > 0 then break end
      w:poll()
    end
    assert.are.equal(1, w.stats.done)
    local seen = assert(trace.parse((serve.slurp(out):gsub("\n$", ""))))
    assert.are.equal(dispatched.trace_id, seen.trace_id)
    t.app.trace:flush()
    local s = spans()
    local job
    for _, sp in ipairs(s) do if sp.kind == "consumer" then job = sp end end
    assert.is_not_nil(job)
    assert.are.equal("job report", job.name)
    assert.are.equal(dispatched.trace_id, job.trace_id)
    assert.are.equal(dispatched.span_id, job.parent_id)
    assert.are.equal(seen.span_id, job.span_id)
  end)
end)

local COLLECTOR = [[
local zever = require "zever"
local app = zever.app()
app:post("/v1/traces", function(req, res)
  local body = req:json()
  if type(body) ~= "table" or type(body.resourceSpans) ~= "table" then
    return res:status(400):json({ error = "not an ExportTraceServiceRequest" })
  end
  local f = assert(io.open(app:config().app.out, "a"))
  f:write(req.body, "\n")
  f:close()
  return res:json({})
end)
return app
]]

describe("adapters.trace.otlp #serve", function()
  local dir, collector
  setup(function()
    dir = fs.tmpdir({ ["app.lua"] = COLLECTOR, ["zever.yaml"] = "app:\n  out: received.jsonl\n" })
    collector = assert(serve.start(dir, { "--listen", "127.0.0.1:0", "--workers", "1",
      "--access-log", "off" }, { APP_OUT = dir .. "/received.jsonl" }))
  end)
  teardown(function()
    if collector then collector:kill() end
    if dir then os.execute("rm -rf " .. process.quote(dir)) end
  end)

  it("posts batches of spans that the collector receives intact", function()
    local tracer = trace.new({ adapter = "otlp", service = "checkout", batch = 2, flush = 0,
      endpoint = ("http://127.0.0.1:%d/v1/traces"):format(collector.port) })
    local root = tracer:start("order", { parent = TP, kind = "server",
      attributes = { ["order.id"] = 42, vip = true, ratio = 0.5, note = "a\"b" } })
    tracer:start("charge", { kind = "client" }):fail("card declined"):finish()
    root:finish()                                   -- 2 spans: the first batch goes out
    tracer:start("later", { root = true }):finish()
    assert.is_true(tracer:flush())                 -- the rest
    local st = tracer:stats()
    assert.are.equal(3, st.exported)
    assert.are.equal(0, st.dropped)
    local got = {}
    for line in serve.slurp(dir .. "/received.jsonl"):gmatch("[^\n]+") do
      local req = json.decode(line)
      local rs = req.resourceSpans[1]
      assert.are.same({ { key = "service.name", value = { stringValue = "checkout" } } },
        rs.resource.attributes)
      for _, sp in ipairs(rs.scopeSpans[1].spans) do got[sp.name] = sp end
    end
    assert.are.equal("4bf92f3577b34da6a3ce929d0e0e4736", got.order.traceId)
    assert.are.equal("00f067aa0ba902b7", got.order.parentSpanId)
    assert.are.equal(got.order.spanId, got.charge.parentSpanId)
    assert.are.equal(got.order.traceId, got.charge.traceId)
    assert.are.equal(2, got.order.kind)
    assert.are.equal(3, got.charge.kind)
    assert.are.same({ code = 2, message = "card declined" }, got.charge.status)
    assert.are_not.equal(got.order.traceId, got.later.traceId)
    local attrs = {}
    for _, a in ipairs(got.order.attributes) do attrs[a.key] = a.value end
    assert.are.same({ intValue = "42" }, attrs["order.id"])
    assert.are.same({ boolValue = true }, attrs.vip)
    assert.are.same({ doubleValue = 0.5 }, attrs.ratio)
    assert.are.same({ stringValue = 'a"b' }, attrs.note)
    assert.truthy(got.order.startTimeUnixNano:match("^%d+$"))
    assert.is_true(#got.order.startTimeUnixNano >= 19)
  end)

  it("drops a batch the collector cannot take and says so", function()
    local port = serve.free_port()
    local tracer = trace.new({ adapter = "otlp", flush = 0, batch = 10, timeout = 1,
      endpoint = ("http://127.0.0.1:%d/v1/traces"):format(port) })
    tracer:start("lost", { root = true }):finish()
    local ok, err = tracer:flush()
    assert.is_nil(ok)
    assert.are.equal("unavailable", err.code)
    assert.are.equal(1, tracer:stats().dropped)
  end)
end)

describe("adapters.trace.otlp batches in flight", function()
  it("sends a full batch without holding up the span that filled it, and flush waits for it", function()
    local sched = require "zever.sched"
    local loop = require "zever.loop"
    local pending, bodies = {}, {}
    -- A collector that answers only when the spec says so.
    local function send(_, body)
      local token = sched.token()
      pending[#pending + 1] = token
      bodies[#bodies + 1] = body
      return sched.await(token)
    end
    local tracer = trace.new({ adapter = "otlp", batch = 2, flush = 0, send = send })
    tracer:start("a", { root = true }):finish()
    tracer:start("b", { root = true }):finish()     -- fills the batch: its POST is now in flight
    assert.are.equal(1, #pending)
    local st = tracer:stats()
    assert.are.same({ 0, 0, 0 }, { st.exported, st.dropped, st.buffered })
    tracer:start("c", { root = true }):finish()     -- buffered behind it
    local answered = {}
    local release = loop.after(0, function()
      for i, token in ipairs(pending) do
        if not answered[i] then answered[i] = true; sched.complete(token, 200) end
      end
    end)
    finally(function() release:stop() end)
    assert.is_true(tracer:flush())
    st = tracer:stats()
    assert.are.same({ 3, 0, 0 }, { st.exported, st.dropped, st.buffered })
    assert.are.equal(2, #bodies)
    assert.truthy(bodies[1]:find('"name":"a"', 1, true))
    assert.truthy(bodies[2]:find('"name":"c"', 1, true))
  end)
end)

describe("app:trace() and the HTTP client", function()
  it("sends the request's trace context on an outgoing zever.httpc call", function()
    local zever = require "zever"
    local echo = zever.app()
    echo:get("/echo", function(req) return { traceparent = req:header("traceparent") or false } end)
    local upstream = testing.serve(echo)
    local app = zever.app()
    app:trace()
    app:get("/out", function()
      local r = assert(require("zever.httpc").get("http://127.0.0.1:" .. upstream.port .. "/echo"))
      return json.decode(r.body)
    end)
    local front = testing.serve(app)
    local res = front:fetch("GET", "/out", { headers = { traceparent = TP } })
    assert.are.equal(200, res.status, res.body)
    local sent = assert(trace.parse(json.decode(res.body).traceparent))
    local answered = assert(trace.parse(res.headers.traceparent))
    assert.are.equal("4bf92f3577b34da6a3ce929d0e0e4736", sent.trace_id)
    assert.are.equal(answered.span_id, sent.span_id)   -- the server span is the call's parent
    front:close()
    upstream:close()
  end)
end)
