-- zever fmt: the command run through the real binary on files in a temporary folder.

local process = require "spec.support.process"
local format = require "dsl.format"

local MESSY = "entity Task { id: uuid @primary  title: string }\n\n\n\nenum Priority { low, high }\n"
local CLEAN = "// A user.\nentity User {\n  id: uuid @primary\n}\n"
local BROKEN = "entity Bad { x: int32 ; y: }\n"

local function sh(dir, args)
  return process.run("cd " .. process.quote(dir) .. " && " .. process.quote(require("zever.sys").exe())
    .. " fmt " .. args)
end

describe("zever fmt", function()
  local dir

  local function write(name, text)
    local f = assert(io.open(dir .. "/" .. name, "wb"))
    f:write(text)
    f:close()
  end

  local function read(name)
    local f = assert(io.open(dir .. "/" .. name, "rb"))
    local s = f:read("*a")
    f:close()
    return s
  end

  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p '" .. dir .. "/schema/tasks'"))
    write("schema/tasks/task.zen", MESSY)
    write("schema/user.zen", CLEAN)
  end)

  after_each(function()
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("prints every file under schema/ formatted to stdout by default and changes nothing", function()
    local r = sh(dir, "")
    assert.are.equal(0, r.code, r.stderr)
    -- Sorted by path: schema/tasks/task.zen comes before schema/user.zen.
    assert.are.equal(assert(format.format(MESSY)) .. assert(format.format(CLEAN)), r.stdout)
    assert.are.equal("", r.stderr)
    assert.are.equal(MESSY, read("schema/tasks/task.zen"))
  end)

  it("prints one file given by path", function()
    local r = sh(dir, "schema/tasks/task.zen")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("entity Task {\n  id: uuid @primary\n  title: string\n}\n\nenum Priority {\n  low\n  high\n}\n",
      r.stdout)
  end)

  it("lists only the files whose formatting differs with -l and exits 0", function()
    local r = sh(dir, "-l schema")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("schema/tasks/task.zen\n", r.stdout)
    assert.are.equal(MESSY, read("schema/tasks/task.zen"))
  end)

  it("rewrites the files that differ with --write, after which -l lists nothing", function()
    local r = sh(dir, "--write")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("", r.stdout)
    assert.are.equal(format.format(MESSY), read("schema/tasks/task.zen"))
    assert.are.equal(CLEAN, read("schema/user.zen"))
    r = sh(dir, "-l")
    assert.are.equal(0, r.code)
    assert.are.equal("", r.stdout)
  end)

  it("lists and rewrites with -l --write together", function()
    local r = sh(dir, "-l --write schema")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("schema/tasks/task.zen\n", r.stdout)
    assert.are.equal(format.format(MESSY), read("schema/tasks/task.zen"))
  end)

  it("lists the files that differ with --check and exits 1, then 0 once they are formatted", function()
    local r = sh(dir, "--check")
    assert.are.equal(1, r.code)
    assert.are.equal("schema/tasks/task.zen\n", r.stdout)
    assert.are.equal("zever fmt: 1 file is not formatted (zever fmt --write formats them)\n", r.stderr)
    assert.are.equal(MESSY, read("schema/tasks/task.zen"))
    r = sh(dir, "--check --json")
    assert.are.equal(1, r.code)
    assert.are.same({ { file = "schema/tasks/task.zen", differs = true }, { file = "schema/user.zen", differs = false } },
      require("zever.json").decode(r.stdout))
    assert.are.equal(0, sh(dir, "--write").code)
    r = sh(dir, "--check")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("", r.stdout .. r.stderr)
  end)

  it("refuses --check with --write (exit 2, nothing written)", function()
    local r = sh(dir, "--check --write")
    assert.are.equal(2, r.code)
    assert.is_truthy(r.stderr:find("--check and --write: choose one", 1, true))
    assert.are.equal(MESSY, read("schema/tasks/task.zen"))
  end)

  it("refuses a file that does not lex or parse, with diagnostics and exit 1, and still does the rest", function()
    write("schema/bad.zen", BROKEN)
    local r = sh(dir, "--write")
    assert.are.equal(1, r.code)
    assert.is_truthy(r.stderr:find('schema/bad.zen:1:23: [lex] illegal character U+003B ";"', 1, true))
    assert.is_truthy(r.stderr:find("schema/bad.zen:1:28: [parse] expected a type", 1, true))
    assert.is_truthy(r.stderr:find("zever fmt: schema/bad.zen: 2 syntax errors, not formatted", 1, true))
    assert.are.equal(BROKEN, read("schema/bad.zen"))
    assert.are.equal(format.format(MESSY), read("schema/tasks/task.zen"))
  end)

  it("exits 1 for a missing file and for a folder without .zen files", function()
    local r = sh(dir, "nothere.zen")
    assert.are.equal(1, r.code)
    assert.is_truthy(r.stderr:find("nothere.zen", 1, true))
    assert(os.execute("mkdir -p '" .. dir .. "/empty'"))
    r = sh(dir, "empty")
    assert.are.equal(1, r.code)
    assert.is_truthy(r.stderr:find("no .zen files found in empty", 1, true))
  end)

  it("exits 2 for an unknown flag", function()
    local r = sh(dir, "-w")
    assert.are.equal(2, r.code)
    assert.is_truthy(r.stderr:find('unknown flag "-w" for "fmt"', 1, true))
  end)
end)
