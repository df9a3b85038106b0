-- zever.middleware.request_id: X-Request-Id in and out, validation, and the id in every log line
-- of the request (zever.log's per-coroutine context).

local zever = require "zever"
local testing = require "zever.testing"
local json = require "zever.json"
local request_id = require "zever.middleware.request_id"

local function app_with_log(opts)
  local lines = {}
  local app = zever.app()
  app.log = require("zever.log").new({ format = "json", out = { write = function(_, l)
    lines[#lines + 1] = json.decode(l)
  end } })
  app:use(request_id(opts))
  app:get("/", function(req)
    app.log:info("first", { n = 1 })
    zever.sleep(0.001) -- another request may run meanwhile: the context is per coroutine
    app.log:info("second")
    return req.id
  end)
  app:get("/fail", function() error("boom") end)
  return app, lines
end

describe("zever.middleware.request_id", function()
  it("keeps a valid incoming id and sends it back", function()
    local app = app_with_log()
    local r = testing.request(app, "GET", "/", { headers = { ["X-Request-Id"] = "abc-123_x.y:z" } })
    assert.equal("abc-123_x.y:z", r.body)
    assert.equal("abc-123_x.y:z", r.headers["x-request-id"])
  end)

  it("replaces an id that is too long or has other characters", function()
    local app = app_with_log()
    local rows = { ("a"):rep(129), "has space", 'quote"', "new\tline", "" }
    local seen = {}
    for _, bad in ipairs(rows) do
      local r = testing.request(app, "GET", "/", { headers = { ["X-Request-Id"] = bad } })
      assert.not_equal(bad, r.body)
      assert.is_truthy(r.body:match("^%x+%-%d+$"), r.body)
      assert.equal(r.body, r.headers["x-request-id"])
      assert.is_nil(seen[r.body])
      seen[r.body] = true
    end
  end)

  it("puts the id into every log line of the request, the error line included", function()
    local app, lines = app_with_log()
    testing.request(app, "GET", "/", { headers = { ["X-Request-Id"] = "req-1" } })
    testing.request(app, "GET", "/fail", { headers = { ["X-Request-Id"] = "req-2" } })
    assert.equal(3, #lines)
    assert.same({ "first", "req-1", 1 }, { lines[1].msg, lines[1].request_id, lines[1].n })
    assert.same({ "second", "req-1" }, { lines[2].msg, lines[2].request_id })
    assert.same({ "handler failed", "req-2" }, { lines[3].msg, lines[3].request_id })
  end)

  it("keeps two interleaved requests' ids apart over a real socket", function()
    local app, lines = app_with_log({ header = "X-Correlation-Id", max_length = 8 })
    local srv = testing.serve(app)
    local hs = require "spec.support.http_script"
    local a = hs.spawn(function(out)
      return ("curl -s -H 'X-Correlation-Id: aaaa' %s > %s.t; mv %s.t %s"):format(srv:url("/"), out, out, out)
    end)
    local b = hs.spawn(function(out)
      return ("curl -s -H 'X-Correlation-Id: bbbb' %s > %s.t; mv %s.t %s"):format(srv:url("/"), out, out, out)
    end)
    assert.is_true(testing.run_until(function() return a() and b() end, 15))
    srv:close()
    assert.equal("aaaa", a())
    assert.equal("bbbb", b())
    local by_id = {}
    for _, l in ipairs(lines) do by_id[l.request_id] = (by_id[l.request_id] or 0) + 1 end
    assert.same({ aaaa = 2, bbbb = 2 }, by_id)
  end)

  it("uses a generator when given and raises on misuse", function()
    local app = app_with_log({ generate = function() return "gen-1" end })
    assert.equal("gen-1", testing.request(app, "GET", "/").body)
    assert.is_false(pcall(request_id, { header = "Bad Header" }))
    assert.is_false(pcall(request_id, { max_length = 0 }))
    assert.is_false(pcall(request_id, { generate = "x" }))
  end)
end)
