-- spec/zever/spec_hygiene_spec.lua: rules for the specs themselves that no spec run shows.
-- busted keeps one `finally` per test (a second call replaces the first), so a test that
-- registers two runs only the last: session 13 found four, which left a bundle's server
-- running, temporary folders and a pool open after each run. Such a test uses
-- spec/support/defer.lua instead. The scan reads each spec file's tests (from an `it(` or a
-- hook to the next) and counts the calls of finally in each.
local files = require "spec.support.files"

local function opener(line)
  for _, name in ipairs { "it", "pending", "describe", "before_each", "after_each", "setup",
    "teardown", "lazy_setup", "strict_setup" } do
    if line:find("^%s*" .. name .. "%s*%(") then return true end
  end
  return false
end

-- The tests of one file's text that call finally more than once: { "file:line (n calls)" }.
local function doubles(name, text)
  local out, at, count, n = {}, nil, 0, 0
  local function close()
    if at and count > 1 then out[#out + 1] = ("%s:%d (%d calls)"):format(name, at, count) end
  end
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if opener(line) then
      close()
      at, count = n, 0
    end
    local code = line:gsub("%-%-.*$", "")
    for _ in code:gmatch("%f[%w_.:]finally%s*%(") do count = count + 1 end
  end
  close()
  return out
end

describe("the specs", function()
  it("finds a test that calls finally twice (the scan works)", function()
    local call = "fin" .. "ally(function() end)" -- split, or this file's own scan finds it
    local found = doubles("x_spec.lua", table.concat({
      'describe("x", function()',
      '  it("a", function()',
      "    " .. call,
      "    " .. call .. " -- the second replaces the first",
      '  end)',
      '  it("b", function()',
      "    " .. call,
      '  end)',
      'end)',
    }, "\n"))
    assert.are.same({ "x_spec.lua:2 (2 calls)" }, found)
  end)

  it("never call finally twice in one test", function()
    local list = files.sh("find spec examples -name '*_spec.lua' | sort")
    local bad, scanned = {}, 0
    for path in list:gmatch("[^\n]+") do
      scanned = scanned + 1
      for _, hit in ipairs(doubles(path, assert(files.slurp(path)))) do bad[#bad + 1] = hit end
    end
    assert.is_true(scanned > 100, "scanned " .. scanned .. " files")
    assert.are.same({}, bad)
  end)
end)
