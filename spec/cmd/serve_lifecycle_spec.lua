-- zever serve and its configuration, limits, response rules and signals, end to end: the real
-- binary, real worker threads, real clients (curl, spec/support/http_client.py).

local process = require "spec.support.process"
local serve = require "spec.support.serve"

local quote = process.quote
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "spec/cmd"
local CLIENT = here .. "/../support/http_client.py"

-- A fresh app folder with app.lua (and zever.yaml when yaml is given).
local function app_dir(app, yaml)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. quote(dir)) == 0)
  local function write(name, body)
    local f = assert(io.open(dir .. "/" .. name, "w"))
    f:write(body)
    f:close()
  end
  write("app.lua", app)
  if yaml then write("zever.yaml", yaml) end
  return dir, write
end

local APP = [[
local zever = require "zever"
local app = zever.app()
app:get("/hello", function() return "hello world" end)
app:get("/interim", function() return 101, "switching" end)
app:get("/interim-res", function(_, res) return res:status(100):send("x") end)
app:get("/table-header", function() return 200, "t", { ["X-Bad"] = { a = 1 } } end)
app:get("/cookies", function(_, res)
  res:header("Set-Cookie", "a=1; Path=/")
  res:header("Set-Cookie", "b=2; Path=/")
  res:header("X-One", "first")
  res:header("X-One", "second")
  return res:send("cookies")
end)
app:get("/list", function() return 200, "l", { ["X-Many"] = { "1", "2" } } end)
app:get("/add", function(_, res) return res:add_header("X-Rep", "a"):add_header("X-Rep", "b"):send("ok") end)
app:get("/slow", function()
  local f = io.open(os.getenv("SLOW_MARK"), "w") f:write("in") f:close()
  zever.sleep(0.8)
  return "finished"
end)
local big = string.rep("z", 50 * 1024 * 1024)
app:get("/big", function() return big end)
return app
]]

local function count(s, pat)
  local _, n = s:gsub(pat, "")
  return n
end

describe("zever serve configuration", function()
  local srv, dir
  after_each(function()
    if srv then srv:kill() end
    srv = nil
    if dir then os.execute("rm -rf " .. quote(dir)) end
    dir = nil
  end)

  it("listens where zever.yaml says, with its number of workers", function()
    local port = serve.free_port()
    dir = app_dir(APP, ("http:\n  listen: 127.0.0.1:%d\n  workers: 3\n"):format(port))
    srv = assert(serve.start(dir))
    assert.are.equal(port, srv.port)
    assert.is_truthy(srv:log():find("(3 workers)", 1, true))
    assert.are.equal("hello world", srv:curl("/hello").stdout)
  end)

  it("takes HTTP_LISTEN over zever.yaml", function()
    local p1, p2 = serve.free_port(), serve.free_port()
    dir = app_dir(APP, ("http:\n  listen: 127.0.0.1:%d\n  workers: 1\n"):format(p1))
    srv = assert(serve.start(dir, {}, { HTTP_LISTEN = "127.0.0.1:" .. p2 }))
    assert.are.equal(p2, srv.port)
  end)

  it("takes flags over the environment and zever.yaml", function()
    local p1, p2, p3 = serve.free_port(), serve.free_port(), serve.free_port()
    dir = app_dir(APP, ("http:\n  listen: 127.0.0.1:%d\n  workers: 3\n"):format(p1))
    srv = assert(serve.start(dir, { "--listen", "127.0.0.1:" .. p3, "--workers", "1" },
      { HTTP_LISTEN = "127.0.0.1:" .. p2, HTTP_WORKERS = "2" }))
    assert.are.equal(p3, srv.port)
    assert.is_truthy(srv:log():find("(1 workers)", 1, true))
  end)

  it("exits 2 with a message for a bad numeric flag, before serving", function()
    dir = app_dir(APP)
    local rows = {
      { { "--drain", "-1" }, "--drain must be >= 0" },
      { { "--workers", "0" }, "--workers must be >= 1" },
      { { "--workers", "two" }, "--workers wants a number" },
      { { "--workers", "1.5" }, "--workers wants a whole number" },
      { { "--max-body", "-5" }, "--max-body must be >= 0" },
      { { "--max-connections", "0" }, "--max-connections must be >= 1" },
      { { "--write-timeout", "soon" }, "--write-timeout wants a duration" },
      { { "--handler-timeout", "-1s" }, "--handler-timeout" },
    }
    for _, row in ipairs(rows) do
      local r = process.zever("serve", dir, "--listen", "127.0.0.1:0", row[1][1], row[1][2])
      assert.are.equal(2, r.code, table.concat(row[1], " "))
      assert.is_truthy(r.stderr:find(row[2], 1, true), r.stderr)
    end
  end)

  it("exits 2 naming the variable for an invalid HTTP_* value", function()
    dir = app_dir(APP)
    local r = process.run("HTTP_WRITE_TIMEOUT=soon " .. quote(require("zever.sys").exe()) ..
      " serve " .. quote(dir) .. " --listen 127.0.0.1:0")
    assert.are.equal(2, r.code)
    assert.is_truthy(r.stderr:find("HTTP_WRITE_TIMEOUT", 1, true), r.stderr)
  end)
end)

