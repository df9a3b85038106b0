-- zever serve, end to end: the real binary, real worker threads, real clients (curl).

local process = require "spec.support.process"
local sys = require "zever.sys"

local fs = require "spec.support.files"

local quote, alive, wait_for, read = process.quote, process.alive, process.wait_for, fs.text

local dir = fs.tmpdir()

local function write(name, body)
  return fs.write(dir .. "/" .. name, body)
end

-- Starts `zever serve` in the background; returns { pid, port, log }.
local function start(app, ...)
  local log = os.tmpname()
  local args = { quote(sys.exe()), "serve", quote(app), "--listen", "127.0.0.1:0" }
  for i = 1, select("#", ...) do args[#args + 1] = quote((select(i, ...))) end
  local p = io.popen(table.concat(args, " ") .. " >" .. log .. " 2>&1 & echo $!")
  local pid = tonumber(p:read("*l"))
  p:close()
  local port
  wait_for(function()
    port = read(log):match("on http://127%.0%.0%.1:(%d+)")
    return port ~= nil
  end, 5)
  assert(port, "the server did not start: " .. read(log))
  return { pid = pid, port = tonumber(port), log = log }
end

-- Waits up to secs for pid to exit; returns true when it did.
local function wait_exit(pid, secs)
  return wait_for(function() return not alive(pid) end, secs)
end

local function get(srv, path, extra)
  return process.run("curl -s -S --max-time 10 " .. (extra or "") .. " " ..
    quote("http://127.0.0.1:" .. srv.port .. path))
end

local app = write("app.lua", [[
local zever = require "zever"
local app = zever.app()
app:get("/hello", function() return "hello world" end)
app:get("/users/:id", function(req) return { id = tonumber(req.params.id) } end)
-- A barrier: each request waits (without blocking the worker) until 50 have arrived, so 50
-- answers of "slept" prove that 50 requests were in flight at once on one worker.
local arrived = 0
app:get("/sleep", function()
  arrived = arrived + 1
  local deadline = require("zever.loop").now() + 60   -- only reached when the test fails
  while arrived < 50 and require("zever.loop").now() < deadline do zever.sleep(0.01) end
  return arrived >= 50 and "slept" or "alone"
end)
-- Marks that it is in flight (a file next to the app), then takes a while.
local function started(name)
  local f = io.open(debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") .. "/" .. name, "w")
  f:close()
end
app:get("/slow", function() started("slow.started") zever.sleep(0.6) return "finished" end)
app:get("/hold", function() started("hold.started") zever.sleep(5) return "held" end)
app:get("/boom", function() error("kaput") end)
app:post("/echo", function(req) return req:json() end)
app:get("/query", function(req) return req.query end)
return app
]])

describe("zever serve", function()
  local srv
  after_each(function()
    if srv and alive(srv.pid) then
      os.execute("kill -KILL " .. srv.pid)
      wait_exit(srv.pid, 2)
    end
    srv = nil
  end)

  it("serves an app with several workers and exits 0 on SIGTERM", function()
    srv = start(app, "--workers", "2")
    assert.are.equal("hello world", get(srv, "/hello").stdout)
    assert.are.equal('{"id":42}', get(srv, "/users/42").stdout)
    assert.are.equal('{"a":[1,2]}', get(srv, "/echo", "-d '{\"a\":[1,2]}'").stdout)
    assert.are.same({ x = "1", y = "a b" },
      require("zever.json").decode(get(srv, "/query?x=1&y=a+b").stdout))
    local r = get(srv, "/nope", "-i")
    assert.is_truthy(r.stdout:match("^HTTP/1.1 404"))
    assert.is_truthy(r.stdout:find("Server: zever", 1, true))
    os.execute("kill -TERM " .. srv.pid)
    assert.is_true(wait_exit(srv.pid, 5))
    local log = read(srv.log)
    assert.is_truthy(log:find("(2 workers)", 1, true))
    assert.is_truthy(log:find("GET /hello 200 11", 1, true))
  end)

  it("answers 500 for a failing handler, logs the traceback and keeps serving", function()
    srv = start(app, "--workers", "1")
    local r = get(srv, "/boom", "-i")
    assert.is_truthy(r.stdout:match("^HTTP/1.1 500"))
    assert.is_truthy(r.stdout:find('{"error":"internal"}', 1, true))
    assert.are.equal("hello world", get(srv, "/hello").stdout)
    assert.is_truthy(read(srv.log):find("kaput", 1, true))
    assert.is_truthy(read(srv.log):find("stack traceback", 1, true))
  end)

  it("finishes 50 concurrent sleeping requests on one worker without serialising them", function()
    srv = start(app, "--workers", "1", "--access-log", "off")
    local out = os.tmpname()
    -- 50 clients at once; each request waits in its handler until all 50 have arrived.
    os.execute("for i in $(seq 50); do curl -s --max-time 90 http://127.0.0.1:" .. srv.port ..
      "/sleep >> " .. out .. " & done; wait")
    local text = read(out)
    os.remove(out)
    local _, count = text:gsub("slept", "")
    -- Serialised, the first request would wait alone and answer "alone".
    assert.are.equal(50, count, text)
  end)

  it("lets an in-flight request finish after SIGTERM, then exits 0", function()
    srv = start(app, "--workers", "1")
    local out = os.tmpname()
    os.remove(dir .. "/slow.started")
    os.execute("curl -s --max-time 10 http://127.0.0.1:" .. srv.port .. "/slow > " .. out .. " &")
    assert.is_true(wait_for(function() return fs.slurp(dir .. "/slow.started") ~= nil end))
    os.execute("kill -TERM " .. srv.pid)
    assert.is_true(wait_exit(srv.pid, 5))
    wait_for(function() return read(out) == "finished" end, 5)
    assert.are.equal("finished", read(out))
    os.remove(out)
    assert.is_truthy(read(srv.log):find("draining", 1, true))
  end)

  it("exits at once on a second signal", function()
    srv = start(app, "--workers", "1", "--drain", "30")
    os.remove(dir .. "/hold.started")
    os.execute("curl -s --max-time 10 http://127.0.0.1:" .. srv.port .. "/hold >/dev/null &")
    assert.is_true(wait_for(function() return fs.slurp(dir .. "/hold.started") ~= nil end))
    os.execute("kill -TERM " .. srv.pid)
    assert.is_true(wait_for(function() return read(srv.log):find("draining", 1, true) ~= nil end))
    os.execute("kill -INT " .. srv.pid)
    assert.is_true(wait_exit(srv.pid, 2))
    assert.is_truthy(read(srv.log):find("exiting now", 1, true))
  end)

  it("fails with a clear message when the app does not load", function()
    local r = process.zever("serve", write("broken.lua", "return 42"), "--listen", "127.0.0.1:0")
    assert.are.equal(1, r.code)
    assert.is_truthy(r.stderr:find("must return the app", 1, true))
  end)

  it("exits 2 for a bad --listen", function()
    local r = process.zever("serve", app, "--listen", "nonsense")
    assert.are.equal(2, r.code)
    assert.is_truthy(r.stderr:find("want --listen host:port", 1, true))
  end)

  it("fails when the port is taken", function()
    srv = start(app, "--workers", "1")
    local r = process.zever("serve", app, "--listen", "127.0.0.1:" .. srv.port, "--workers", "1")
    assert.are.equal(1, r.code)
    assert.is_truthy(r.stderr:find("address already in use", 1, true))
  end)
end)

describe("zever routes", function()
  it("prints method, pattern, name and handler location", function()
    local r = process.zever("routes", app)
    assert.are.equal(0, r.code)
    assert.is_truthy(r.stdout:find("GET%s+/users/:id%s+%-%s+.-app%.lua:4"))
  end)
end)
