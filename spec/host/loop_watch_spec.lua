-- zever.loop.watch: libuv fs events (inotify) on a folder: a write names the entry, stop()
-- ends the calls, a path that cannot be watched is nil and a message.

local loop = require "zever.loop"
local fs = require "spec.support.files"
local process = require "spec.support.process"

describe("zever.loop.watch", function()
  local dir
  before_each(function() dir = fs.tmpdir() end)
  after_each(function() os.execute("rm -rf " .. process.quote(dir)) end)

  -- Runs the loop until fn() is true or 5 s passed (a guard timer), never a fixed sleep.
  local function run_until(fn)
    local guard = loop.after(5, function() loop.stop() end)
    local poll = loop.every(0.01, function() if fn() then loop.stop() end end)
    loop.run()
    guard:stop()
    poll:stop()
  end

  it("calls fn with the entry's name when a file in the folder changes", function()
    local got = {}
    local h = assert(loop.watch(dir, function(name, event) got[#got + 1] = { name, event } end))
    local w = loop.after(0.02, function() fs.write(dir .. "/a.lua", "x") end)
    run_until(function() return #got > 0 end)
    h:stop()
    w:stop()
    assert.are.equal("a.lua", got[1][1])
    assert.is_truthy(got[1][2] == "change" or got[1][2] == "rename", got[1][2])
    assert.is_false(h:active())
  end)

  it("makes no call after stop()", function()
    local calls = 0
    local h = assert(loop.watch(dir, function() calls = calls + 1 end))
    h:stop()
    fs.write(dir .. "/b.lua", "x")
    local done = false
    loop.after(0.05, function() done = true end)
    run_until(function() return done end)
    assert.are.equal(0, calls)
  end)

  it("returns nil and a message for a path that does not exist", function()
    local h, err = loop.watch(dir .. "/missing", function() end)
    assert.is_nil(h)
    assert.matches("missing: no such file or directory", err, 1, true)
    assert.has_error(function() loop.watch(dir) end)
  end)
end)
