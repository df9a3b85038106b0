-- zever.breaker with the memory adapter: the conformance suite (fake clock), then a breaker
-- around real HTTP calls (curl) to a flaky upstream served by zever itself.

local breaker = require "zever.breaker"
local memory = require "adapters.breaker.memory"

describe("adapters.breaker.memory", function()
  require("spec.conformance.breaker")("memory", function(opts)
    return breaker.wrap(memory.new(), opts)
  end)

  it("opens on a flaky upstream served by zever, and closes when it recovers", function()
    local zever = require "zever"
    local testing = require "zever.testing"
    local app = zever.app()
    app:get("/flaky", function(req, res)
      if req.query.down == "1" then return res:status(503):send("down") end
      return "up"
    end)
    local srv = testing.serve(app)
    local t = 0
    local cb = breaker.wrap(memory.new(), { clock = function() return t end })
      :get("upstream", { window = 5, min_calls = 5, failure_rate = 0.6, open_for = 10,
        half_open_calls = 1 })
    local fetched = 0
    local function fetch(down)
      return cb:call(function()
        fetched = fetched + 1
        local res = srv:fetch("GET", "/flaky?down=" .. down)
        if res.status >= 500 then return nil, "status " .. res.status end
        return res.body
      end)
    end
    assert.are.equal("up", fetch(0))
    assert.are.equal("up", fetch(0))
    for _ = 1, 3 do assert.are.equal("status 503", select(2, fetch(1))) end
    assert.are.equal("open", cb:state())
    local before = fetched
    assert.are.equal("open", select(2, fetch(1)).code)
    assert.are.equal(before, fetched)          -- refused without touching the upstream
    t = t + 10
    assert.are.equal("up", fetch(0))          -- the trial call
    assert.are.equal("closed", cb:state())
    srv:close()
  end)

  it("is app.breaker", function()
    local app = require("zever").app()
    local cb = assert(app.breaker:get("app-spec"))
    assert.are.equal("closed", cb:state())
  end)
end)
