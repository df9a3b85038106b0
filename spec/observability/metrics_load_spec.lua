-- /metrics scraped under wrk load: the HTTP metrics of two workers add up to what wrk says it
-- got. wrk counts the responses it read before its time ran out; a request in flight at that
-- moment may have been answered (and counted) by the server, so the server's count is at least
-- wrk's and at most wrk's plus one per connection (no pipelining: one request in flight each).

local exposition = require "spec.support.exposition"
local fs = require "spec.support.files"
local process = require "spec.support.process"
local serve = require "spec.support.serve"

local APP = [[
local zever = require "zever"
local app = zever.app()
app:get("/hello", function() return "hello world" end)
app:get("/items/:id", function(req) return { id = req.params.id } end)
return app
]]

local CONNECTIONS = 8

describe("/metrics under wrk load #serve", function()
  local dir, srv
  setup(function()
    dir = fs.tmpdir({ ["app.lua"] = APP,
      ["zever.yaml"] = "http:\n  metrics: true\nmetrics:\n  registry: load\n" })
    srv = assert(serve.start(dir, { "--listen", "127.0.0.1:0", "--workers", "2",
      "--access-log", "off" }))
  end)
  teardown(function()
    if srv then srv:kill() end
    if dir then os.execute("rm -rf " .. process.quote(dir)) end
  end)

  local function scrape()
    local r = srv:curl("/metrics")
    assert.are.equal(0, r.code, r.stderr)
    return assert(exposition.parse(r.stdout, "prometheus"))
  end

  local function wrk(path, seconds)
    local r = process.run(("wrk -t2 -c%d -d%ds http://127.0.0.1:%d%s"):format(CONNECTIONS,
      seconds, srv.port, path))
    assert.are.equal(0, r.code, r.stderr)
    assert.is_nil(r.stdout:find("Socket errors", 1, true), r.stdout)
    assert.is_nil(r.stdout:find("Non-2xx", 1, true), r.stdout)
    return assert(tonumber(r.stdout:match("(%d+) requests in")), r.stdout)
  end

  it("counts what wrk got, by route pattern, while it is scraped during the run", function()
    -- Scrapes during the load (a background loop of curl) must not disturb the counts.
    local scraper = io.popen(("for i in $(seq 1 20); do curl -s -o /dev/null " ..
      "http://127.0.0.1:%d/metrics; sleep 0.1; done & echo $!"):format(srv.port))
    local spid = scraper:read("*l")
    scraper:close()
    local hello = wrk("/hello", 2)
    local items = wrk("/items/7", 1)
    os.execute("wait " .. spid .. " 2>/dev/null")
    local fams = scrape()
    local req = "zever_http_requests_total"
    local got_hello = exposition.sum(fams, req, { route = "/hello", method = "GET", status = "200" })
    local got_items = exposition.sum(fams, req, { route = "/items/:id", status = "200" })
    assert.is_true(got_hello >= hello and got_hello <= hello + CONNECTIONS,
      ("wrk %d, /metrics %d"):format(hello, got_hello))
    assert.is_true(got_items >= items and got_items <= items + CONNECTIONS,
      ("wrk %d, /metrics %d"):format(items, got_items))
    -- The histogram counted each of those requests once.
    local count
    for _, s in ipairs(fams.zever_http_request_duration_seconds.samples) do
      if s.name:match("_count$") and s.labels.route == "/hello" then count = s.value end
    end
    assert.are.equal(got_hello, count)
    -- Nothing but route patterns: no series per raw path.
    for _, s in ipairs(fams[req].samples) do
      assert.truthy(s.labels.route == "/hello" or s.labels.route == "/items/:id"
        or s.labels.route == "/metrics", s.labels.route)
    end
  end)
end)
