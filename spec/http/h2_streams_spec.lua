-- HTTP/2 streams of one connection run side by side (host/h2: each stream a virtual
-- connection of the server, its own handler coroutine), and a drain says GOAWAY first, then
-- lets the streams in flight finish (docs/http2.md). End to end: the real binary and nghttp
-- (Debian nghttp2-client), which puts all its URIs on one connection and prints the frames.

local process = require "spec.support.process"
local serve = require "spec.support.serve"
local certs = require "spec.support.tls_certs"

local quote = process.quote

local APP = [[
local zever = require "zever"
local sched = require "zever.sched"
local loop = require "zever.loop"
local app = zever.app()
local waiter
app:get("/hello", function() return "hello world" end)
-- Waits until /release wakes it (or 20 s: then it says so).
app:get("/wait", function()
  local token = sched.token()
  waiter = token
  local t = loop.after(20, function()
    if waiter == token then
      waiter = nil
      sched.complete(token, "timeout")
    end
  end)
  local why = sched.await(token)
  t:stop()
  return "wait:" .. why
end)
-- Waits until /wait waits (or 20 s), wakes it on the next turn of the loop, answers at once.
app:get("/release", function()
  if not sched.wait_until(function() return waiter ~= nil end, 20, 0.005) then
    return "release:nobody"
  end
  local w = waiter
  waiter = nil
  loop.after(0, function() sched.complete(w, "released") end)
  return "release:done"
end)
-- Says it started (a file), then waits for a file to go on (or 20 s).
app:get("/hold", function()
  local dir = os.getenv("HOLD_DIR")
  local f = assert(io.open(dir .. "/hold.started", "w"))
  f:close()
  local ok = sched.wait_until(function()
    local g = io.open(dir .. "/hold.go")
    if g then g:close() end
    return g ~= nil
  end, 20, 0.01)
  return ok and "held" or "hold:timeout"
end)
return app
]]

local function exists(path)
  local f = io.open(path)
  if f then f:close() end
  return f ~= nil
end

local function have(cmd)
  return os.execute("command -v " .. cmd .. " >/dev/null 2>&1") == 0
end

