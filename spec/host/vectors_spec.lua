-- zever.vectors_core: the dense float32 set and its top-k cosine scan, through the binding.

local core = require "zever.vectors_core"
local ffi = require "ffi"

local function floats(t)
  local buf = ffi.new("float[?]", #t, t)
  return ffi.string(buf, #t * 4)
end

local function build(rows)
  local s = core.new(#rows[1])
  for i, r in ipairs(rows) do assert(s:put(i - 1, floats(r))) end
  return s
end

local function slots(hits)
  local out = {}
  for i, h in ipairs(hits) do out[i] = h[1] end
  return out
end

describe("zever.vectors_core", function()
  describe("query", function()
    -- { name, rows, query, k, expected slots best first }
    local rows = {
      { "ranks by cosine, not by length", { { 10, 0 }, { 1, 1 }, { 0.1, 0 } }, { 1, 0 }, 3,
        { 0, 2, 1 } },
      { "keeps only k rows", { { 1, 0 }, { 0, 1 }, { 1, 1 }, { -1, 0 } }, { 1, 0.2 }, 2, { 0, 2 } },
      { "clamps k to the row count", { { 1, 0 }, { 0, 1 } }, { 0, 1 }, 10, { 1, 0 } },
      { "breaks ties by the lower slot", { { 1, 1 }, { 2, 2 }, { 3, 3 }, { 4, 4 } }, { 1, 1 }, 2,
        { 0, 1 } },
      { "scores a zero row 0", { { 0, 0 }, { -1, 0 } }, { 1, 0 }, 2, { 0, 1 } },
      { "scores every row 0 for a zero query", { { 1, 0 }, { 0, 1 }, { 1, 1 } }, { 0, 0 }, 2,
        { 0, 1 } },
      { "answers k = 0 with nothing", { { 1, 0 } }, { 1, 0 }, 0, {} },
    }
    for _, row in ipairs(rows) do
      it(row[1], function()
        local s = build(row[2])
        assert.are.same(row[5], slots(s:query(floats(row[3]), row[4])))
        s:free()
      end)
    end

    it("matches a brute-force scan over 1000 rows of dimension 37 (tail lanes)", function()
      local dim, n, seed = 37, 1000, 1
      local function r()
        seed = (seed * 16807) % 2147483647
        return seed / 2147483647 - 0.5
      end
      local data, s = {}, core.new(dim)
      for i = 1, n do
        local v = {}
        for j = 1, dim do v[j] = r() end
        data[i] = ffi.new("float[?]", dim, v)
        s:put(i - 1, ffi.string(data[i], dim * 4))
      end
      local q = {}
      for j = 1, dim do q[j] = r() end
      local qf = ffi.new("float[?]", dim, q)
      local ref = {}
      for i = 1, n do
        local d, a, b = 0, 0, 0
        for j = 0, dim - 1 do
          d, a, b = d + qf[j] * data[i][j], a + qf[j] ^ 2, b + data[i][j] ^ 2
        end
        ref[i] = { i - 1, d / math.sqrt(a * b) }
      end
      table.sort(ref, function(x, y) return x[2] > y[2] end)
      local hits = s:query(ffi.string(qf, dim * 4), 20)
      for i = 1, 20 do
        assert.are.equal(ref[i][1], hits[i][1])
        assert.is_true(math.abs(ref[i][2] - hits[i][2]) < 1e-5)
      end
      s:free()
    end)
  end)

  describe("put and remove", function()
    it("moves the last row into a removed slot", function()
      local s = build{ { 1, 0 }, { 0, 1 }, { -1, 0 } }
      assert.is_true(s:remove(0))
      assert.are.equal(2, s:count())
      assert.are.same({ 0, 1 }, slots(s:query(floats{ -1, 0 }, 2)))
      s:free()
    end)

    it("answers RANGE for a slot past the end", function()
      local s = build{ { 1, 0 } }
      local ok, _, code = s:put(5, floats{ 1, 1 })
      assert.are.same({ nil, "RANGE" }, { ok, code })
      assert.are.equal("RANGE", select(3, s:remove(1)))
      s:free()
    end)

    it("raises on a float string of the wrong size and after free", function()
      local s = build{ { 1, 0 } }
      assert.has_error(function() s:put(0, floats{ 1, 2, 3 }) end)
      s:free()
      assert.has_error(function() s:count() end)
    end)

    it("grows past its first capacity and keeps every row", function()
      local s = core.new(3)
      for i = 0, 999 do s:put(i, floats{ 0, 1, i == 999 and 1 or 0 }) end
      assert.are.equal(1000, s:count())
      assert.are.same({ 999, 0 }, slots(s:query(floats{ 0, 0, 1 }, 2)))
      s:free()
    end)
  end)
end)
