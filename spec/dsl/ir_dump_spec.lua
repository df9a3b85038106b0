-- dsl.ir.dump runs interpreted: Debian's LuaJIT (2.1.0~beta3+git20220320, GC64) compiled its
-- pairs() loop into a trace that moved lj_vm_next's pointer result through a 32-bit xchg, and
-- the test process died of SIGSEGV (session 9's CI). dump_node is jit.off'd; this spec makes
-- every loop hot at once and checks that no trace is recorded in dump_node while a whole IR
-- is dumped (with the jit.off removed it records the loop of dump_node at line 89).

local compile = require "dsl.compile"
local ir = require "dsl.ir"
local traces = require "spec.support.traces"
local fs = require "spec.support.files"

describe("dsl.ir dump", function()
  it("runs interpreted: no trace is recorded in dump_node", function()
    local src = assert(fs.slurp("dsl/testdata/go_reference.zen"))
    local r = compile.compile_sources({ ["schema/app/s.zen"] = src }, { "schema/app/s.zen" })
    assert.are.equal(0, r.errors)
    local text
    local t = traces.run(function()
      for _ = 1, 20 do text = ir.dump(r.ir) end
    end, { eager = true })
    assert.is_true(#text > 1000)
    -- dump_node's lines: from its definition to the end that closes it.
    local first, last, n = nil, nil, 0
    for line in assert(io.open("dsl/ir.lua")):lines() do
      n = n + 1
      if line:find("^local function dump_node") then first = n end
      if first and not last and n > first and line == "end" then last = n end
    end
    assert(first and last, "dump_node not found in dsl/ir.lua")
    local function inside(at)
      local l = tonumber(at:match("ir%.lua:(%d+)$"))
      return l ~= nil and l >= first and l <= last
    end
    for _, s in ipairs(t.stops) do assert.is_false(inside(s.at), "a trace at " .. s.at) end
    for _, a in ipairs(t.aborts) do assert.is_false(inside(a.at), "a trace recorded at " .. a.at) end
  end)
end)
