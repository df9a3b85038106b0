-- zever.request.parse_query: the query string's rules (docs/app.md), as golden rows, and the
-- same rules checked on random strings against a reference written for clarity, not speed.
local request = require "zever.request"

-- The reference: split at "&" and ";" (empty pieces skipped), the first "=" separates key and
-- value, "+" is a space, %XX a byte, "k[]" collects a list, else the last value wins, an empty
-- key is dropped.
local function reference(qs)
  local out = {}
  if not qs then return out end
  for piece in qs:gmatch("[^&;]+") do
    local eq = piece:find("=", 1, true)
    local function dec(s) return (s:gsub("+", " "):gsub("%%(%x%x)", function(h)
      return string.char(tonumber(h, 16)) end)) end
    local k = dec(eq and piece:sub(1, eq - 1) or piece)
    local v = eq and dec(piece:sub(eq + 1)) or ""
    if k:sub(-2) == "[]" then
      k = k:sub(1, -3)
      if type(out[k]) ~= "table" then out[k] = {} end
      table.insert(out[k], v)
    elseif k ~= "" then
      out[k] = v
    end
  end
  return out
end

describe("zever.request", function()
  describe("parse_query", function()
    local rows = {
      { "nil", nil, {} },
      { "empty", "", {} },
      { "one pair", "queries=20", { queries = "20" } },
      { "two pairs", "a=1&b=2", { a = "1", b = "2" } },
      { "semicolon separates too", "a=1;b=2", { a = "1", b = "2" } },
      { "mixed separators", "a=1;b=2&c=3", { a = "1", b = "2", c = "3" } },
      { "plus is a space", "b=x+y", { b = "x y" } },
      { "percent bytes", "c=%41%42%zz", { c = "AB%zz" } },
      { "encoded separators stay in the value", "q=a%26b%3Dc%3Bd", { q = "a&b=c;d" } },
      { "encoded key", "a%20b=1", { ["a b"] = "1" } },
      { "no equals is empty", "flag&x=1", { flag = "", x = "1" } },
      { "equals in the value", "x=a=b", { x = "a=b" } },
      { "empty value", "x=", { x = "" } },
      { "empty key dropped", "=1&y=2", { y = "2" } },
      { "last wins", "a=1&a=2", { a = "2" } },
      { "brackets collect", "k[]=1&k[]=2", { k = { "1", "2" } } },
      { "empty pieces skipped", "&&a=1&;&b=2&", { a = "1", b = "2" } },
      { "an equals after a bare key belongs to a later pair", "a&b&c=3", { a = "", b = "", c = "3" } },
      { "only separators", "&;&", {} },
    }
    for _, row in ipairs(rows) do
      it("parses " .. row[1], function()
        assert.are.same(row[3], request.parse_query(row[2]))
      end)
    end

    it("agrees with the reference on random strings of separators, escapes and brackets", function()
      local alphabet = { "a", "b", "=", "&", ";", "+", "%", "4", "1", "[", "]", "%41", "%2B", "" }
      local rng = 12345
      local function rand(n) -- a small LCG: the rows are the same in every run
        rng = (rng * 1103515245 + 12345) % 2147483648
        return rng % n + 1
      end
      for _ = 1, 2000 do
        local parts = {}
        for j = 1, rand(12) do parts[j] = alphabet[rand(#alphabet)] end
        local qs = table.concat(parts)
        assert.are.same(reference(qs), request.parse_query(qs), qs)
      end
    end)

    it("decodes a long query string of many pairs", function()
      local parts = {}
      for i = 1, 500 do parts[i] = "k" .. i .. "=v" .. i end
      local q = request.parse_query(table.concat(parts, "&"))
      assert.are.equal("v1", q.k1)
      assert.are.equal("v500", q.k500)
    end)
  end)
end)
