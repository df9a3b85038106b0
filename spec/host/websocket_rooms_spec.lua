-- WebSocket rooms and broadcast (zever.websocket_rooms over app.eventbus) with python3-websockets
-- clients (spec/support/ws_rooms_client.py): in one worker (the memory bus, served on this
-- state's loop), across the two worker threads of `zever serve --workers 2` (inproc), and across
-- two `zever serve` processes on a real redis-server (redis). Time only bounds the waits.

local zever = require "zever"
local server = require "zever.server"
local hs = require "spec.support.http_script"
local serve = require "spec.support.serve"
local redis_server = require "spec.support.redis_server"
local run_until = require("zever.testing").run_until

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "spec/host"
local CLIENT = here .. "/../support/ws_rooms_client.py"

-- The app every case serves (a file for `zever serve`, a chunk for server.listen).
local APP = [[
local zever = require "zever"
local app = zever.app()
app.log = require("zever.log").new({ out = { write = function() end } })
local me = tostring({}):match("0x%x+")      -- one per worker: each has its own Lua state
local stats, live = { slow = 0 }, {}
local function room(ws)
  live[ws] = true
  local first = ws:recv()
  local name = first and first:match("^join (.+)$")
  if not name then return end
  assert(ws:join(name))
  assert(ws:send("joined " .. me))
  while true do
    local msg = ws:recv()
    if not msg then break end
    local text = msg:match("^say (.*)$")
    if text then assert(ws:broadcast(name, text)) end
    if msg == "leave" then
      ws:leave(name)
      assert(ws:send("left"))
    end
  end
  if ws.slow then stats.slow = stats.slow + 1 end
  live[ws] = nil
end
app:websocket("/room", room, { max_queue = 256 * 1024 })
app:websocket("/roomdrop", room, { max_queue = 256 * 1024, on_slow = "drop" })
app:post("/say/:text", function(req)
  assert(app:broadcast("lobby", req.params.text))
  return { worker = me }
end)
local big = ("x"):rep(65536)
app:post("/flood/:n", function(req)
  assert(app:broadcast("lobby", big .. "." .. req.params.n))
  return { ok = true }
end)
app:get("/stats", function()
  local dropped = 0
  for ws in pairs(live) do dropped = dropped + ws.dropped end
  return { slow = stats.slow, dropped = dropped,
    members = require("zever.websocket_rooms").local_count(app, "lobby") }
end)
return app
]]

local function run_client(...)
  local args = { ... }
  local read = hs.python(function(out) return { CLIENT, out, unpack(args) } end)
  assert(run_until(read, 150), "the rooms client did not finish")
  local name, result = read():match("([%w_]+)\t([^\n]*)\n")
  return result, name
end

local handles = require "spec.support.handles"

describe("zever.websocket rooms in one worker", function()
  local loop = require "zever.loop"
  local srv, base, app, before
  before_each(function()
    before = loop.handles()
    app = assert(load(APP, "=app"))()
    srv = assert(server.listen(app, { host = "127.0.0.1", port = 0 }))
    base = ("ws://127.0.0.1:%d"):format(srv:port())
  end)
  after_each(function()
    srv:close()
    app.eventbus:close()
    -- Nothing of this describe's keeps the loop alive once its connections have ended.
    handles.settle(before, 10)
    assert.are.same({}, handles.extra(before))
  end)

  it("sends ws:broadcast to the others in the room, app:broadcast to all; leave stops it",
    function()
      assert.are.equal("b:hi a:second b:second b:left a:third members=1",
        run_client("sender", base))
    end)

  it("reaches every client in the room", function()
    assert.are.equal("workers=1 clients=2 all=True",
      run_client("fanout", "1", base, "--", (base:gsub("^ws", "http"))))
  end)

  it("closes a client that does not read (or drops its messages) without holding up the rest",
    function()
      assert.are.equal("slow=1 dropped>0=True reader_in_order=True",
        run_client("slow", base))
    end)

  it("raises on a bad room or message", function()
    local other = zever.app()
    assert.has_error(function() other:broadcast("", "x") end)
    assert.has_error(function() other:broadcast("lobby", "\255") end)
    assert.has_error(function() other:broadcast("lobby", {}) end)
  end)
end)

describe("zever.websocket rooms under zever serve --workers 2 (inproc)", function()
  local dir, srv
  setup(function()
    dir = serve.temp_app(APP)
    srv = assert(serve.start(dir, { "--workers", "2", "--access-log", "off", "--listen",
      "127.0.0.1:" .. serve.free_port() },
      { EVENTBUS_ADAPTER = "inproc" }))
  end)
  teardown(function()
    if srv then srv:kill() end
    serve.remove(dir)
  end)

  it("delivers one broadcast to clients on both workers", function()
    local ws, http = ("ws://127.0.0.1:%d"):format(srv.port), ("http://127.0.0.1:%d"):format(srv.port)
    assert.matches("^workers=2 clients=%d+ all=True$",
      run_client("fanout", "2", ws, "--", http))
  end)
end)

describe("zever.websocket rooms across two processes (redis) #redis", function()
  local rsrv = redis_server.fixture()
  local dir, a, b
  setup(function()
    dir = serve.temp_app(APP)
    local env = { EVENTBUS_ADAPTER = "redis", REDIS_URL = rsrv.url }
    a = assert(serve.start(dir, { "--workers", "1", "--access-log", "off", "--listen",
      "127.0.0.1:" .. serve.free_port() }, env))
    b = assert(serve.start(dir, { "--workers", "1", "--access-log", "off", "--listen",
      "127.0.0.1:" .. serve.free_port() }, env))
  end)
  teardown(function()
    if a then a:kill() end
    if b then b:kill() end
    serve.remove(dir)
  end)

  it("delivers one broadcast to clients of both processes", function()
    local wa, wb = ("ws://127.0.0.1:%d"):format(a.port), ("ws://127.0.0.1:%d"):format(b.port)
    assert.matches("^workers=2 clients=%d+ all=True$",
      run_client("fanout", "2", wa, wb, "--", ("http://127.0.0.1:%d"):format(a.port)))
  end)
end)
