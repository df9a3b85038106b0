-- zever.cli.app's app loader: what a command runs once (the app's load, its configuration) runs
-- interpreted, and the JIT is as it was afterwards (on for the command's own work).

local cliapp = require "zever.cli.app"
local files = require "spec.support.files"
local jit = require "jit"

describe("zever.cli.app", function()
  local dir

  before_each(function()
    dir = files.tmpdir({
      -- The app records whether the JIT was on while it loaded.
      ["app.lua"] = 'local app = require("zever").app()\n' ..
        'app.jit_at_load = (require("jit").status())\n' ..
        'app:get("/x", function() return "x" end)\nreturn app\n',
    }, "zever-cliapp")
  end)

  after_each(function()
    jit.on()
    files.rm_rf(dir)
  end)

  describe("load", function()
    it("loads the app with the JIT off and turns it back on", function()
      jit.on()
      local app = cliapp.load({ dir = dir, file = dir .. "/app.lua" })
      assert.is_false(app.jit_at_load)
      assert.is_true((jit.status()))
      assert.are.equal(1, #app:list_routes())
    end)

    it("leaves the JIT off when it was off", function()
      jit.off()
      cliapp.load({ dir = dir, file = dir .. "/app.lua" })
      assert.is_false((jit.status()))
    end)

    it("raises the load's error with the JIT back on", function()
      files.write(dir .. "/broken.lua", "local x = (\n")
      jit.on()
      assert.has_error(function() cliapp.load({ dir = dir, file = dir .. "/broken.lua" }) end)
      assert.is_true((jit.status()))
    end)
  end)

  describe("interpreted", function()
    it("returns pcall's results with the JIT off inside", function()
      jit.on()
      local ok, on, a = cliapp.interpreted(function() return (jit.status()), "a" end)
      assert.is_true(ok)
      assert.is_false(on)
      assert.are.equal("a", a)
      local failed, err = cliapp.interpreted(error, "boom", 0)
      assert.is_false(failed)
      assert.are.equal("boom", err)
      assert.is_true((jit.status()))
    end)
  end)
end)
