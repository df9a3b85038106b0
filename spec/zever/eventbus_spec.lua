-- zever.eventbus with the memory adapter (in-process): the conformance suite, the pattern
-- compiler's golden rows, and the container.

local eventbus = require "zever.eventbus"
local memory = require "adapters.eventbus.memory"

describe("adapters.eventbus.memory", function()
  require("spec.conformance.eventbus")("memory", function(opts)
    return eventbus.wrap(memory.new{}, opts)
  end)

  -- { pattern, expected Lua pattern (nil: exact match, false: invalid) }
  local rows = {
    { "orders", nil }, { "orders.created", nil }, { "orders.*", "^orders%.[^.]+$" },
    { "*.created", "^[^.]+%.created$" }, { "orders.>", "^orders%..+$" }, { ">", "^.+$" },
    { "a-b.*", "^a%-b%.[^.]+$" }, { "a.>.b", false }, { "a*", false }, { "", false },
  }
  for _, row in ipairs(rows) do
    it("compiles the pattern '" .. row[1] .. "'", function()
      assert.are.equal(row[2], eventbus.compile(row[1]))
    end)
  end

  it("never runs a handler inside publish: subscribers get the loop's next turn", function()
    local bus = eventbus.wrap(memory.new{})
    local got = 0
    assert(bus:subscribe("now", function() got = got + 1 end))
    for _ = 1, 3 do assert(bus:publish("now", 1)) end
    assert.are.equal(0, got)
    require("zever.sched").sleep(0)
    assert.are.equal(3, got)
    bus:close()
  end)

  it("is app.eventbus, in-process by default", function()
    local zever = require "zever"
    local app = zever.app()
    local got
    assert(app.eventbus:subscribe("app.spec", function(m) got = m end))
    assert(app.eventbus:publish("app.spec", "hi"))
    zever.sleep(0.01)
    assert.are.equal("hi", got)
    assert.are.same({ "inproc", "memory", "postgres", "redis" },
      require("zever.adapters").names("eventbus"))
  end)
end)