describe("zever serve limits", function()
  local srv, dir
  after_each(function()
    if srv then srv:kill() end
    srv = nil
    if dir then os.execute("rm -rf " .. quote(dir)) end
    dir = nil
  end)

  -- The scripted client (forked from the spec's warm python3); what it received.
  local function client(port, steps)
    local out = os.tmpname()
    os.remove(out)
    local argv = { CLIENT, tostring(port), out }
    for _, s in ipairs(steps) do argv[#argv + 1] = s end
    process.python_bg(argv)
    assert(process.wait_for(function()
      local f = io.open(out, "rb")
      if f then f:close() end
      return f ~= nil
    end, 30), "the client did not finish")
    local text = serve.slurp(out)
    os.remove(out)
    return text
  end

  it("closes a client that never reads a large response after HTTP_WRITE_TIMEOUT", function()
    dir = app_dir(APP)
    srv = assert(serve.start(dir, { "--listen", "127.0.0.1:0", "--workers", "1" },
      { HTTP_WRITE_TIMEOUT = "300ms" }))
    -- Asks for 50 MB, reads nothing for 3 s (ten write timeouts), then reads what is left.
    local out = client(srv.port, { "rcvbuf:4096", "open",
      "send:GET /big HTTP/1.1\\r\\nHost: t\\r\\n\\r\\n", "sleep:3", "read:10" })
    local status = out:match("^%[(%a+)%]")
    assert.is_truthy(status == "eof" or status == "reset", out:sub(1, 60))
    assert.is_true(#out < 50 * 1024 * 1024, "the whole body arrived: nothing timed out")
    assert.matches("HTTP/1.1 200 OK", out:sub(1, 100))
    assert.are.equal("hello world", srv:curl("/hello").stdout)
  end)

  it("raises RLIMIT_NOFILE or, when it cannot, warns and lowers the per-worker cap", function()
    dir = app_dir(APP)
    -- A hard limit of 300 descriptors cannot hold 2 workers x 1000 connections.
    local log = os.tmpname()
    local p = io.popen("ulimit -n 300; exec " .. quote(require("zever.sys").exe()) .. " serve " ..
      quote(dir) .. " --listen 127.0.0.1:0 --workers 2 --max-connections 1000 >" .. log ..
      " 2>&1 & echo $!")
    srv = { pid = tonumber(p:read("*l")), logfile = log }
    p:close()
    local text = serve.wait_for(function()
      local t = serve.slurp(log)
      return t:find("on http://", 1, true) and t
    end, 20)
    os.execute("kill -KILL " .. srv.pid)
    srv = nil
    os.remove(log)
    assert.is_truthy(text, "the server did not start")
    assert.is_truthy(text:find("http.max_connections 1000 x 2 workers needs 2192 file " ..
      "descriptors; RLIMIT_NOFILE is 300 (hard 300): each worker takes at most 54 connections",
      1, true), text)
  end)

  it("logs refused connections at max_connections, and serves them when a slot frees", function()
    dir = app_dir(APP)
    srv = assert(serve.start(dir, { "--listen", "127.0.0.1:0", "--workers", "1",
      "--max-connections", "1" }))
    local out = client(srv.port, {
      "send:GET /hello HTTP/1.1\\r\\n",   -- 1: in progress, not idle
      "open", "send:GET /hello HTTP/1.1\\r\\nHost: t\\r\\n\\r\\n", "read:1", -- 2: waits
      "use:1", "close", "use:2", "readn:15:3", -- the status line, without 3 s of silence after
    })
    assert.matches("^%[timeout%]%[n%]HTTP/1.1 200 OK", out)
    assert.is_truthy(serve.wait_for(function()
      return srv:log():find("max_connections (1) reached: accept paused", 1, true)
    end, 10), srv:log())
  end)
end)

describe("zever serve responses", function()
  local srv, dir
  setup(function()
    dir = app_dir(APP)
    srv = assert(serve.start(dir, { "--listen", "127.0.0.1:0", "--workers", "1" }))
  end)
  teardown(function()
    srv:kill()
    os.execute("rm -rf " .. quote(dir))
  end)

  it("answers 500 for a 1xx final status, returned or set, and logs why", function()
    for _, path in ipairs({ "/interim", "/interim-res" }) do
      local r = srv:curl(path, "-i")
      assert.matches("^HTTP/1.1 500 ", r.stdout)
    end
    assert.is_truthy(serve.wait_for(function()
      local log = srv:log()
      return log:find("returned status 101", 1, true) and log:find("1xx are interim", 1, true)
    end, 5), srv:log())
    assert.are.equal("hello world", srv:curl("/hello").stdout)
  end)

  it("answers 500 for a table header value, never sending an address", function()
    local r = srv:curl("/table-header", "-i")
    assert.matches("^HTTP/1.1 500 ", r.stdout)
    assert.is_nil(r.stdout:find("table: 0x", 1, true))
    assert.is_truthy(serve.wait_for(function()
      return srv:log():find("the value of header X-Bad is a table", 1, true)
    end, 5), srv:log())
  end)

  it("sends both Set-Cookie headers, and replaces other headers", function()
    local r = srv:curl("/cookies", "-i")
    assert.matches("^HTTP/1.1 200 ", r.stdout)
    assert.is_truthy(r.stdout:find("Set-Cookie: a=1; Path=/\r\n", 1, true), r.stdout)
    assert.is_truthy(r.stdout:find("Set-Cookie: b=2; Path=/\r\n", 1, true), r.stdout)
    assert.are.equal(1, count(r.stdout, "X%-One: "))
    assert.is_truthy(r.stdout:find("X-One: second\r\n", 1, true))
  end)

  it("sends a list value as repeated headers, and add_header appends", function()
    local r = srv:curl("/list", "-i")
    assert.is_truthy(r.stdout:find("X-Many: 1\r\nX-Many: 2\r\n", 1, true), r.stdout)
    r = srv:curl("/add", "-i")
    assert.is_truthy(r.stdout:find("X-Rep: a\r\nX-Rep: b\r\n", 1, true), r.stdout)
  end)
end)

describe("zever serve SIGHUP", function()
  local srv, dir, write
  after_each(function()
    if srv then srv:kill() end
    srv = nil
    if dir then os.execute("rm -rf " .. quote(dir)) end
    dir = nil
  end)

  it("keeps serving: a request in flight completes, and the new app answers after", function()
    dir, write = app_dir(APP)
    local mark = os.tmpname()
    os.remove(mark)
    srv = assert(serve.start(dir, { "--listen", "127.0.0.1:0", "--workers", "1" },
      { SLOW_MARK = mark }))
    local out = os.tmpname()
    os.execute("curl -s --max-time 10 http://127.0.0.1:" .. srv.port .. "/slow > " .. out ..
      ".tmp; mv " .. out .. ".tmp " .. out .. " &")
    assert.is_truthy(serve.wait_for(function() return serve.slurp(mark) == "in" end, 10))
    -- The app changes, then SIGHUP while /slow sleeps in its handler.
    write("app.lua", (APP:gsub('return "hello world"', 'return "hello again"')))
    srv:signal("HUP")
    assert.is_truthy(serve.wait_for(function()
      return io.open(out) and serve.slurp(out) ~= nil and serve.slurp(out) ~= ""
    end, 10))
    assert.are.equal("finished", serve.slurp(out))
    assert.is_truthy(serve.wait_for(function()
      return srv:curl("/hello").stdout == "hello again"
    end, 10), srv:log())
    assert.is_true(srv:alive())
    local log = srv:log()
    assert.is_truthy(log:find("SIGHUP, reloading", 1, true))
    -- SIGTERM still drains and exits 0.
    srv:signal("TERM")
    assert.is_true(srv:wait_exit(10))
    os.remove(out)
    os.remove(mark)
  end)

  it("keeps the old workers when the reloaded app does not load", function()
    dir, write = app_dir(APP)
    srv = assert(serve.start(dir, { "--listen", "127.0.0.1:0", "--workers", "1" }))
    write("app.lua", "return 42")
    srv:signal("HUP")
    assert.is_truthy(serve.wait_for(function()
      return srv:log():find("reload failed, the current workers keep serving", 1, true)
    end, 10), srv:log())
    assert.are.equal("hello world", srv:curl("/hello").stdout)
  end)
end)
