-- zever dev, end to end: the real binary on an app `zever new` wrote, files edited as an editor
-- would, real clients (curl, wrk). Every wait polls a condition with a generous bound.

local process = require "spec.support.process"
local serve = require "spec.support.serve"
local fs = require "spec.support.files"
local json = require "zever.json"
local sys = require "zever.sys"

local quote, wait_for = process.quote, serve.wait_for

-- Replaces the first match of pattern in a file (read, then written whole: one change event).
local function edit(path, pattern, repl)
  local text = fs.read(path)
  local new, n = text:gsub(pattern, repl, 1)
  assert(n == 1, "no " .. pattern .. " in " .. path)
  fs.write(path, new)
end

local function message(srv)
  local r = srv:curl("/")
  local ok, body = pcall(json.decode, r.stdout)
  return ok and type(body) == "table" and body.message or r.stdout
end

describe("zever dev", function()
  local root, app, srv
  before_each(function()
    root = fs.tmpdir()
    app = root .. "/site"
    assert.are.equal(0, process.run("cd " .. quote(root) .. " && " .. quote(sys.exe()) ..
      " new site").code)
    srv = assert(serve.start(app, { "--listen", "127.0.0.1:0" }, nil, "dev"))
  end)
  after_each(function()
    srv:signal("TERM")
    srv:wait_exit(10)
    srv:kill()
    os.execute("rm -rf " .. quote(root))
  end)

  it("serves an edited handler on the next requests, an error page while it is broken, and recovers", function()
    assert.are.equal("hello from zever", message(srv))
    local home = app .. "/handlers/home.lua"
    edit(home, "hello from zever", "hello again")
    assert.are.equal("hello again", wait_for(function()
      local m = message(srv)
      return m == "hello again" and m
    end, 20))
    -- A syntax error: the terminal and the page say where; the server keeps running.
    edit(home, "return M\n$", "return M +\n")
    local page = wait_for(function()
      local r = srv:curl("/", "-i")
      return r.stdout:find("X-Zever-Dev: error", 1, true) and r.stdout
    end, 20)
    assert.is_truthy(page, "no error page")
    assert.matches("HTTP/1.1 500", page, 1, true)
    assert.matches("handlers/home.lua:%d+:", page)
    assert.matches("the app does not load", srv:log(), 1, true)
    assert.is_true(srv:alive())
    -- Fixed: the app again, with the edit.
    edit(home, "return M %+\n$", "return M\n")
    assert.is_truthy(wait_for(function() return message(srv) == "hello again" end, 20))
  end)

  it("runs zever gen when the schema changes and shows its errors as the page", function()
    local zen = app .. "/schema/app.zen"
    fs.write(zen, fs.read(zen) .. "\nentity Post {\n  id: int64 @primary\n  title: string\n}\n")
    assert.is_truthy(wait_for(function() return fs.slurp(app .. "/generated/models.lua") end, 20),
      "gen did not run: " .. srv:log())
    -- Its migration went where zever gen puts it: the app's migrations/, one sequence.
    assert.is_truthy(wait_for(function() return fs.slurp(app .. "/migrations/0001_create_posts.lua") end, 20))
    assert.is_nil(fs.slurp(app .. "/generated/migrations/0001_create_posts.lua"))
    fs.write(zen, fs.read(zen) .. "\nentity Broken {\n  id: nosuchtype\n}\n")
    local page = wait_for(function()
      local r = srv:curl("/")
      return r.stdout:find("zever gen failed", 1, true) and r.stdout
    end, 20)
    assert.is_truthy(page, "no gen error page: " .. srv:log())
    assert.matches("nosuchtype", page, 1, true)
    fs.write(zen, (fs.read(zen):gsub("\nentity Broken {\n  id: nosuchtype\n}\n", "")))
    assert.is_truthy(wait_for(function() return message(srv) == "hello from zever" end, 20))
  end)

  it("drops no request while it reloads under load (wrk)", function()
    -- wrk runs for 4 s while the handler file is rewritten five times, 0.5 s apart.
    local home = app .. "/handlers/home.lua"
    local script = ("for i in 1 2 3 4 5; do sleep 0.5; printf '\\n' >> %s; done"):format(quote(home))
    local r = process.run(("(%s) & wrk -t1 -c8 -d4s http://127.0.0.1:%d/; wait"):format(script, srv.port))
    assert.are.equal(0, r.code, r.stderr)
    local reqs = tonumber(r.stdout:match("(%d+) requests in"))
    assert.is_true(reqs and reqs > 0, r.stdout)
    assert.is_nil(r.stdout:find("Socket errors", 1, true), r.stdout)
    assert.is_nil(r.stdout:find("Non-2xx", 1, true), r.stdout)
    local _, reloads = srv:log():gsub("changed, reloading", "")
    assert.is_true(reloads >= 2, srv:log())
  end)
end)
