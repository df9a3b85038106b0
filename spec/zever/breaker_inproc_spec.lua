-- zever.breaker with the inproc adapter (host/breaker/, C memory shared by the worker threads of
-- a process): the conformance suite (fake clock), the sharing of one breaker by every open of a
-- name, and a `zever serve --workers 2` where one worker's failures open the circuit for both.

local breaker = require "zever.breaker"
local inproc = require "adapters.breaker.inproc"
local serve = require "spec.support.serve"

-- Breakers are process-wide by adapter name: each breakers object of this file gets its own.
local seq = 0
local function fresh_name()
  seq = seq + 1
  return ("spec-inproc-%d-%d"):format(seq, math.random(1e9))
end

describe("adapters.breaker.inproc", function()
  require("spec.conformance.breaker")("inproc", function(opts)
    return breaker.wrap(inproc.new{ name = fresh_name() }, opts)
  end)

  it("shares one breaker between every open of a name, whatever the later options", function()
    local name, t = fresh_name(), 0
    local clock = function() return t end
    local a = breaker.wrap(inproc.new{ name = name }, { clock = clock })
    local b = breaker.wrap(inproc.new{ name = name }, { clock = clock })
    local ca = a:get("shared", { window = 2, min_calls = 2, failure_rate = 1, open_for = 5 })
    local cb = b:get("shared", { window = 50, min_calls = 50 })   -- the first open's options win
    ca:call(function() return nil, "down" end)
    cb:call(function() return nil, "down" end)
    assert.are.equal("open", ca:state())
    assert.are.equal("open", cb:state())
    local r, err = cb:call(function() return "not called" end)
    assert.is_nil(r)
    assert.are.equal("open", err.code)
    assert.are.equal(5, err.retry_after)
    assert.are.equal(1, cb:stats().rejected)
    t = 5
    assert.are.equal("half_open", ca:state())
    a:close()
    b:close()
  end)

  it("refuses a name too long for the table with an invalid error", function()
    local b = breaker.wrap(inproc.new{ name = fresh_name() })
    local cb, err = b:get(("x"):rep(300))
    assert.is_nil(cb)
    assert.are.equal("invalid", err.code)
    b:close()
  end)

  describe("under zever serve with two workers", function()
    local dir, srv
    setup(function()
      dir = serve.temp_app([[
local zever = require "zever"
local app = zever.app()
local me = tostring({}):match("0x%x+")   -- one per worker: each has its own Lua state
app:get("/fail", function()
  local cb = assert(app.breaker:get("upstream", { window = 4, min_calls = 4, failure_rate = 1,
    open_for = 3600 }))
  local r, err = cb:call(function() return nil, "down" end)
  return { worker = me, refused = err ~= nil and err.code == "open" and r == nil }
end)
app:get("/state", function()
  local cb = assert(app.breaker:get("upstream", { window = 4, min_calls = 4, failure_rate = 1,
    open_for = 3600 }))
  return { worker = me, state = cb:state() }
end)
return app
]])
      srv = assert(serve.start(dir, { "--workers", "2", "--access-log", "off",
        "--listen", "127.0.0.1:" .. serve.free_port() },
        { BREAKER_ADAPTER = "inproc" }))
    end)
    teardown(function()
      if srv then srv:kill() end
      serve.remove(dir)
    end)

    local function get(path)
      -- A new connection each time, so the kernel spreads them over both workers.
      local r = srv:curl(path)
      assert.are.equal(0, r.code, r.stderr)
      return require("zever.json").decode(r.stdout)
    end

    it("opens the circuit for every worker on the failures of all of them", function()
      for _ = 1, 4 do get("/fail") end
      local seen, states = {}, {}
      for _ = 1, 200 do
        local r = get("/state")
        seen[r.worker] = true
        states[#states + 1] = r.state
        local n = 0
        for _ in pairs(seen) do n = n + 1 end
        if n >= 2 and #states >= 8 then break end
      end
      local workers = 0
      for _ in pairs(seen) do workers = workers + 1 end
      assert.are.equal(2, workers)
      for _, s in ipairs(states) do assert.are.equal("open", s) end
    end)
  end)
end)
