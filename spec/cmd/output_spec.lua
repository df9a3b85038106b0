-- zever.cli.output (the declarations behind --json / --dry-run) and zever.cli.progress (the bar),
-- in process; the commands themselves run in cli_contract_spec and progress_spec.

local output = require "zever.cli.output"
local dispatch = require "cmd.zever"
local progress = require "zever.cli.progress"
local process = require "spec.support.process"
local fs = require "spec.support.files"
local sys = require "zever.sys"

describe("zever.cli.output", function()
  it("adds --json and --dry-run where declared, once, after the command's own flags", function()
    local own = { name = "app", arg = "PATH" }
    local cmd = { name = "x", flags = { own }, json = { "status" }, dry_run = true }
    local flags = dispatch.with_flags(cmd)
    assert.are.same({ "app", "json", "dry-run" }, { flags[1].name, flags[2].name, flags[3].name })
    assert.are.equal(3, #flags)
    cmd.flags = flags
    assert.are.equal(3, #dispatch.with_flags(cmd))
    assert.are.equal(1, #dispatch.with_flags({ name = "y", flags = { own }, json = false, dry_run = false }))
    -- A command with its own --json keeps it (no second one).
    local mine = { name = "json", summary = "mine" }
    local f2 = dispatch.with_flags({ name = "z", flags = { mine }, json = true, dry_run = false })
    assert.are.equal(1, #f2)
    assert.are.equal("mine", f2[1].summary)
  end)

  it("says when a flag does not apply to a subcommand", function()
    local cmd = { name = "migrate", json = { "status", "up" }, dry_run = { "up" } }
    assert.is_nil(dispatch.check(cmd, { json = true }, { "status" }))
    assert.is_nil(dispatch.check(cmd, { ["dry-run"] = true, json = true }, { "up" }))
    assert.are.equal('flag "--dry-run" does not apply to "migrate status" (only up)',
      dispatch.check(cmd, { ["dry-run"] = true }, { "status" }))
    assert.are.equal('flag "--json" does not apply to "migrate new" (only status, up)',
      dispatch.check(cmd, { json = true }, { "new" }))
    -- A command that declares nothing keeps its own flags (saga's --json, before it declares).
    assert.is_nil(dispatch.check({ name = "saga" }, { json = true, ["dry-run"] = true }, { "status" }))
    assert.is_true(dispatch.supports({ json = true }, "json", nil))
    assert.is_false(dispatch.supports({ json = false }, "json", "x"))
  end)

  it("renders a failure as one JSON object", function()
    local doc = require("zever.json").decode(output.error("jobs", 1, 'no "job" 7'))
    assert.are.same({ error = { command = "jobs", exit = 1, message = 'no "job" 7' } }, doc)
  end)
end)

describe("zever.cli.progress", function()
  local dir
  before_each(function() dir = fs.tmpdir() end)
  after_each(function() os.execute("rm -rf " .. process.quote(dir)) end)

  -- Runs a script drawing a bar (forced on or off) on stderr; returns what it wrote there.
  local function draw(force, env)
    fs.write(dir .. "/bar.lua", ([[
local bar = require("zever.cli.progress").new("copy", 4, { force = %s, width = 8 })
for i = 1, 4 do bar:step("f" .. i) end
bar:step("f4")
bar:finish()
io.stderr:write("END")
]]):format(tostring(force)))
    local r = process.run((env or "") .. " " .. process.quote(sys.exe()) .. " run " ..
      process.quote(dir .. "/bar.lua"))
    assert.are.equal(0, r.code, r.stderr)
    return r.stderr
  end

  it("draws each step in place, clears the line when done, and colours unless NO_COLOR", function()
    local err = draw(true, "NO_COLOR=")
    assert.matches("\r\27[Kcopy [\27[32m##\27[0m......]  25% 1/4  f1", err, 1, true)
    assert.matches("\r\27[Kcopy [\27[32m########\27[0m] 100% 4/4  f4", err, 1, true)
    assert.are.equal("\r\27[KEND", err:sub(-7))
    -- A redraw only when the percent or the label changes: the fifth step (past the total, same
    -- label) draws nothing.
    local _, n = err:gsub("100%%", "")
    assert.are.equal(1, n)
    err = draw(true, "NO_COLOR=1")
    assert.matches("copy [####....]  50% 2/4  f2", err, 1, true)
    assert.is_nil(err:find("\27[32m", 1, true))
  end)

  it("draws nothing when not forced and stderr is not a terminal", function()
    assert.are.equal("END", draw(nil))
    assert.are.equal("END", draw(false))
    assert.is_false(progress.new("x", 1, { fd = 2, force = false }).active)
  end)

  it("refuses a bad label or total", function()
    assert.has_error(function() progress.new(nil, 1) end, "progress.new: label must be a string")
    assert.has_error(function() progress.new("x", -1) end, "progress.new: total must be a number >= 0")
  end)
end)
