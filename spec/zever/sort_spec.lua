-- zever.sort: compiled in-place sorts, checked against table.sort on lists of every small size
-- and on larger random ones (numbers, strings, duplicates, sorted and reversed input).

local sort = require "zever.sort"

-- A reproducible generator (no global math.random state): a 31-bit LCG.
local function rng(seed)
  local s = seed
  return function(n)
    s = (s * 1103515245 + 12345) % 2147483648
    return s % n + 1
  end
end

local function keys(list, k)
  local out = {}
  for i = 1, #list do out[i] = k and list[i][k] or list[i] end
  return out
end

local function inputs()
  local r = rng(20261202)
  local cases = {}
  for n = 0, 40 do
    local few, many = {}, {}
    for i = 1, n do
      few[i] = r(3) -- many duplicates
      many[i] = r(1000)
    end
    cases[#cases + 1] = few
    cases[#cases + 1] = many
  end
  for _, n in ipairs { 100, 257, 1000 } do
    local t, up, down = {}, {}, {}
    for i = 1, n do
      t[i] = r(10 * n)
      up[i], down[i] = i, n - i
    end
    cases[#cases + 1], cases[#cases + 1], cases[#cases + 1] = t, up, down
  end
  return cases
end

describe("zever.sort", function()
  describe("sort", function()
    it("orders numbers as table.sort does, at every size from 0 to 40 and beyond", function()
      for _, case in ipairs(inputs()) do
        local want = { unpack(case) }
        table.sort(want)
        local got = { unpack(case) }
        assert.are.equal(got, sort.sort(got))
        assert.are.same(want, got)
      end
    end)

    it("uses the comparator it is given", function()
      for _, case in ipairs(inputs()) do
        local want = { unpack(case) }
        table.sort(want, function(a, b) return a > b end)
        assert.are.same(want, sort.sort({ unpack(case) }, function(a, b) return a > b end))
      end
    end)

    it("orders strings bytewise, UTF-8 included", function()
      local t = { "b", "a", "フ", "Z", "", "ab", "<script>", "A" }
      local want = { unpack(t) }
      table.sort(want)
      assert.are.same(want, sort.sort(t))
    end)

    it("raises on misuse, naming the function", function()
      assert.has_error(function() sort.sort("x") end, "sort.sort: expects a list")
      assert.has_error(function() sort.sort({}, 1) end, "sort.sort: less must be a function")
    end)
  end)

  describe("by", function()
    it("orders rows by a field, ascending and descending", function()
      for _, case in ipairs(inputs()) do
        local rows = {}
        for i = 1, #case do rows[i] = { id = i, k = case[i] } end
        local want = { unpack(case) }
        table.sort(want)
        assert.are.same(want, keys(sort.by(rows, "k"), "k"))
        table.sort(want, function(a, b) return a > b end)
        assert.are.same(want, keys(sort.by(rows, "k", true), "k"))
      end
    end)

    it("sorts the TFB fortunes by message", function()
      local rows = {
        { id = 11, message = "<script>alert(\"x\");</script>" },
        { id = 4, message = "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1" },
        { id = 0, message = "Additional fortune added at request time." },
        { id = 12, message = "フレームワークのベンチマーク" },
        { id = 1, message = "fortune: No such file or directory" },
      }
      assert.are.same({ 11, 4, 0, 1, 12 }, keys(sort.by(rows, "message"), "id"))
    end)

    it("raises on a list whose keys cannot be compared", function()
      assert.has_error(function() sort.by({ { k = 1 }, { k = "a" } }, "k") end)
      assert.has_error(function() sort.by("x", "k") end, "sort.by: expects a list")
      assert.has_error(function() sort.by({}, nil) end, "sort.by: expects a key")
    end)
  end)
end)
