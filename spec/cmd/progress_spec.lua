-- The CLI's progress bar (zever.cli.progress) on its long operations: migrate up/down, gen, a bulk
-- jobs retry and search reindex draw it on a terminal (a pseudo-terminal from Python's pty module,
-- spec/support/pty_run.py), in green unless NO_COLOR is set; piped, they print no bar at all.

local process = require "spec.support.process"
local fs = require "spec.support.files"
local sys = require "zever.sys"

local quote = process.quote
local PTY = sys.home() .. "/spec/support/pty_run.py"

-- The transcript of args run on a pseudo-terminal in dir (env: extra variables), and its exit code.
local function on_tty(dir, env, ...)
  local cmd = { "env" }
  for k, v in pairs(env or {}) do cmd[#cmd + 1] = k .. "=" .. v end
  cmd[#cmd + 1] = sys.exe()
  for i = 1, select("#", ...) do cmd[#cmd + 1] = (select(i, ...)) end
  local parts = { process.PYTHON, quote(PTY), "'[]'", "--cwd", quote(dir), "--" }
  for _, a in ipairs(cmd) do parts[#parts + 1] = quote(a) end
  local r = process.run(table.concat(parts, " "))
  local body, code = r.stdout:match("^(.*)\nEXIT (%-?%d+)\n?$")
  assert(body, "pty_run: " .. r.stdout .. r.stderr)
  return body, tonumber(code)
end

local function piped(dir, ...)
  local parts = { "cd " .. quote(dir) .. " && " .. quote(sys.exe()) }
  for i = 1, select("#", ...) do parts[#parts + 1] = quote((select(i, ...))) end
  return process.run(table.concat(parts, " ") .. " </dev/null")
end

describe("progress bars #cli", function()
  local root, template, app

  setup(function()
    root = fs.tmpdir()
    template = root .. "/bars"
    local r = piped(root, "new", "bars", "--batteries", "db,queue,jobs,search")
    assert(r.code == 0, r.stderr)
    for _, n in ipairs({ "one", "two", "three" }) do
      r = piped(template, "migrate", "new", n)
      assert(r.code == 0, r.stderr)
    end
    r = piped(template, "add", "jobs")
    assert(r.code == 0, r.stderr)
  end)

  teardown(function()
    if root then os.execute("rm -rf " .. quote(root)) end
  end)

  -- Each spec starts from its own copy (nothing applied): they run in any order.
  before_each(function()
    app = root .. "/app"
    os.execute("rm -rf " .. quote(app) .. " && cp -a " .. quote(template) .. " " .. quote(app))
  end)

  it("draws migrate up and down on a terminal, green, then names what ran", function()
    local out, code = on_tty(app, nil, "migrate", "up")
    assert.are.equal(0, code, out)
    assert.matches("\r\27[Kmigrate up [", out, 1, true)
    assert.matches("100% 6/6", out, 1, true)
    assert.matches("\27[32m#", out, 1, true)
    assert.matches("0005_two", out, 1, true)
    assert.matches("applied 6 migration(s)", out, 1, true)
    out, code = on_tty(app, nil, "migrate", "down", "-n", "5")
    assert.are.equal(0, code, out)
    assert.matches("migrate down [", out, 1, true)
    assert.matches("rolled back 5 migration(s)", out, 1, true)
  end)

  it("leaves colour out with NO_COLOR, and keeps the bar", function()
    local out, code = on_tty(app, { NO_COLOR = "1" }, "migrate", "up")
    assert.are.equal(0, code, out)
    assert.matches("migrate up [####", out, 1, true)
    assert.is_nil(out:find("\27[32m", 1, true))
    assert.is_nil(out:find("\27[0m", 1, true))
  end)

  it("prints no bar when piped", function()
    local r = piped(app, "migrate", "up")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("", r.stdout)
    assert.are.equal("", r.stderr)
    r = piped(app, "gen")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("", r.stdout)
    assert.are.equal("", r.stderr)
    r = piped(app, "search", "reindex")
    assert.are.equal(0, r.code, r.stderr)
    assert.is_nil((r.stdout .. r.stderr):find("[", 1, true))
    assert.is_nil((r.stdout .. r.stderr):find("\r", 1, true))
  end)

  it("draws gen's writes, a bulk jobs retry and search reindex on a terminal", function()
    local out, code = on_tty(app, nil, "migrate", "up")
    assert.are.equal(0, code, out)
    os.execute("rm -rf " .. quote(app .. "/generated"))
    out, code = on_tty(app, nil, "gen")
    assert.are.equal(0, code, out)
    assert.matches("gen [", out, 1, true)
    assert.matches("100%", out, 1, true)
    -- The phases before the writes: compile, then each backend by name.
    assert.matches("0/%d+  compile\r", out)
    assert.matches("%d/%d+  migrations\r", out)
    assert.matches("%d/%d+  openapi\r", out)
    fs.write(app .. "/seed.lua", [[
local app = require("zever.app").load("app.lua", (require("zever.config.paths").cwd()))
for i = 1, 3 do
  app.db:exec("INSERT INTO failed_jobs (queue, name, args, error, attempts, failed_at) VALUES (?, ?, ?, ?, ?, ?)",
    "default", "Job" .. i, "[]", "boom", 3, 1700000000)
end
for i = 1, 40 do assert(app.search:index({ id = tostring(i), content = "document number " .. i })) end
assert(app.search:flush())
app:close()
]])
    local r = piped(app, "run", "seed.lua")
    assert.are.equal(0, r.code, r.stdout .. r.stderr)
    out, code = on_tty(app, nil, "jobs", "retry", "--all")
    assert.are.equal(0, code, out)
    assert.matches("jobs retry [", out, 1, true)
    assert.matches("100% 3/3", out, 1, true)
    assert.matches("retried 3 job(s)", out, 1, true)
    out, code = on_tty(app, nil, "search", "reindex")
    assert.are.equal(0, code, out)
    assert.matches("reindex [", out, 1, true)
    assert.matches("100% 40/40", out, 1, true)
    assert.matches("reindexed 40 document(s)", out, 1, true)
  end)
end)
