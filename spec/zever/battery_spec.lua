-- zever.battery (the front-end skeleton) and the parts of zever.errors the kit adds: the C core
-- codes by name, the one mapping from core codes to battery codes, adopt and binding.

local battery = require "zever.battery"
local errors = require "zever.errors"
local sys = require "zever.sys"

-- An adapter that records its close calls; stats like a memory adapter's.
local function impl(close_result, close_err)
  local t = { closes = 0 }
  function t.close(self)
    self.closes = self.closes + 1
    return close_result, close_err
  end
  function t.stats() return { entries = 3 } end
  return t
end

describe("zever.battery", function()
  local Thing = battery.define("thing", "the thing is closed")
  function Thing:get(key)
    battery.string(key, "thing:get", "key")
    if self.closed then return nil, Thing.CLOSED end
    return self.impl[key]
  end

  it("declares the closed error and errors of the battery", function()
    assert.is_true(errors.is(Thing.CLOSED, "closed"))
    assert.are.equal("thing: closed: the thing is closed", tostring(Thing.CLOSED))
    local e = Thing.error("invalid", "bad key", { field = "key" })
    assert.are.same({ "thing", "invalid", "bad key", "key" }, { e.battery, e.code, e.message, e.field })
  end)

  it("closes the adapter once and answers closed afterwards", function()
    local a = impl(true)
    local t = battery.object(Thing, a, { extra = 1 })
    assert.are.equal(1, t.extra)
    assert.is_true(t:close())
    assert.is_true(t:close())
    assert.are.equal(1, a.closes)
    local v, err = t:get("k")
    assert.is_nil(v)
    assert.are.equal(Thing.CLOSED, err)
  end)

  it("returns the adapter's close failure, and true when the adapter has no close", function()
    local failing = battery.object(Thing, impl(nil, Thing.error("unavailable", "gone")))
    local ok, err = failing:close()
    assert.is_nil(ok)
    assert.are.equal("unavailable", err.code)
    assert.is_true(battery.object(Thing, {}):close())
  end)

  it("merges the adapter's stats and the object's counters into a fresh table", function()
    local t = battery.object(Thing, impl(true), { counters = { fired = 2 } })
    assert.are.same({ battery = "thing", closed = false, entries = 3, fired = 2 }, t:stats())
    assert.are_not.equal(t:stats(), t:stats())
  end)

  it("raises with the caller blamed on misuse", function()
    local t = battery.object(Thing, {})
    local ok, msg = pcall(function() t:get(1) end)
    assert.is_false(ok)
    assert.is_truthy(msg:find("battery_spec.lua:%d+: thing:get: key must be a string"), msg)
    assert.has_error(function() battery.object(Thing, "x") end, nil)
  end)

  it("checks seconds, counts and option tables with their messages", function()
    local function fails(f) local ok, m = pcall(f) return not ok and (m:gsub("^[^:]*:%d+: ", "")) end
    local rows = {
      { function() return battery.seconds(nil, 7, "f", "ttl") end, 7 },
      { function() return battery.seconds(0, 7, "f", "ttl") end, 0 },
      { function() return battery.seconds(1 / 0, 7, "f", "ttl") end, 1 / 0 },
      { function() return battery.count(nil, 10, "f", "limit", 1) end, 10 },
      { function() return battery.count(3, 10, "f", "limit", 1) end, 3 },
      -- Duration strings, in the units and ISO 8601 formats configuration durations use.
      { function() return battery.seconds("10s", 7, "f", "ttl") end, 10 },
      { function() return battery.seconds("1h30m", 7, "f", "ttl") end, 5400 },
      { function() return battery.seconds("1.5s", 7, "f", "ttl", true) end, 1.5 },
      { function() return battery.seconds("PT30S", 7, "f", "ttl") end, 30 },
      { function() return battery.seconds("P1D", 7, "f", "ttl") end, 86400 },
    }
    for i, r in ipairs(rows) do assert.are.equal(r[2], r[1](), "row " .. i) end
    local bad = {
      { function() battery.seconds(-1, 7, "f", "ttl") end, "f: ttl must be a number of seconds >= 0" },
      { function() battery.seconds(0, 7, "f", "ttl", true) end,
        "f: ttl must be a positive number of seconds" },
      { function() battery.seconds(1 / 0, 7, "f", "ttl", true, true) end,
        "f: ttl must be a positive number of seconds" },
      { function() battery.seconds(0 / 0, 7, "f", "ttl") end, "f: ttl must be a number of seconds >= 0" },
      { function() battery.count(1.5, 1, "f", "limit", 1) end, "f: limit must be an integer >= 1" },
      -- A bare number in a string is not taken as nanoseconds (the nano format) nor as seconds.
      { function() battery.seconds("30", 7, "f", "ttl") end,
        'f: ttl: invalid duration "30": want units or iso8601' },
      { function() battery.seconds("soon", 7, "f", "ttl") end,
        'f: ttl: invalid duration "soon": want units or iso8601' },
      { function() battery.seconds("-5s", 7, "f", "ttl") end, "f: ttl must be a number of seconds >= 0" },
      { function() battery.seconds("0s", 7, "f", "ttl", true) end,
        "f: ttl must be a positive number of seconds" },
      { function() battery.opt_table(1, "f", "opts") end, "f: opts must be a table" },
    }
    for i, r in ipairs(bad) do assert.are.equal(r[2], fails(r[1]), "bad row " .. i) end
  end)

  it("builds the default adapter through new and re-raises its misuse at the caller", function()
    local made = battery.default(function(i, o) return { i = i, o = o } end,
      "adapters.limiter.memory", "thing.new", { name = "spec:battery:default", rate = 1, burst = 1 })
    assert.are.equal(1, made.i.rate)
    assert.has_error(function() battery.default(error, "adapters.limiter.memory", "thing.new", 1) end,
      "thing.new: opts must be a table")
  end)
end)

