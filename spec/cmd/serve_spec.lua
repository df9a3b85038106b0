-- zever serve, end to end: the real binary, real worker threads, real clients (curl).

local process = require "spec.support.process"
local sys = require "zever.sys"

local quote = process.quote

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. quote(dir)) == 0)

local function write(name, body)
  local f = assert(io.open(dir .. "/" .. name, "w"))
  f:write(body)
  f:close()
  return dir .. "/" .. name
end

local function read(path)
  local f = io.open(path, "rb")
  if not f then return "" end
  local s = f:read("*a")
  f:close()
  return s
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
  for _ = 1, 500 do
    port = read(log):match("on http://127%.0%.0%.1:(%d+)")
    if port then break end
    os.execute("sleep 0.01")
  end
  assert(port, "the server did not start: " .. read(log))
  return { pid = pid, port = tonumber(port), log = log }
end

local function alive(pid)
  return os.execute("kill -0 " .. pid .. " 2>/dev/null") == 0
end

-- Waits up to secs for pid to exit; returns true when it did.
local function wait_exit(pid, secs)
  for _ = 1, secs * 100 do
    if not alive(pid) then return true end
    os.execute("sleep 0.01")
  end
  return false
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
app:get("/sleep", function() zever.sleep(0.1) return "slept" end)
app:get("/slow", function() zever.sleep(0.6) return "finished" end)
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
    local t0 = sys.now()
    -- 50 clients at once; each request sleeps 100 ms in its handler.
    os.execute("for i in $(seq 50); do curl -s --max-time 10 http://127.0.0.1:" .. srv.port ..
      "/sleep >> " .. out .. " & done; wait")
    local elapsed = sys.now() - t0
    local text = read(out)
    os.remove(out)
    local _, count = text:gsub("slept", "")
    assert.are.equal(50, count)
    -- Serialised, 50 x 100 ms would take 5 s.
    assert.is_true(elapsed < 4, "took " .. elapsed .. " s")
  end)

  it("lets an in-flight request finish after SIGTERM, then exits 0", function()
    srv = start(app, "--workers", "1")
    local out = os.tmpname()
    os.execute("curl -s --max-time 10 http://127.0.0.1:" .. srv.port .. "/slow > " .. out .. " &")
    os.execute("sleep 0.2")
    os.execute("kill -TERM " .. srv.pid)
    assert.is_true(wait_exit(srv.pid, 5))
    os.execute("sleep 0.1")
    assert.are.equal("finished", read(out))
    os.remove(out)
    assert.is_truthy(read(srv.log):find("draining", 1, true))
  end)

  it("exits at once on a second signal", function()
    srv = start(app, "--workers", "1", "--drain", "30")
    os.execute("curl -s --max-time 10 http://127.0.0.1:" .. srv.port .. "/slow >/dev/null &")
    os.execute("sleep 0.2")
    os.execute("kill -TERM " .. srv.pid)
    os.execute("sleep 0.05")
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
