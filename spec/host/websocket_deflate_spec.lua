-- permessage-deflate (RFC 7692) pieces without a socket: the handshake's negotiation
-- (zever.websocket.negotiate) and the lazy compress module's per-connection (de)compressor.

local websocket = require "zever.websocket"

local function settings(t) return websocket.deflate_settings(t or true) end

describe("zever.websocket.negotiate", function()
  it("accepts a plain offer and answers permessage-deflate alone", function()
    local ext, st = websocket.negotiate("permessage-deflate; client_max_window_bits", settings())
    assert.are.equal("permessage-deflate", ext)
    assert.are.same({ threshold = 256, level = 6, server_bits = 15, server_reset = false,
      client_reset = false }, st)
  end)

  it("echoes the no-context-takeover parameters and honours server_max_window_bits", function()
    local ext, st = websocket.negotiate("permessage-deflate; server_no_context_takeover; " ..
      "client_no_context_takeover; server_max_window_bits=10", settings())
    assert.are.equal("permessage-deflate; server_no_context_takeover; " ..
      "client_no_context_takeover; server_max_window_bits=10", ext)
    assert.is_true(st.server_reset)
    assert.is_true(st.client_reset)
    assert.are.equal(10, st.server_bits)
  end)

  it("takes a quoted value and the smaller of its own and the offered window", function()
    local ext, st = websocket.negotiate('permessage-deflate; server_max_window_bits="12"',
      settings{ window_bits = 11 })
    assert.are.equal("permessage-deflate; server_max_window_bits=11", ext)
    assert.are.equal(11, st.server_bits)
  end)

  it("says server_no_context_takeover itself when configured without context takeover", function()
    local ext, st = websocket.negotiate("permessage-deflate", settings{ context_takeover = false })
    assert.are.equal("permessage-deflate; server_no_context_takeover", ext)
    assert.is_true(st.server_reset)
  end)

  it("sends messages under 1 KiB plain when it compresses each alone, unless told a threshold",
    function()
      -- Compressed alone, small messages barely shrink and pay zlib's reset (BENCHMARKS.md).
      local _, st = websocket.negotiate("permessage-deflate; server_no_context_takeover",
        settings())
      assert.are.equal(websocket.ALONE_THRESHOLD, st.threshold)
      assert.are.equal(1024, st.threshold)
      _, st = websocket.negotiate("permessage-deflate", settings{ context_takeover = false })
      assert.are.equal(1024, st.threshold)
      -- With context takeover the default stays 256; a route's own threshold always holds.
      _, st = websocket.negotiate("permessage-deflate", settings())
      assert.are.equal(256, st.threshold)
      _, st = websocket.negotiate("permessage-deflate; server_no_context_takeover",
        settings{ threshold = 64 })
      assert.are.equal(64, st.threshold)
    end)

  it("declines what it cannot honour and takes the next offer", function()
    for _, bad in ipairs({
      "permessage-deflate; server_max_window_bits=8",       -- zlib has no 8-bit raw window
      "permessage-deflate; server_max_window_bits=16",
      "permessage-deflate; server_max_window_bits",          -- needs a value
      "permessage-deflate; server_max_window_bits=09",
      "permessage-deflate; client_max_window_bits=7",
      "permessage-deflate; server_no_context_takeover=1",
      "permessage-deflate; mystery",
      "permessage-deflate; client_no_context_takeover; client_no_context_takeover",
    }) do
      assert.is_nil(websocket.negotiate(bad, settings()), bad)
      local ext = websocket.negotiate("x-other, " .. bad .. ", permessage-deflate; " ..
        "client_max_window_bits=9", settings())
      assert.are.equal("permessage-deflate", ext, bad)
    end
  end)

  it("negotiates nothing without settings or an offer", function()
    assert.is_nil(websocket.negotiate("permessage-deflate", nil))
    assert.is_nil(websocket.negotiate(nil, settings()))
    assert.is_nil(websocket.negotiate("x-webkit-deflate-frame", settings()))
  end)

  it("raises on bad settings", function()
    assert.has_error(function() websocket.deflate_settings{ level = 0 } end)
    assert.has_error(function() websocket.deflate_settings{ window_bits = 8 } end)
    assert.has_error(function() websocket.deflate_settings{ threshold = "x" } end)
    assert.has_error(function() websocket.deflate_settings{ nope = 1 } end)
    assert.has_error(function() websocket.deflate_settings("yes") end)
  end)
end)

