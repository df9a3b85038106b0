-- zever.cache_core: the classic binding of host/cache/ (the fallback path of the memory adapter
-- and its non-hot calls), driven with a fake clock in nanoseconds.

local core = require "zever.cache_core"

local serial = 0
local function open(max)
  serial = serial + 1
  return assert(core.open("spec:host:cache:" .. serial, max or 65536))
end

local S = 1e9

describe("zever.cache_core", function()
  -- { name, raw value, type }
  local rows = {
    { "a string", "abc", core.STRING },
    { "a JSON text", '{"a":1}', core.JSON },
    { "a number", 2.5, core.NUMBER },
    { "a boolean", false, core.BOOLEAN },
    { "a value over the stack buffer", ("y"):rep(3000), core.STRING },
  }
  for _, row in ipairs(rows) do
    it("stores and returns " .. row[1] .. " with its type", function()
      local h = open()
      assert.is_true(h:set("k", row[2], row[3], 0, 0, S))
      local raw, kind = h:get("k", S)
      assert.are.equal(row[2], raw)
      assert.are.equal(row[3], kind)
      h:release()
    end)
  end

  it("expires at the deadline, not before", function()
    local h = open()
    h:set("k", "v", core.STRING, 2 * S, 0, S)
    assert.are.equal("v", (h:get("k", 3 * S - 1)))
    assert.is_nil(h:get("k", 3 * S))
    h:release()
  end)

  it("answers CONFLICT to add on a live key and stores over an expired one", function()
    local h = open()
    assert.is_true(h:set("k", "a", core.STRING, S, 1, S))
    local ok, _, code = h:set("k", "b", core.STRING, 0, 1, S)
    assert.is_nil(ok)
    assert.are.equal("CONFLICT", code)
    assert.is_true(h:set("k", "c", core.STRING, 0, 1, 2 * S))
    assert.are.equal("c", (h:get("k", 2 * S)))
    h:release()
  end)

  it("increments numbers and refuses other types with INVAL", function()
    local h = open()
    assert.are.equal(3, h:incr("n", 3, 0, S))
    assert.are.equal(1, h:incr("n", -2, 0, S))
    h:set("s", "1", core.STRING, 0, 0, S)
    local v, _, code = h:incr("s", 1, 0, S)
    assert.is_nil(v)
    assert.are.equal("INVAL", code)
    h:release()
  end)

  it("charges overhead + key + value bytes and releases them on delete", function()
    local h = open()
    h:set("key", "value", core.STRING, 0, 0, S)
    assert.are.equal(core.OVERHEAD + 3 + 5, h:stats().bytes)
    assert.is_true(h:delete("key", S))
    assert.is_false(h:delete("key", S))
    assert.are.equal(0, h:stats().bytes)
    h:release()
  end)

  it("clears every entry", function()
    local h = open()
    for i = 1, 100 do h:set("k" .. i, i, core.NUMBER, 0, 0, S) end
    h:clear()
    assert.are.equal(0, h:stats().entries)
    assert.are.equal(0, h:stats().bytes)
    h:release()
  end)

  it("raises on a released handle", function()
    local h = open()
    h:release()
    assert.has_error(function() h:get("k") end)
  end)
end)
