-- zever.json: the flat-object fast path writes exactly what cjson writes.
local json = require "zever.json"
local cjson = require("cjson").new()

local function reference(v)
  return (cjson.encode(v):gsub("\\/", "/"))
end

describe("zever.json", function()
  describe("encode", function()
    local rows = {
      { "an integer", { id = 42 }, '{"id":42}' },
      { "a negative integer", { n = -7 }, '{"n":-7}' },
      { "the largest integer cjson prints in full", { n = 99999999999999 }, '{"n":99999999999999}' },
      { "an integer cjson prints with an exponent", { n = 123456789012345 }, nil },
      { "a fraction", { x = 1.5 }, '{"x":1.5}' },
      { "negative zero", { z = -0.0 }, '{"z":-0}' },
      { "a string with a slash", { p = "/a/b" }, '{"p":"/a/b"}' },
      { "a string with a quote", { q = 'a"b' }, '{"q":"a\\"b"}' },
      { "a string with DEL", { d = "x\127y" }, '{"d":"x\\u007fy"}' },
      { "a control byte in a key", { ["k\1"] = 1 }, '{"k\\u0001":1}' },
      { "booleans and null", { t = true }, '{"t":true}' },
      { "null", { n = json.null }, '{"n":null}' },
      { "a nested table", { a = { 1, 2 } }, '{"a":[1,2]}' },
      { "an empty table", {}, "{}" },
      { "an array", { 1, 2, 3 }, "[1,2,3]" },
    }
    for _, row in ipairs(rows) do
      it("writes " .. row[1] .. " as cjson does", function()
        local got = json.encode(row[2])
        assert.equal(reference(row[2]), got)
        if row[3] then assert.equal(row[3], got) end
      end)
    end

    it("writes an object of several keys in cjson's key order", function()
      local t = {}
      for i = 1, 40 do t["k" .. i] = i % 3 == 0 and ("v" .. i) or i end
      assert.equal(reference(t), json.encode(t))
    end)

    it("raises as cjson does on an infinite number", function()
      assert.has_error(function() json.encode({ x = math.huge }) end)
    end)
  end)
end)