-- The stream ids in the order their response heads came (nghttp -v's ":status" lines).
local function status_order(out)
  local ids = {}
  for id in out:gmatch("recv %(stream_id=(%d+)%) :status: 200") do ids[#ids + 1] = tonumber(id) end
  return ids
end

-- The stream id nghttp gave the request of path (its "send HEADERS" line, then ":path").
local function stream_of(out, path)
  for id, p in out:gmatch("send HEADERS frame <[^>]*stream_id=(%d+)>.-:path: (%S+)") do
    if p == path then return tonumber(id) end
  end
end

describe("HTTP/2 streams of one connection", function()
  local c, dir, tls_srv, plain_srv
  lazy_setup(function()
    if not have("nghttp") then return end
    c = certs.make()
    dir = serve.temp_app(APP)
    tls_srv = assert(serve.start(dir, { "--listen", "127.0.0.1:0", "--workers", "1", "--h2",
      "--tls-cert", c.cert, "--tls-key", c.key }, { HOLD_DIR = dir }))
    plain_srv = assert(serve.start(dir, { "--listen", "127.0.0.1:0", "--workers", "1", "--h2" },
      { HOLD_DIR = dir }))
  end)
  lazy_teardown(function()
    if tls_srv then tls_srv:kill() end
    if plain_srv then plain_srv:kill() end
    if c then certs.remove(c) end
    serve.remove(dir)
  end)

  for _, scheme in ipairs({ "http", "https" }) do
    it("run concurrently: a waiting handler does not hold up the next stream (" .. scheme .. ")",
      function()
        if not have("nghttp") then pending("nghttp is not installed (nghttp2-client)") return end
        local port = scheme == "http" and plain_srv.port or tls_srv.port
        local base = scheme .. "://127.0.0.1:" .. port
        -- One connection, both requests at once: /wait answers only after /release ran. One
        -- after another, whichever ran first would wait 20 s and say "timeout"/"nobody".
        local r = process.run("nghttp -v --timeout=30 " .. quote(base .. "/wait") .. " " ..
          quote(base .. "/release"))
        assert.are.equal(0, r.code, r.stdout .. r.stderr)
        local out = r.stdout
        assert.is_truthy(out:find("wait:released", 1, true), out)
        assert.is_truthy(out:find("release:done", 1, true), out)
        local wait_id, release_id = stream_of(out, "/wait"), stream_of(out, "/release")
        assert.is_truthy(wait_id and release_id, out)
        -- The later stream answered first: responses go out as each handler finishes.
        assert.are.same({ release_id, wait_id }, status_order(out))
        -- One connection: nghttp opened one (one SETTINGS from the server, one preface).
        local _, settings = out:gsub("recv SETTINGS frame <length=%d+, flags=0x00", "")
        assert.are.equal(1, settings, out)
      end)
  end

  it("serve many streams per connection in flight at once (h2load -c2 -m64)", function()
    if not have("h2load") then pending("h2load is not installed (nghttp2-client)") return end
    local out = process.output("h2load -n 4000 -c 2 -m 64 http://127.0.0.1:" .. plain_srv.port ..
      "/hello")
    assert.is_truthy(out:find("4000 total, 4000 started, 4000 done, 4000 succeeded, 0 failed",
      1, true), out)
  end)
end)

describe("HTTP/2 drain", function()
  local dir, srv, out, c
  after_each(function()
    if srv then srv:kill() end
    srv = nil
    if out then os.remove(out) end
    serve.remove(dir)
    if c then certs.remove(c) end
    c = nil
  end)

  for _, scheme in ipairs({ "http", "https" }) do
    it("sends GOAWAY (last stream id) on SIGTERM, then lets the stream in flight finish ("
      .. scheme .. ")", function()
      if not have("nghttp") then pending("nghttp is not installed (nghttp2-client)") return end
      c = scheme == "https" and certs.make() or nil
      dir = serve.temp_app(APP)
      local args = { "--listen", "127.0.0.1:0", "--workers", "1", "--h2", "--drain", "30" }
      if c then
        for _, a in ipairs({ "--tls-cert", c.cert, "--tls-key", c.key }) do args[#args + 1] = a end
      end
      srv = assert(serve.start(dir, args, { HOLD_DIR = dir }))
      out = os.tmpname()
      os.execute("nghttp -v --timeout=30 " .. quote(scheme .. "://127.0.0.1:" .. srv.port ..
        "/hold") .. " >" .. quote(out) .. " 2>&1 &")
      assert.is_truthy(serve.wait_for(function() return exists(dir .. "/hold.started") end, 20),
        srv:log())
      srv:signal("TERM")
      -- The client hears GOAWAY while its stream still runs.
      local text = serve.wait_for(function()
        local t = serve.slurp(out)
        return t:find("recv GOAWAY frame", 1, true) and t
      end, 20)
      assert.is_truthy(text, serve.slurp(out) .. srv:log())
      local id = stream_of(text, "/hold")
      assert.is_truthy(id, text)
      assert.is_truthy(text:find("last_stream_id=" .. id .. ", error_code=NO_ERROR", 1, true), text)
      assert.is_falsy(text:find(":status:", 1, true), text)
      -- New connections are refused meanwhile; the server still runs.
      assert.is_true(srv:alive())
      local r = process.run("curl -s -S --max-time 5 -k --http2-prior-knowledge " ..
        quote("http://127.0.0.1:" .. srv.port .. "/hello"))
      assert.are_not.equal(0, r.code)
      -- The stream in flight finishes, then the server exits.
      local f = assert(io.open(dir .. "/hold.go", "w"))
      f:close()
      assert.is_true(srv:wait_exit(20), srv:log())
      text = serve.wait_for(function()
        local t = serve.slurp(out)
        return t:find("held", 1, true) and t
      end, 20)
      assert.is_truthy(text, serve.slurp(out))
      local goaway_at = text:find("recv GOAWAY frame", 1, true)
      local status_at = text:find("recv (stream_id=" .. id .. ") :status: 200", 1, true)
      assert.is_truthy(status_at and goaway_at < status_at, text)
      assert.is_truthy(srv:log():find("draining", 1, true), srv:log())
    end)
  end
end)
