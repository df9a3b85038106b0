-- req:header and req.id on zever.http's C request over a real socket (curl): a header sent once
-- is read through LuaJIT's FFI (zv_http_header_ffi), without the classic req:header call;
-- repeated headers, absent ones and other sources keep the classic answers. Responses with up to
-- four headers go out through zv_http_respond_ffi (zever.server), more through req:respond.

local zever = require "zever"
local testing = require "zever.testing"
local json = require "zever.json"
local hs = require "spec.support.http_script"

describe("req:header on a served request", function()
  local srv, classic, methods, original

  before_each(function()
    classic = 0
    local app = zever.app()
    app:get("/h", function(req)
      -- The C request's method table is shared by every request: count the classic calls
      -- (restored in after_each).
      if not methods then
        methods = getmetatable(req.source).__index
        original = methods.header
        methods.header = function(...)
          classic = classic + 1
          return original(...)
        end
      end
      return {
        one = req:header("X-One"), lower = req:header("x-one"), upper = req:header("X-ONE"),
        twice = req:header("X-Twice"), none = req:header("X-None") or "nil",
        empty = req:header("X-Empty"), id = req.id,
      }
    end)
    srv = testing.serve(app)
  end)

  after_each(function()
    if methods then methods.header = original end
    methods, original = nil, nil
    srv:close()
  end)

  it("answers single headers without the classic call, and repeated ones joined by it", function()
    local out = hs.curl(("-H 'X-One: v1' -H 'X-Twice: a' -H 'X-Twice: b' -H 'X-Empty;' " ..
      "-H 'X-Request-Id: rid-7' %s"):format(srv:url("/h")))
    local got = json.decode(out)
    assert.same({ one = "v1", lower = "v1", upper = "v1", twice = "a, b", none = "nil", empty = "",
      id = "rid-7" }, got)
    -- Only X-Twice (two lines of the name) went to the classic req:header.
    assert.are.equal(1, classic)
  end)

  it("makes an id when the request has none, without the classic call", function()
    local got = json.decode(hs.curl(srv:url("/h")))
    assert.matches("^%x+%-%d+$", got.id)
    assert.are.equal("nil", got.none)
    assert.are.equal(0, classic)
  end)

  it("leaves a table-backed source (zever.testing) to its own header method", function()
    local app = zever.app()
    app:get("/t", function(req) return req:header("X-T") or "none" end)
    assert.are.equal("x", testing.request(app, "GET", "/t", { headers = { ["X-T"] = "x" } }).body)
    assert.are.equal("none", testing.request(app, "GET", "/t").body)
  end)
end)

describe("the answer's headers on a served request", function()
  local srv, calls, methods, original

  before_each(function()
    calls = 0
    local app = zever.app()
    app:use(function(req, res, nxt)
      if not methods then
        methods = getmetatable(req.source).__index
        original = methods.respond
        methods.respond = function(...)
          calls = calls + 1
          return original(...)
        end
      end
      local n = tonumber(req.query.n)
      for i = 1, n do res:header("X-H" .. i, "v" .. i) end
      return nxt()
    end)
    app:get("/n", function() return "ok" end)
    srv = testing.serve(app)
  end)

  after_each(function()
    if methods then methods.respond = original end
    methods, original = nil, nil
    srv:close()
  end)

  -- n headers of the app's plus Content-Type: up to four in all through the FFI.
  local rows = { { 0, 0 }, { 1, 0 }, { 2, 0 }, { 3, 0 }, { 4, 1 }, { 6, 1 } }
  for _, row in ipairs(rows) do
    local n, classic = row[1], row[2]
    it(("sends %d headers of the app's and the content type, in order (%s)"):format(n,
      classic == 0 and "through the FFI" or "through req:respond"), function()
      local out = hs.curl("-i " .. srv:url("/n?n=" .. n))
      local names = {}
      for name, value in out:gmatch("\n(X%-H%d+): (%w+)\r") do
        names[#names + 1] = name .. "=" .. value
      end
      local want = {}
      for i = 1, n do want[i] = "X-H" .. i .. "=v" .. i end
      assert.same(want, names)
      assert.matches("\nContent%-Type: text/plain; charset=utf%-8\r\n", out)
      assert.matches("\r\n\r\nok$", out)
      assert.are.equal(classic, calls)
    end)
  end
end)
