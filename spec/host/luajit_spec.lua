-- spec/host/luajit_spec.lua: the LuaJIT the host is built with. zever links OpenResty's branch
-- (Debian's luajit2 packages, `make deps`): Debian's own luajit is a 2.1 snapshot of
-- 2022-03-20, two weeks older than the x64 fix of LuaJIT issue #829. There, a compiled next() /
-- pairs() loop could move the 64-bit pointer lj_vm_next returns through a 32-bit xchg, and the
-- trace then read through the cut pointer: the SIGSEGVs of sessions 9 (dsl/ir.lua's dump) and
-- 12 (a JSON encoder, then a CI seed of the whole suite). The exchange needs a register shuffle
-- that no small program forces, so the first row checks which LuaJIT is linked, by the builtins
-- only OpenResty's branch has; the second runs compiled pairs() loops over tables of GC objects
-- and checks every value that comes back.
local traces = require "spec.support.traces"

describe("the host's LuaJIT", function()
  it("is OpenResty's branch (table.isempty and table.nkeys are builtins)", function()
    local ok_empty, isempty = pcall(require, "table.isempty")
    local ok_nkeys, nkeys = pcall(require, "table.nkeys")
    assert.is_true(ok_empty, "table.isempty: " .. tostring(isempty))
    assert.is_true(ok_nkeys, "table.nkeys: " .. tostring(nkeys))
    assert.is_true(isempty({}))
    assert.are.equal(3, nkeys({ a = 1, b = 2, 3 }))
    assert.is_truthy(jit.status())
  end)

  it("compiles pairs() loops over tables of tables and strings and gets every value back", function()
    local rows = {}
    for i = 1, 50 do
      local row = {}
      for j = 1, 12 do row["k" .. j] = { n = j, s = ("v%d_%d"):format(i, j) } end
      rows[i] = row
    end
    local want = 0
    for i = 1, 50 do
      for j = 1, 12 do want = want + j + #("v%d_%d"):format(i, j) + #("k" .. j) end
    end
    local function walk()
      local sum, count = 0, 0
      for i = 1, #rows do
        for k, v in pairs(rows[i]) do
          sum = sum + v.n + #v.s + #k
          count = count + 1
        end
      end
      return sum, count
    end
    local sums = {}
    local t = traces.run(function()
      for r = 1, 40 do sums[r] = { walk() } end
    end, { eager = true })
    assert.is_true(traces.looped(t, "luajit_spec.lua"), traces.describe(t))
    for r = 1, 40 do
      assert.are.same({ want, 600 }, sums[r])
    end
  end)
end)
