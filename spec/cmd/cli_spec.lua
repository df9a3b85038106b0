local process = require "spec.support.process"
local sys = require "zever.sys"

local zever = process.zever

describe("zever", function()
  describe("help", function()
    it("lists every command with its summary", function()
      local r = zever("help")
      assert.are.equal(0, r.code)
      local dispatch = require "cmd.zever"
      local names = dispatch.names()
      assert.is_true(#names >= 4)
      for _, name in ipairs(names) do
        local summary = dispatch.load(name).summary
        assert.is_truthy(r.stdout:find("  " .. name:gsub("%p", "%%%0") .. " +" .. summary:gsub("%p", "%%%0")),
          name .. " is missing from help")
      end
    end)

    it("prints the same list for --help, -h and no arguments", function()
      local r = zever("help")
      assert.are.equal(r.stdout, zever("--help").stdout)
      assert.are.equal(r.stdout, zever("-h").stdout)
      assert.are.equal(r.stdout, zever().stdout)
    end)

    it("shows one command's usage and flags", function()
      local r = zever("help", "test")
      assert.are.equal(0, r.code)
      assert.is_truthy(r.stdout:find("Usage: zever test", 1, true))
      assert.is_truthy(r.stdout:find("--tags LIST", 1, true))
      assert.are.equal(r.stdout, zever("test", "--help").stdout)
    end)

    it("suggests a command when asked for help on an unknown one", function()
      local r = zever("help", "tset")
      assert.are.equal(2, r.code)
      assert.is_truthy(r.stderr:find('unknown command "tset". Did you mean "test"?', 1, true))
    end)
  end)

  describe("version", function()
    it("prints the version for --version and version", function()
      local r = zever("--version")
      assert.are.equal(0, r.code)
      assert.are.equal("zever " .. sys.version .. " (" .. jit.version .. ")\n", r.stdout)
      assert.are.equal(r.stdout, zever("version").stdout)
    end)

    it("prints JSON with --json", function()
      local r = zever("version", "--json")
      assert.are.equal(0, r.code)
      assert.are.equal(sys.version, require("cjson").decode(r.stdout).version)
    end)
  end)

  describe("dispatch", function()
    it("exits 2 and suggests the closest command for an unknown one", function()
      local r = zever("helo")
      assert.are.equal(2, r.code)
      assert.are.equal("", r.stdout)
      assert.are.equal('zever: unknown command "helo". Did you mean "help"?\n', r.stderr)
    end)

    it("suggests nothing when no command is close", function()
      local r = zever("xyzzyplugh")
      assert.are.equal(2, r.code)
      assert.are.equal('zever: unknown command "xyzzyplugh".\n', r.stderr)
    end)

    it("exits 2 and suggests the closest flag for an unknown one", function()
      local r = zever("test", "--tagz", "x")
      assert.are.equal(2, r.code)
      assert.are.equal('zever: unknown flag "--tagz" for "test". Did you mean "--tags"?\n', r.stderr)
    end)

    it("exits 2 for an unknown flag before any command", function()
      local r = zever("--verison")
      assert.are.equal(2, r.code)
      assert.is_truthy(r.stderr:find('Did you mean "--version"?', 1, true))
    end)

    it("exits 2 when a flag lacks its value", function()
      local r = zever("test", "--tags")
      assert.are.equal(2, r.code)
      assert.is_truthy(r.stderr:find('flag "--tags" of "test" needs a value', 1, true))
    end)

    it("exits 2 when a number flag gets something else", function()
      local r = zever("test", "--seed=abc")
      assert.are.equal(2, r.code)
      assert.is_truthy(r.stderr:find('wants a number, not "abc"', 1, true))
    end)

    it("exits 2 when a boolean flag gets a value", function()
      local r = zever("version", "--json=yes")
      assert.are.equal(2, r.code)
    end)

    it("works from any directory", function()
      local r = process.run("cd / && " .. process.quote(sys.exe()) .. " version")
      assert.are.equal(0, r.code)
    end)
  end)

  describe("run", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. process.quote(dir)) == 0)
    local function script(name, body)
      local path = dir .. "/" .. name
      local f = assert(io.open(path, "w"))
      f:write(body)
      f:close()
      return path
    end

    it("runs a script with arg set as luajit does and zever modules available", function()
      local path = script("args.lua", [[
        local text = require "zever.text"
        print(arg[0], arg[1], arg[2], #arg, select("#", ...), text.distance("a", "b"))]])
      local r = zever("run", path, "one", "--two")
      assert.are.equal(0, r.code)
      assert.are.equal(path .. "\tone\t--two\t2\t2\t1\n", r.stdout)
    end)

    it("exits with the code the script passes to os.exit", function()
      assert.are.equal(7, zever("run", script("exit.lua", "os.exit(7)")).code)
    end)

    it("exits 1 with a traceback when the script raises", function()
      local r = zever("run", script("boom.lua", "local function f() error('boom') end f()"))
      assert.are.equal(1, r.code)
      assert.is_truthy(r.stderr:find("boom.lua:1: boom", 1, true))
      assert.is_truthy(r.stderr:find("stack traceback", 1, true))
    end)

    it("exits 1 when the script does not load", function()
      local r = zever("run", script("bad.lua", "local = 1"))
      assert.are.equal(1, r.code)
      assert.is_truthy(r.stderr:find("bad.lua:1:", 1, true))
    end)

    it("exits 2 without a script", function()
      assert.are.equal(2, zever("run").code)
    end)
  end)

  describe("test", function()
    it("fails and counts the failure when a spec fails", function()
      local r = zever("test", "spec/fixtures/failing.lua")
      assert.are.equal(1, r.code)
      assert.is_truthy(r.stdout:find("FAIL spec/fixtures/failing.lua:4: x fails", 1, true))
      assert.is_truthy(r.stdout:find("\n1 passed, 1 failed, 1 skipped\n$"))
    end)

    it("counts a spec file that does not load as failed", function()
      local r = zever("test", "spec/fixtures/broken.lua")
      assert.are.equal(1, r.code)
      assert.is_truthy(r.stdout:find("\n0 passed, 1 failed\n$"))
    end)

    it("passes and ends with the summary line when every spec passes", function()
      local r = zever("test", "spec/fixtures/passing.lua")
      assert.are.equal(0, r.code)
      assert.is_truthy(r.stdout:find("\n2 passed, 0 failed\n$"))
    end)

    it("runs only the specs carrying a tag", function()
      local r = zever("test", "spec/fixtures/passing.lua", "--tags", "fast")
      assert.are.equal(0, r.code)
      assert.is_truthy(r.stdout:find("\n1 passed, 0 failed\n$"))
    end)

    it("fails when no spec ran", function()
      local r = zever("test", "spec/fixtures/passing.lua", "--tags", "nosuchtag")
      assert.are.equal(1, r.code)
      assert.is_truthy(r.stdout:find("\n0 passed, 0 failed\n$"))
    end)
  end)
end)