describe("zever.compress permessage-deflate state", function()
  local compress = require "zever.compress"

  it("round-trips messages with context takeover (later ones shrink) and without", function()
    local d, i = compress.pmd_deflater(15, 6), compress.pmd_inflater(15)
    local msg = ("the quick brown fox jumps over the lazy dog "):rep(3)
    local first = d:deflate(msg)
    local second = d:deflate(msg)
    assert.is_true(#second < #first)                       -- the window remembers the first
    assert.are.equal(msg, i:inflate(first, 1e6))
    assert.are.equal(msg, i:inflate(second, 1e6))
    local d2, i2 = compress.pmd_deflater(9, 1), compress.pmd_inflater(15)
    local a, b = d2:deflate(msg, true), d2:deflate(msg, true)
    assert.are.equal(a, b)                                 -- reset: each message alone
    assert.are.equal(msg, i2:inflate(b, 1e6, true))
    d:close(); i:close(); d2:close(); i2:close()
  end)

  it("stops inflating past the limit and says too_big; corrupt data is corrupt", function()
    local d, i = compress.pmd_deflater(15, 9), compress.pmd_inflater(15)
    local bomb = d:deflate(("\0"):rep(8 * 1024 * 1024))
    assert.is_true(#bomb < 16 * 1024)
    local out, err = i:inflate(bomb, 1024 * 1024)
    assert.is_nil(out)
    assert.are.equal("too_big", err)
    out, err = compress.pmd_inflater(15):inflate("\255\255\255\255 garbage", 1e6)
    assert.is_nil(out)
    assert.are.equal("corrupt", err)
  end)

  it("raises on a bad window or level and on a closed state", function()
    assert.has_error(function() compress.pmd_deflater(8, 6) end)
    assert.has_error(function() compress.pmd_deflater(15, 10) end)
    assert.has_error(function() compress.pmd_inflater(7) end)
    local d = compress.pmd_deflater(15, 6)
    d:close()
    assert.has_error(function() d:deflate("x") end)
  end)
end)

describe("http.ws_deflate under zever serve", function()
  local serve = require "spec.support.serve"
  local process = require "spec.support.process"
  local dir, on, off
  setup(function()
    dir = serve.temp_app([[
local zever = require "zever"
local app = zever.app()
app:websocket("/e", function(ws)
  while true do
    local m, k = ws:recv()
    if not m then return end
    ws:send(m, k)
  end
end)
app:websocket("/plain", function(ws) ws:send(ws:recv() or "") end, { deflate = false })
return app
]])
    local args = function() return { "--workers", "1", "--access-log", "off", "--listen",
      "127.0.0.1:" .. serve.free_port() } end
    on = assert(serve.start(dir, args(), { HTTP_WS_DEFLATE = "true" }))
    off = assert(serve.start(dir, args()))
  end)
  teardown(function()
    if on then on:kill() end
    if off then off:kill() end
    serve.remove(dir)
  end)

  -- What python3-websockets (offering deflate) negotiated on path, after a 1000-byte echo.
  local function negotiated(srv, path)
    local script = "import asyncio, websockets, sys\n" ..
      "async def main():\n" ..
      "    async with websockets.connect(sys.argv[1], open_timeout=20) as ws:\n" ..
      "        await ws.send('x' * 1000)\n" ..
      "        r = await ws.recv()\n" ..
      "        print('ok' if r == 'x' * 1000 else 'mismatch', " ..
      "'deflate' if ws.extensions else 'none')\n" ..
      "asyncio.run(main())\n"
    local p = assert(io.popen("/usr/bin/python3 -c " .. process.quote(script) .. " " ..
      process.quote(("ws://127.0.0.1:%d%s"):format(srv.port, path)) .. " 2>&1"))
    local out = p:read("*a")
    p:close()
    return (out:gsub("%s+$", ""))
  end

  it("turns deflate on for routes without their own option, and only with the setting", function()
    assert.are.equal("ok deflate", negotiated(on, "/e"))
    assert.are.equal("ok none", negotiated(on, "/plain"))
    assert.are.equal("ok none", negotiated(off, "/e"))
  end)
end)
