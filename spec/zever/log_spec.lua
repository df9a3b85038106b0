local log = require "zever.log"
local json = require "zever.json"

local function capture()
  local lines = {}
  return { write = function(_, s) lines[#lines + 1] = s end }, lines
end

describe("zever.log", function()
  it("writes text lines with sorted fields", function()
    local out, lines = capture()
    local l = log.new({ out = out })
    l:info("listening", { port = 8080, addr = "127.0.0.1" })
    assert.are.equal(1, #lines)
    assert.is_truthy(lines[1]:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ INFO listening addr=127.0.0.1 port=8080\n$"))
  end)

  it("quotes text values with spaces and escapes newlines", function()
    local out, lines = capture()
    log.new({ out = out }):warn("x", { msg = "a b\nc" })
    assert.is_truthy(lines[1]:find('msg="a b\\nc"', 1, true), lines[1])
    assert.is_nil(lines[1]:sub(1, -2):find("\n"))
  end)

  it("writes one JSON object per line", function()
    local out, lines = capture()
    log.new({ out = out, format = "json" }):error("failed", { path = "/a/b", n = 3 })
    local entry = json.decode(lines[1])
    assert.are.equal("error", entry.level)
    assert.are.equal("failed", entry.msg)
    assert.are.equal("/a/b", entry.path)
    assert.are.equal(3, entry.n)
  end)

  it("drops entries below the level", function()
    local out, lines = capture()
    local l = log.new({ out = out, level = "warn" })
    l:info("quiet")
    l:debug("quieter")
    l:warn("loud")
    assert.are.equal(1, #lines)
    assert.is_true(l:enabled("error"))
    assert.is_false(l:enabled("info"))
  end)

  it("raises on an unknown format or level", function()
    assert.has_error(function() log.new({ format = "xml" }) end, 'log format must be "text" or "json"')
    assert.has_error(function() log.new({ level = "loud" }) end, "unknown log level loud")
  end)
end)
