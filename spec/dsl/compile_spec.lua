local compile = require "dsl.compile"
local parser = require "dsl.parser"
local files = require "spec.support.files"

-- A module of two files, one with a resolver error (an unknown type), so that a result has
-- diagnostics to compare.
local SCHEMA = {
  ["schema/shop/a.zen"] = "// An item.\nentity Item {\n  id: uuid @primary\n  name: string\n}\n",
  ["schema/shop/b.zen"] = "entity Order {\n  id: uuid @primary\n  item: Itme\n}\n",
}

-- The diagnostics of a result as text, one a line.
local function diag_lines(result)
  local out = {}
  for _, d in ipairs(result.diags) do
    out[#out + 1] = string.format("%s:%d:%d %s %s", d.file, d.line, d.col, d.severity, d.message)
  end
  return table.concat(out, "\n")
end

describe("dsl.compile", function()
  describe("compile with opts.brief", function()
    local dir, parse, limit
    -- Whether the collector ran during each parse of the last compile.
    local running

    before_each(function()
      dir = files.tmpdir(SCHEMA, "zever-compile")
      parse, limit = parser.parse, compile.PAUSE_LIMIT
      running = {}
      parser.parse = function(...)
        running[#running + 1] = collectgarbage("isrunning")
        return parse(...)
      end
    end)

    after_each(function()
      parser.parse, compile.PAUSE_LIMIT = parse, limit
      collectgarbage("restart")
      files.rm_rf(dir)
    end)

    it("pauses the collector while it compiles and runs it again after", function()
      local result = assert(compile.compile({ dir .. "/schema" }, { brief = true }))
      assert.are.same({ false, false }, running)
      assert.is_true(collectgarbage("isrunning"))
      assert.are.equal(1, result.errors)
    end)

    it("gives the result a compile without it gives", function()
      local brief = assert(compile.compile({ dir .. "/schema" }, { brief = true }))
      local plain = assert(compile.compile({ dir .. "/schema" }))
      assert.are.same({ false, false, true, true }, running)
      assert.are.equal(diag_lines(plain), diag_lines(brief))
      assert.matches("unknown type Itme", diag_lines(brief), 1, true)
      assert.are.same(plain.files, brief.files)
    end)

    it("leaves the collector running for sources over PAUSE_LIMIT bytes", function()
      compile.PAUSE_LIMIT = #SCHEMA["schema/shop/a.zen"] -- under the two files' total
      assert(compile.compile({ dir .. "/schema" }, { brief = true }))
      assert.are.same({ true, true }, running)
    end)

    it("leaves a collector the caller stopped stopped", function()
      collectgarbage("stop")
      assert(compile.compile({ dir .. "/schema" }, { brief = true }))
      assert.is_false(collectgarbage("isrunning"))
    end)

    it("runs the collector again when the compile raises", function()
      parser.parse = function() error("parser bug") end
      assert.has_error(function() compile.compile({ dir .. "/schema" }, { brief = true }) end,
        "parser bug")
      assert.is_true(collectgarbage("isrunning"))
    end)
  end)
end)
