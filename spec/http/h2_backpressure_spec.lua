-- HTTP/2 streams are counted apart from connections, and a streamed response over HTTP/2 waits
-- for the client's flow-control window (docs/http2.md "Streaming and back-pressure"). An app
-- served on this state's loop with h2c (zever.server, h2 = true), read by real clients: h2load
-- (Debian nghttp2-client) and spec/support/h2_slow_reader.py (raw frames, a small window given
-- back only as it reads). Time only bounds how long a spec waits.

local zever = require "zever"
local server = require "zever.server"
local stream = require "zever.stream"
local sched = require "zever.sched"
local loop = require "zever.loop"
local testing = require "zever.testing"
local hs = require "spec.support.http_script"
local process = require "spec.support.process"

local run_until, q = testing.run_until, process.quote
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "spec/http"
local READER = here .. "/../support/h2_slow_reader.py"

local function have(cmd)
  return os.execute("command -v " .. cmd .. " >/dev/null 2>&1") == 0
end

describe("HTTP/2 streams and back-pressure", function()
  local srv, before

  before_each(function()
    before = #loop.handles()
  end)

  after_each(function()
    if srv then srv:close() end
    srv = nil
    assert.is_true(testing.settle(before, 10), "handles left open")
  end)

  local function serve(build, limits)
    local app = zever.app()
    build(app)
    srv = assert(server.listen(app, { host = "127.0.0.1", port = 0, h2 = true,
      limits = limits }))
    return srv:port()
  end

  it("counts the streams of one connection apart: 1 socket, 20 streams in flight", function()
    if not have("h2load") then pending("h2load is not installed (nghttp2-client)") return end
    local N = 20
    local waiting, seen = {}, nil
    -- Each stream waits until all N run at once; the last one takes the stats and wakes them.
    -- max_connections 1: the limit counts sockets, so one socket's 20 streams are all served.
    local port = serve(function(app)
      app:get("/hold", function()
        local token = sched.token()
        waiting[#waiting + 1] = token
        if #waiting == N then
          seen = srv:stats()
          local list = waiting
          waiting = {}
          loop.after(0, function()
            for _, t in ipairs(list) do sched.complete(t) end
          end)
        end
        sched.await(token)
        return "held"
      end)
    end, { max_connections = 1 })
    local read = hs.spawn(function(out)
      return ("h2load -n %d -c 1 -m %d http://127.0.0.1:%d/hold > %s.tmp 2>&1; mv %s.tmp %s")
        :format(N, N, port, q(out), q(out), q(out))
    end)
    assert.is_true(run_until(read, 30), "h2load did not finish")
    local out = read()
    assert.is_truthy(out:find(N .. " total, " .. N .. " started, " .. N .. " done, " .. N ..
      " succeeded, 0 failed", 1, true), out)
    assert.is_truthy(seen, "the streams never ran all at once")
    assert.are.equal(1, seen.connections)
    assert.are.equal(N, seen.streams)
    -- Once they are answered and the client gone, nothing is counted.
    assert.is_true(run_until(function()
      local st = srv:stats()
      return st.connections == 0 and st.streams == 0
    end, 10))
    assert.are.equal(0, srv:stats().stream_pending_bytes)
  end)

  -- /big writes BLOCKS blocks of 64 KiB (block i: "%07d\n" % i, 8192 times: what the reader
  -- checks) with res:write, recording the most response bytes HTTP/2 held at once.
  local BLOCK = 64 * 1024
  local function big_app(state)
    return function(app)
      app:get("/big", function(_, res)
        for i = 0, state.blocks - 1 do
          local ok, err = res:write(string.rep(string.format("%07d\n", i), BLOCK / 8))
          local held = srv:stats().stream_pending_bytes
          if held > state.peak then state.peak = held end
          if not ok then
            state.result = err.code
            return
          end
        end
        state.result = "done"
      end)
    end
  end

  local function reader(port, blocks, stop_after, stall)
    return hs.python(function()
      return { READER, port, "/big", blocks, stop_after or "", stall and "stall" or "" }
    end, true)
  end

  it("a handler writing 64 MiB to a slow reader waits for its window: bounded, whole, in order",
    function()
      local state = { blocks = 1024, peak = 0 }
      local port = serve(big_app(state))
      local read = reader(port, state.blocks)
      assert.is_true(run_until(read, 120), "the reader did not finish")
      local out = read()
      assert.are.equal("bytes=67108864 ok=yes end=yes reset=no goaway=no", out:match("[^\n]*"),
        out)
      assert.are.equal("done", state.result)
      -- The writer waited while the client's window held its bytes back: never more than the
      -- high mark plus one write were held (64 MiB without back-pressure).
      assert.is_true(state.peak > 0)
      assert.is_true(state.peak <= stream.HIGH + BLOCK, "peak held bytes " .. state.peak)
      assert.is_true(run_until(function() return srv:stats().streams == 0 end, 10))
      assert.are.equal(0, srv:stats().stream_pending_bytes)
    end)

  it("a reader that goes away mid-stream ends the waiting writer with 'closed'", function()
    local state = { blocks = 1024, peak = 0 }
    local port = serve(big_app(state))
    local read = reader(port, state.blocks, 1024 * 1024)
    assert.is_true(run_until(read, 60), "the reader did not finish")
    assert.is_truthy(read():find("ok=no end=no", 1, true), read())
    assert.is_true(run_until(function() return state.result ~= nil end, 10))
    assert.are.equal("closed", state.result)
    assert.is_true(state.peak <= stream.HIGH + BLOCK, "peak held bytes " .. state.peak)
    assert.is_true(run_until(function()
      local st = srv:stats()
      return st.streams == 0 and st.connections == 0
    end, 10))
    assert.are.equal(0, srv:stats().stream_pending_bytes)
  end)

  it("a stream whose client stops giving window is reset after write_timeout", function()
    local state = { blocks = 1024, peak = 0 }
    local port = serve(big_app(state), { write_timeout = 1 })
    local read = reader(port, state.blocks, 512 * 1024, true)
    assert.is_true(run_until(read, 60), "the reader did not finish")
    -- The server reset the stream (the client never closed it); the waiting writer was told.
    assert.is_truthy(read():find("ok=no end=no reset=yes", 1, true), read())
    assert.is_true(run_until(function() return state.result ~= nil end, 10))
    assert.are.equal("closed", state.result)
    assert.are.equal(1, srv:stats().write_timeouts)
    assert.is_true(run_until(function()
      local st = srv:stats()
      return st.streams == 0 and st.connections == 0
    end, 10))
    assert.are.equal(0, srv:stats().stream_pending_bytes)
  end)
end)
