-- zever.http under deep pipelining: a client writes one slow request and thousands of fast ones
-- in a single burst, so the connection's buffer fills while the first answer waits, reading
-- stops, and it must resume once the answers go out: every response arrives, in order.

local loop = require "zever.loop"
local http = require "zever.http"
local testing = require "zever.testing"
local hs = require "spec.support.http_script"
local run_until = testing.run_until

local here = debug.getinfo(1, "S").source:sub(2):match("^(.*)/[^/]*$") or "."
local CLIENT = here .. "/../support/pipeline_client.py"

describe("zever.http pipelining", function()
  for _, n in ipairs({ 300, 3000 }) do
    it("answers " .. n .. " pipelined requests behind a slow one, in order", function()
      local before = #loop.handles()
      local srv = assert(http.listen({ port = 0 }, function(req, _, path)
        if path == "/slow" then
          loop.after(0.1, function() req:respond(200, "slow") end)
        else
          req:respond(200, path)
        end
      end))
      local read = hs.python(function(out) return { CLIENT, srv:port(), n, out } end)
      assert.is_true(run_until(read, 20))
      local content = read()
      srv:close()
      -- The client hangs up after writing its file: the connection is gone once the loop sees it.
      assert.is_true(testing.settle(before, 20), table.concat(loop.handles(), ","))
      assert.matches("^HTTP/1.1 200 OK\r\n.-\r\n\r\nslow", content)
      local i = 0
      for body in content:gmatch("\r\n\r\n(/fast/%d+)") do
        assert.are.equal("/fast/" .. i, body)
        i = i + 1
      end
      assert.are.equal(n, i)
    end)
  end
end)
