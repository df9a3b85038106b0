-- zever.workflow with the redis store, against a real redis-server on a free loopback port: the
-- conformance suite, one script (EVALSHA) per recorded step and no command from the client that
-- grows with the number of steps (INFO commandstats), and app.workflow from the config.

local zever = require "zever"
local testing = require "zever.testing"
local workflow = require "zever.workflow"
local rwf = require "adapters.workflow.redis"
local redis = require "zever.redis"

describe("adapters.workflow.redis #redis", function()
  local srv = require("spec.support.redis_server").fixture()

  require("spec.conformance.workflow")("redis", function(jobs, opts)
    opts.jobs = jobs
    return workflow.wrap(assert(rwf.new{ url = srv.url, prefix = srv:prefix("conf") }), opts)
  end)

  local commandstats = require("spec.support.redis_server").commandstats

  it("records each step with one script: the round trips of a run grow by one per step", function()
    local t = testing.app(zever.app())
    local wf = workflow.wrap(assert(rwf.new{ url = srv.url, prefix = srv:prefix("rt") }),
      { jobs = t.app.jobs })
    wf:define("steps", function(ctx, input)
      for i = 1, input.n do ctx:step("s" .. i, function() return i end) end
      return input.n
    end)
    local c = assert(redis.connect(srv.url, { sync = true }))
    -- Warm up: the first call of each script may load it (NOSCRIPT, then EVAL).
    assert(wf:start("steps", { n = 1 }, "warm"))
    t:perform_jobs()
    local function delta(n, id)
      local before = commandstats(c)
      assert(wf:start("steps", { n = n }, id))
      t:perform_jobs()
      assert.equals("completed", wf:query(id, "status"))
      local after = commandstats(c)
      local d = {}
      for name, calls in pairs(after) do
        if name ~= "info" and calls ~= (before[name] or 0) then d[name] = calls - (before[name] or 0) end
      end
      return d
    end
    local d5, d10 = delta(5, "five"), delta(10, "ten")
    -- start (1 script) + the attempt: running, one per step, completed (scripts); the 2 query calls
    -- above are HGETALLs, read-only.
    assert.equals(1 + 1 + 5 + 1, d5.evalsha)
    assert.equals(5, d10.evalsha - d5.evalsha)
    local sources = (rwf.CREATE .. rwf.UPDATE .. rwf.RECORD .. rwf.SIGNAL):upper()
    for name, n in pairs(d10) do
      if name ~= "evalsha" and n ~= d5[name] then
        -- What grows with the steps runs inside a script, never from the client.
        assert.truthy(sources:find("'" .. name:upper() .. "'", 1, true), name)
      end
    end
    c:close()
    wf:close()
    t:close()
  end)

  it("resolves app.workflow from the config (WORKFLOW_ADAPTER=redis) and keeps runs on the server", function()
    local config = require "zever.config"
    local container = require "zever.container"
    local prefix = srv:prefix("container")
    local cfg = assert(config.load{ dir = "/nonexistent-zever-dir", env = {
      WORKFLOW_ADAPTER = "redis", REDIS_URL = srv.url, WORKFLOW_PREFIX = prefix,
      QUEUE_ADAPTER = "memory" } })
    local ctr = container.new(cfg)
    local wf = assert(ctr:get("workflow"))
    wf:define("w", function() return 1 end)
    assert.equals("r1", wf:start("w", {}, "r1"))
    local c = assert(redis.connect(srv.url, { sync = true }))
    assert.equals("pending", c:call("HGET", prefix .. "r:r1", "status"))
    assert.equals(1, c:call("ZCARD", prefix .. "st:pending"))
    c:close()
    assert.is_true(ctr:close())
    assert.equals("closed", select(2, wf:start("w", {})).code)
  end)

  it("raises unavailable when the server is gone (the job is retried)", function()
    local impl = assert(rwf.new{ url = "redis://127.0.0.1:1/0", timeout = 0.2 })
    local ok, err = pcall(impl.get, impl, "x")
    assert.is_false(ok)
    assert.equals("unavailable", err.code)
    impl:close()
  end)
end)
