-- WebSocket endpoints (app:websocket: zever.websocket over zever.http's upgrade and the frame
-- core host/http/ws.c) against an independent client: Debian's python3-websockets, plus raw frames
-- it would never send (spec/support/ws_client.py). The app is served on this state's loop;
-- time only bounds how long a spec waits.

local zever = require "zever"
local server = require "zever.server"
local hs = require "spec.support.http_script"
local process = require "spec.support.process"
local run_until = require("zever.testing").run_until

local q = process.quote
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "spec/host"
local CLIENT = here .. "/../support/ws_client.py"

local srv, port, left, silent
local function serve(opts)
  local app = zever.app()
  app.log = require("zever.log").new({ out = { write = function() end } })
  app:websocket("/echo", function(ws)
    while true do
      local msg, kind = ws:recv()
      if not msg then return end
      assert(ws:send(msg, kind))
    end
  end)
  app:websocket("/small", function(ws) ws:recv() end, { max_frame = 1024, max_message = 1024 })
  -- "N SIZE": N messages of SIZE bytes sent in a row from a timer (outside the connection's
  -- read), then a close with 4000.
  app:websocket("/burst", function(ws)
    local n, size = assert(ws:recv()):match("^(%d+) (%d+)$")
    zever.sleep(0.01)
    for i = 0, tonumber(n) - 1 do
      local m = i .. ":"
      assert(ws:send(m .. ("x"):rep(tonumber(size) - #m)))
    end
    ws:close(4000, "done")
  end)
  app:websocket("/watch", function(ws)
    local _, err = ws:recv()
    left = err
  end)
  app:websocket("/silent", function(ws)
    local _, err = ws:recv()
    silent = err
  end, { ping_interval = 0.1 })
  app:websocket("/zecho", function(ws)
    while true do
      local msg, kind = ws:recv()
      if not msg then return end
      assert(ws:send(msg, kind))
    end
  end, { deflate = true })
  srv = assert(server.listen(app, { host = "127.0.0.1", port = 0,
    access_log = opts and opts.access_log }))
  port = srv:port()
end

-- Runs the client's scenarios; returns { name = result }.
local function scenarios(...)
  local names = { ... }
  local read = hs.python(function(out) return { CLIENT, port, out, unpack(names) } end)
  assert(run_until(read, 90), "the websocket client did not finish")
  local out = {}
  for name, result in read():gmatch("([%w_]+)\t([^\n]*)\n") do out[name] = result end
  return out
end

describe("zever.websocket", function()
  before_each(serve)
  after_each(function()
    srv:close()
    require("zever.loop").run("nowait")
  end)

  it("echoes text and binary messages to python3-websockets", function()
    local r = scenarios("echo_text", "echo_binary")
    assert.are.same({ echo_text = "ok", echo_binary = "ok" }, r)
  end)

  it("logs the upgrade as 101 in the access log", function()
    srv:close()
    serve({ access_log = true })
    local lines, stderr = {}, io.stderr
    rawset(io, "stderr", { write = function(_, line) lines[#lines + 1] = line end })
    local ok, r = pcall(scenarios, "echo_text")
    rawset(io, "stderr", stderr)
    assert(ok, r)
    assert.are.same({ echo_text = "ok" }, r)
    assert.matches("^GET /echo 101 ", table.concat(lines))
  end)

  it("echoes 16 MiB binary and text messages", function()
    assert.are.same({ echo_16mib = "ok" }, scenarios("echo_16mib"))
  end)

  it("joins fragmented messages", function()
    assert.are.same({ fragmented = "ok" }, scenarios("fragmented"))
  end)

  it("delivers messages sent in a row outside the connection's read whole and in order, "
    .. "then its close (collected for the end of the loop pass, or sent past 16 KiB)", function()
    assert.are.same({ burst_small = "ok 4000", burst_big = "ok 4000" },
      scenarios("burst_small", "burst_big"))
  end)

  it("answers pings and completes the close handshake with the client's code", function()
    assert.are.same({ ping = "ok", close = "1000" }, scenarios("ping", "close"))
  end)

  it("negotiates permessage-deflate with python3-websockets and echoes compressed messages",
    function()
      local r = scenarios("deflate_echo", "deflate_none", "deflate_no_takeover")
      assert.are.equal("ok deflate remote_no_takeover=False local_no_takeover=False " ..
        "remote_bits=15", r.deflate_echo)
      assert.are.equal("ok none", r.deflate_none)
      assert.are.equal("ok deflate remote_no_takeover=True local_no_takeover=True " ..
        "remote_bits=15", r.deflate_no_takeover)
    end)

  it("honours server_max_window_bits and declines an offer of 8 bits (not a failed handshake)",
    function()
      local r = scenarios("deflate_window", "deflate_decline8")
      assert.are.equal("ok deflate remote_no_takeover=False local_no_takeover=False " ..
        "remote_bits=10", r.deflate_window)
      assert.are.equal("ok none", r.deflate_decline8)
    end)

  it("deflates what it sends above the threshold, plain below", function()
    assert.are.same({ deflate_out = "rsv1=1 len<1000=True same=True; rsv1=0 short" },
      scenarios("deflate_out"))
  end)

  it("echoes compressed 16 MiB messages", function()
    assert.are.same({ deflate_16mib = "ok deflate remote_no_takeover=False " ..
      "local_no_takeover=False remote_bits=15" }, scenarios("deflate_16mib"))
  end)

  it("closes with 1009 on a zip bomb (64 MiB inflated past max_message) and 1007 on corrupt data",
    function()
      assert.are.same({ deflate_bomb = "1009", deflate_corrupt = "1007" },
        scenarios("deflate_bomb", "deflate_corrupt"))
    end)

  it("declines permessage-deflate on a route without deflate and goes on uncompressed", function()
    assert.are.same({ extensions = "none" }, scenarios("extensions"))
  end)

  it("closes with 1007 on invalid UTF-8, 1002 on an unmasked frame, 1009 when too big",
    function()
      assert.are.same({ invalid_utf8 = "1007", unmasked = "1002", oversized = "1009" },
        scenarios("invalid_utf8", "unmasked", "oversized"))
    end)

  it("ends recv with a closed error (1006) when the client drops the connection", function()
    left = nil
    assert.are.same({ leave = "left" }, scenarios("leave"))
    assert.is_true(run_until(function() return left ~= nil end, 10))
    assert.are.equal("closed", left.code)
    assert.are.equal(1006, left.close_code)
  end)

  it("pings a quiet connection and drops a client that never answers, ending its recv",
    function()
      silent = nil
      local r = scenarios("silent")
      assert.is_truthy(r.silent == "eof" or r.silent == "reset", r.silent)
      assert.is_true(run_until(function() return silent ~= nil end, 10))
      assert.are.equal("closed", silent.code)
      assert.are.equal(1006, silent.close_code)
    end)

  it("answers 426 to a request without the upgrade and to another version", function()
    local out = hs.curl("-i " .. q(("http://127.0.0.1:%d/echo"):format(port)))
    assert.matches("^HTTP/1.1 426 ", out)
    assert.matches("\r\nUpgrade: websocket\r\n", out)
    out = hs.curl("-i -H 'Upgrade: websocket' -H 'Connection: Upgrade' " ..
      "-H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' -H 'Sec-WebSocket-Version: 8' " ..
      q(("http://127.0.0.1:%d/echo"):format(port)))
    assert.matches("^HTTP/1.1 426 ", out)
    assert.matches("\r\nSec%-WebSocket%-Version: 13\r\n", out)
  end)
end)