describe("zever.errors and the C core", function()
  it("exports every code of ZV_ERRNO_MAP by name, as zever.sys.E", function()
    local names = {}
    for name, rc in pairs(errors.E) do
      names[#names + 1] = name
      assert.is_true(rc < 0, name)
      assert.are.equal(rc, sys.E[name])
    end
    table.sort(names)
    assert.are.same({ "CONFLICT", "INVAL", "IO", "NOMEM", "NOTFOUND", "RANGE", "SYNTAX", "TOOLONG" },
      names)
    assert.are.equal("input too long", sys.strerror(errors.E.TOOLONG))
  end)

  it("maps each core code, by number or by name, to one battery code", function()
    local rows = {
      { "NOMEM", "unavailable" }, { "INVAL", "invalid" }, { "RANGE", "invalid" },
      { "TOOLONG", "invalid" }, { "CONFLICT", "conflict" }, { "NOTFOUND", "not_found" },
      { "SYNTAX", "invalid" }, { "IO", "unavailable" },
    }
    for _, r in ipairs(rows) do
      local by_number = errors.core("cache", errors.E[r[1]])
      local by_name = errors.core("cache", r[1], "custom")
      assert.are.same({ r[2], "cache", r[1] }, { by_number.code, by_number.battery, by_number.core })
      assert.are.equal(sys.strerror(errors.E[r[1]]), by_number.message)
      assert.are.same({ r[2], "custom" }, { by_name.code, by_name.message })
    end
    assert.has_error(function() errors.core("cache", 42) end, "errors.core: not a core error code: 42")
  end)

  it("adopts another failure keeping its code, and turns a binding's kind into an error", function()
    local e = errors.adopt("jobs", { code = "busy", message = "database is locked" })
    assert.are.same({ "jobs", "busy", "database is locked" }, { e.battery, e.code, e.message })
    assert.are.equal("unavailable", errors.adopt("jobs", "socket closed").code)
    local b = errors.binding("mailer", "rejected", "550 no such user")
    assert.are.equal("mailer: 550 no such user", tostring(b))
    assert.are.same({ "rejected", "550 no such user" }, { b.code, b.detail })
  end)
end)
