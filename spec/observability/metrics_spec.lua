-- zever.metrics (app.metrics): the C registry through its binding, the front-end over both
-- adapters (conformance), and /metrics of a served app: per route pattern, merged over two
-- workers, checked by promtool (Debian's prometheus package) and a strict OpenMetrics parser.

local core = require "zever.metrics_core"
local metrics = require "zever.metrics"
local exposition = require "spec.support.exposition"
local fs = require "spec.support.files"
local process = require "spec.support.process"
local serve = require "spec.support.serve"

local seq = 0
local function fresh_registry()
  seq = seq + 1
  return ("spec-%d-%d"):format(os.time(), seq)
end

require("spec.conformance.metrics")("prometheus", function()
  return metrics.new({ registry = fresh_registry() })
end, { records = true })

require("spec.conformance.metrics")("noop", function()
  local impl = require("adapters.metrics.noop").open({})
  return metrics.wrap(impl)
end, { records = false })

describe("zever.metrics_core", function()
  it("merges the cells of every claimed slot when it renders", function()
    local h = assert(core.open(fresh_registry(), 64))
    local fam = assert(h:family("core_total", "Help.", "counter", { "k" }))
    local cell = assert(h:series(fam, { "v" }))
    local ffi = require "ffi"
    local slot_a, a = h:claim()
    -- A second slot of the same registry, as a second worker claims one.
    local slot_b, b = h:claim()
    assert.are_not.equal(slot_a, slot_b)
    ffi.cast("double *", a)[cell] = 2
    ffi.cast("double *", b)[cell] = 5
    assert.are.equal(7, h:value(cell))
    local fams = assert(exposition.parse(h:render("prometheus"), "prometheus"))
    assert.are.equal(7, fams.core_total.samples[1].value)
    h:release()
  end)

  it("interns label values: the same values give the same cell", function()
    local h = assert(core.open(fresh_registry(), 64))
    local fam = assert(h:family("intern_total", "", "counter", { "a", "b" }))
    local c1 = assert(h:series(fam, { "x", "y" }))
    assert.are.equal(c1, h:series(fam, { "x", "y" }))
    assert.are_not.equal(c1, h:series(fam, { "x", "z" }))
    h:release()
  end)

  it("fails with RANGE when the cells are used up, INVAL for bad names", function()
    local h = assert(core.open(fresh_registry(), 4))
    local hist = assert(h:family("full_seconds", "", "histogram", { "k" }, { 1, 2 }))
    assert.is_number(h:series(hist, { "a" }))            -- 4 cells: 2 bounds + Inf + sum
    local r, msg, code = h:series(hist, { "b" })
    assert.is_nil(r)
    assert.are.equal("value out of range", msg)
    assert.are.equal("RANGE", code)
    for _, bad in ipairs({
      { "1abc", "counter", {} }, { "ok", "counter", { "le" }, nil, "counter le is fine" },
      { "ok2", "histogram", { "le" }, { 1 } }, { "ok3", "counter", { "__x" } },
      { "ok4", "histogram", { "k" }, { 2, 1 } }, { "ok5", "counter", { "a", "a" } },
    }) do
      local id, _, c = h:family(bad[1], "", bad[2], bad[3], bad[4])
      if bad[5] then
        assert.is_number(id, bad[5])
      else
        assert.is_nil(id, bad[1])
        assert.are.equal("INVAL", c, bad[1])
      end
    end
    h:release()
  end)

  it("renders golden rows in both formats", function()
    local h = assert(core.open(fresh_registry(), 64))
    local _, cells = h:claim()
    local ffi = require "ffi"
    require "zever.cdef.metrics"
    local p = ffi.cast("double *", cells)
    local c = assert(h:series(assert(h:family("g_total", "A \\ b\nc", "counter", {})), {}))
    local hf = assert(h:family("g_seconds", "", "histogram", { "r" }, { 0.25, 1.5 }))
    local hc = assert(h:series(hf, { "/a" }))
    ffi.C.zv_metrics_add(p, c, 1.5)
    local b, nb = h:bounds(hf)
    for _, v in ipairs({ 0.1, 0.25, 2, 0 / 0 }) do
      ffi.C.zv_metrics_observe(p, hc, ffi.cast("const double *", b), nb, v)
    end
    assert.are.equal(table.concat({
      "# HELP g_total A \\\\ b\\nc",
      "# TYPE g_total counter",
      "g_total 1.5",
      "# HELP g_seconds ",
      "# TYPE g_seconds histogram",
      'g_seconds_bucket{r="/a",le="0.25"} 2',
      'g_seconds_bucket{r="/a",le="1.5"} 2',
      'g_seconds_bucket{r="/a",le="+Inf"} 4',
      'g_seconds_sum{r="/a"} 2.35',
      'g_seconds_count{r="/a"} 4',
      "" }, "\n"), h:render("prometheus"))
    local om = h:render("openmetrics")
    assert.truthy(om:find("# TYPE g counter\ng_total 1.5\n", 1, true))
    h:release()
  end)
end)

describe("zever.metrics negotiation", function()
  it("picks OpenMetrics only when Accept asks for it", function()
    assert.are.equal("prometheus", metrics.negotiate(nil))
    assert.are.equal("prometheus", metrics.negotiate("*/*"))
    assert.are.equal("prometheus", metrics.negotiate("text/plain;version=0.0.4"))
    assert.are.equal("openmetrics", metrics.negotiate(
      "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"))
    assert.are.equal("prometheus", metrics.negotiate(
      "application/openmetrics-text;q=0.1,text/plain;q=0.9"))
  end)
end)

local APP = [[
local zever = require "zever"
local app = zever.app()
app:get("/hello", function() return "hello world" end)
app:get("/users/:id", function(req) return { id = req.params.id } end)
app:post("/fail", function() error("boom (expected by the spec)") end)
app:metrics()
app.metrics:counter("app_signups_total", "Signups.", { "plan" }):labels("pro"):inc(0)
return app
]]

describe("app:metrics() served #serve", function()
  local dir, srv
  setup(function()
    dir = fs.tmpdir({ ["app.lua"] = APP,
      ["zever.yaml"] = "metrics:\n  registry: served\n" })
    srv = assert(serve.start(dir, { "--listen", "127.0.0.1:0", "--workers", "2",
      "--access-log", "off" }))
  end)
  teardown(function()
    if srv then srv:kill() end
    if dir then os.execute("rm -rf " .. process.quote(dir)) end
  end)

  local function scrape(accept)
    local r = srv:curl("/metrics", accept and ("-H " .. process.quote("Accept: " .. accept)) or nil)
    assert.are.equal(0, r.code, r.stderr)
    return r.stdout
  end

  it("counts by route pattern, never the raw path, over both workers", function()
    -- New connections each: the kernel spreads them over the two workers.
    for i = 1, 20 do assert.are.equal(0, srv:curl("/users/" .. i).code) end
    for _ = 1, 5 do srv:curl("/hello") end
    srv:curl("/no/such/path")
    srv:curl("/fail", "-X POST")
    local text = scrape()
    local fams = assert(exposition.parse(text, "prometheus"))
    local req = "zever_http_requests_total"
    assert.are.equal(20, exposition.sum(fams, req, { route = "/users/:id", status = "200" }))
    assert.are.equal(5, exposition.sum(fams, req, { route = "/hello", method = "GET" }))
    assert.are.equal(1, exposition.sum(fams, req, { route = "", status = "404" }))
    assert.are.equal(1, exposition.sum(fams, req, { route = "/fail", method = "POST", status = "500" }))
    assert.is_nil(text:find("/users/1", 1, true))
    local count = exposition.sum(fams, "zever_http_request_duration_seconds_count",
      { route = "/users/:id" })
    assert.are.equal(0, count) -- sum() reads the family's own samples: use the histogram's
    for _, s in ipairs(fams.zever_http_request_duration_seconds.samples) do
      if s.name:match("_count$") and s.labels.route == "/users/:id" then count = s.value end
    end
    assert.are.equal(20, count)
    assert.are.equal(0, exposition.sum(fams, "app_signups_total", { plan = "pro" }))
  end)

  it("passes promtool check metrics", function()
    if not process.run("command -v promtool").stdout:match("promtool") then
      pending("promtool is not installed (Debian package prometheus); the strict parser ran")
      return
    end
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write(scrape())
    f:close()
    local r = process.run("promtool check metrics < " .. process.quote(path) .. " 2>&1")
    os.remove(path)
    assert.are.equal(0, r.code, r.stdout)
    assert.are.equal("", r.stdout)
    assert.are.equal("", r.stderr)
  end)

  it("answers OpenMetrics when Accept asks for it", function()
    local r = srv:curl("/metrics", "-i -H " .. process.quote(
      "Accept: application/openmetrics-text; version=1.0.0"))
    assert.truthy(r.stdout:find("Content-Type: application/openmetrics-text; version=1.0.0", 1, true))
    local body = r.stdout:match("\r\n\r\n(.*)$")
    local fams = assert(exposition.parse(body, "openmetrics"))
    assert.are.equal("counter", fams.zever_http_requests.type)
  end)
end)
