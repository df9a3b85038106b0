-- spec/zever/container_spec.lua: zever.container and the zever.adapters registry: lazy and
-- cached resolution, retry after failure, shared connections, close order, close timeouts and
-- a second close.

local container = require "zever.container"
local adapters = require "zever.adapters"
local config = require "zever.config"
local sched = require "zever.sched"

local BATTERIES = { "scheduler", "jobs", "mailer", "limiter", "cache", "queue", "db", "log" }

-- A config where every battery uses the "spec" adapter.
local function spec_config()
  local cfg = {}
  for _, b in ipairs(BATTERIES) do cfg[b] = { adapter = "spec", dsn = "spec:" .. b } end
  return cfg
end

describe("zever.container", function()
  local closed, made

  before_each(function()
    closed, made = {}, {}
    for _, b in ipairs(BATTERIES) do
      adapters.register(b, "spec", function(section)
        made[#made + 1] = b
        return { name = b, section = section, close = function() closed[#closed + 1] = b end }
      end)
    end
  end)

  after_each(function()
    for _, b in ipairs(BATTERIES) do adapters.unregister(b, "spec") end
    adapters.unregister("cache", "flaky")
    adapters.unregister("cache", "slow")
  end)

  describe("get", function()
    it("resolves a battery on first use, not before", function()
      local c = container.new(spec_config())
      assert.same({}, made)
      local cache = assert(c:get("cache"))
      assert.equal("cache", cache.name)
      assert.same({ "cache" }, made)
    end)

    it("caches a resolved battery", function()
      local c = container.new(spec_config())
      assert.equal(c:get("cache"), c:get("cache"))
      assert.same({ "cache" }, made)
    end)

    it("does not cache a failure: the next call retries", function()
      local calls = 0
      adapters.register("cache", "flaky", function()
        calls = calls + 1
        if calls == 1 then return nil, { code = "unavailable", message = "connection refused" } end
        return { ok = true }
      end)
      local cfg = spec_config()
      cfg.cache.adapter = "flaky"
      local c = container.new(cfg)
      local b, err = c:get("cache")
      assert.is_nil(b)
      assert.equal("unavailable", err.code)
      assert.equal("cache: connection refused", tostring(err))
      assert.is_true(assert(c:get("cache")).ok)
      assert.equal(2, calls)
    end)

    it("turns a raising factory into an error", function()
      adapters.register("cache", "flaky", function() error("boom", 0) end)
      local cfg = spec_config()
      cfg.cache.adapter = "flaky"
      local _, err = container.new(cfg):get("cache")
      assert.equal("cache: boom", err.message)
    end)

    it("names the known adapters and a did-you-mean for an unknown one", function()
      local cfg = spec_config()
      cfg.cache.adapter = "spex"
      local _, err = container.new(cfg):get("cache")
      local known = table.concat(adapters.names("cache"), ", ")
      assert.is_truthy(known:find("spec", 1, true))
      assert.equal('cache: unknown adapter "spex"; did you mean "spec"? (known: ' .. known .. ")",
        err.message)
      assert.equal("invalid", err.code)
    end)

    it("says so when a battery has no adapter at all", function()
      -- A battery of the spec's own, so that adapters landing later cannot change the answer.
      local _, err = container.new({ gizmo = { adapter = "db" } }):get("gizmo")
      assert.equal('gizmo: unknown adapter "db" (no gizmo adapter is registered)', err.message)
    end)

    it("never puts a secret of the config in an error", function()
      adapters.register("cache", "flaky", function(section)
        return nil, "cannot reach " .. section.url
      end)
      local cfg = spec_config()
      cfg.cache = { adapter = "flaky", url = "redis://:hunter2@10.0.0.1:6379/0" }
      local _, err = container.new(cfg):get("cache")
      assert.equal("cache: cannot reach redis://:[REDACTED]@10.0.0.1:6379/0", err.message)
    end)

    it("resolves the real sqlite db and log from a loaded config", function()
      local cfg = assert(config.load{ dir = "/nonexistent", env = { DB_DSN = "sqlite::memory:" } })
      adapters.unregister("db", "spec")
      adapters.unregister("log", "spec")
      local c = container.new(cfg)
      local db = assert(c:get("db"))
      assert.equal(1, db:first("SELECT 1 AS one").one)
      assert.truthy(c:get("log"))
      assert.is_true(c:close())
    end)
  end)

  describe("shared connections", function()
    it("opens one connection per key and closes it with the last user", function()
      local opened, shut = 0, 0
      adapters.register("cache", "flaky", function(section, ctx)
        return ctx:shared("spec", section.url, function()
          opened = opened + 1
          return { conn = true }
        end, function() shut = shut + 1 end)
      end)
      local cfg = { cache = { adapter = "flaky", url = "u1" } }
      local a, b = container.new(cfg), container.new(cfg)
      assert.equal(a:get("cache"), b:get("cache"))
      assert.equal(1, opened)
      assert.is_true(a:close())
      assert.equal(0, shut)
      assert.is_true(b:close())
      assert.equal(1, shut)
    end)
  end)

  describe("close", function()
    it("closes only what was resolved, dependents first", function()
      local c = container.new(spec_config())
      for _, b in ipairs({ "db", "log", "queue", "cache", "mailer", "jobs", "scheduler" }) do
        assert(c:get(b))
      end
      assert.is_true(c:close())
      assert.same({ "scheduler", "jobs", "mailer", "cache", "queue", "db", "log" }, closed)
    end)

    it("is a no-op the second time", function()
      local c = container.new(spec_config())
      assert(c:get("db"))
      assert.is_true(c:close())
      assert.is_true(c:close())
      assert.same({ "db" }, closed)
    end)

    it("refuses to resolve after close", function()
      local c = container.new(spec_config())
      c:close()
      local b, err = c:get("db")
      assert.is_nil(b)
      assert.equal("closed", err.code)
    end)

    it("collects every close error and returns them together", function()
      adapters.register("cache", "flaky", function()
        return { close = function() return nil, { code = "unavailable", message = "cache gone" } end }
      end)
      adapters.register("queue", "spec", function()
        return { close = function() error("queue exploded", 0) end }
      end)
      local cfg = spec_config()
      cfg.cache.adapter = "flaky"
      local c = container.new(cfg)
      assert(c:get("cache"))
      assert(c:get("queue"))
      assert(c:get("db"))
      local ok, errs = c:close()
      assert.is_nil(ok)
      assert.equal(2, #errs)
      -- same tier: the most recently resolved (queue) closes first
      assert.equal("queue: close failed: queue exploded\ncache: close failed: cache gone", tostring(errs))
      assert.same({ "db" }, closed)
    end)

    it("stops waiting for a close that yields past its timeout and goes on", function()
      local finished = false
      adapters.register("cache", "slow", function()
        return { close = function()
          sched.sleep(0.3)
          finished = true
        end }
      end)
      local cfg = spec_config()
      cfg.cache.adapter = "slow"
      local c = container.new(cfg, { close_timeout = 0.05 })
      assert(c:get("cache"))
      assert(c:get("db"))
      local ok, errs = c:close()
      assert.is_nil(ok)
      assert.equal("timeout", errs[1].code)
      assert.equal("cache: close did not finish within 50 ms", errs[1].message)
      assert.is_false(finished)
      assert.same({ "db" }, closed)
      sched.sleep(0.4)           -- let the abandoned close finish before the next spec
      assert.is_true(finished)
    end)

    it("waits for a close that yields and finishes in time", function()
      adapters.register("cache", "slow", function()
        return { close = function() sched.sleep(0.01) end }
      end)
      local cfg = spec_config()
      cfg.cache.adapter = "slow"
      local c = container.new(cfg, { close_timeout = 1 })
      assert(c:get("cache"))
      assert.is_true(c:close())
    end)

    it("reports a synchronous close that overran its timeout", function()
      local sys = require "zever.sys"
      adapters.register("cache", "slow", function()
        return { close = function()
          local t0 = sys.now()
          while sys.now() - t0 < 0.03 do end
        end }
      end)
      local cfg = spec_config()
      cfg.cache.adapter = "slow"
      local c = container.new(cfg, { close_timeout = 0.01 })
      assert(c:get("cache"))
      local ok, errs = c:close()
      assert.is_nil(ok)
      assert.equal("timeout", errs[1].code)
      assert.matches("^cache: close took %d+ ms, over its 10 ms timeout$", errs[1].message)
    end)

    it("closes inside a coroutine by yielding to the loop", function()
      adapters.register("cache", "slow", function()
        return { close = function() sched.sleep(0.01) end }
      end)
      local cfg = spec_config()
      cfg.cache.adapter = "slow"
      local c = container.new(cfg)
      assert(c:get("cache"))
      local result
      sched.spawn(function() result = { c:close() } end)
      assert.is_nil(result)
      sched.sleep(0.05)
      assert.same({ true }, result)
    end)
  end)
end)

describe("zever.adapters", function()
  it("raises when misused", function()
    assert.has_error(function() adapters.register("cache", "x") end,
      "adapters.register: factory must be a function")
  end)

  it("registers the built-in sqlite db adapter with a check", function()
    local entry = assert(adapters.get("db", "sqlite"))
    assert.is_function(entry.check)
  end)
end)
