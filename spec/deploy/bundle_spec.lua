-- zever bundle: one executable file that carries the host, the framework and an app
-- (docs/deploy.md). The bundle of examples/bookmarks is copied alone into an empty folder and
-- run there with ZEVER_HOME unset: it migrates a fresh SQLite file, serves, and its worker runs
-- the job a request queued; a damaged copy is refused; two bundles of one input are the same bytes.

local process = require "spec.support.process"
local files = require "spec.support.files"
local serve = require "spec.support.serve"
local sys = require "zever.sys"
local build = require "zever.bundle_build"

local quote = process.quote
local HOME = sys.home()

-- Runs the bundle at exe with args in dir, ZEVER_HOME unset; returns process.run's result.
local function run_in(dir, exe, args, env)
  return process.run("cd " .. quote(dir) .. " && env -u ZEVER_HOME " .. (env or "") .. " " ..
    quote(exe) .. " " .. args)
end

local function bundle_of(app, out, extra)
  local r = process.zever("bundle", app, "-o", out, unpack(extra or {}))
  assert(r.code == 0, r.stderr)
  return r
end

describe("zever bundle", function()
  local tmp, exe, run

  setup(function()
    tmp = files.tmpdir({}, "zv-bundle")
    exe = tmp .. "/dist/bookmarks"
    bundle_of(HOME .. "/examples/bookmarks", exe)
    run = tmp .. "/run"
    assert(os.execute("mkdir -p " .. quote(run) .. " && cp " .. quote(exe) .. " " .. quote(run)))
  end)

  teardown(function() files.rm_rf(tmp) end)

  it("writes the same bytes for the same input", function()
    local again = tmp .. "/again"
    bundle_of(HOME .. "/examples/bookmarks", again)
    assert.equal(files.read(exe), files.read(again))
  end)

  it("prints zever's version, the app's revision and the content hash", function()
    local r = run_in(run, "./bookmarks", "version --json")
    assert.equal(0, r.code, r.stderr)
    local v = require("zever.json").decode(r.stdout)
    assert.equal(sys.version, v.version)
    assert.matches("^%x+$", v.hash)
    assert.equal(16, #v.hash)
    assert.is_string(v.revision)
  end)

  it("lists its commands and keeps file:line of the app in what it reports", function()
    local r = run_in(run, "./bookmarks", "--help")
    assert.equal(0, r.code, r.stderr)
    assert.matches("serve", r.stdout)
    r = run_in(run, "./bookmarks", "routes")
    assert.equal(0, r.code, r.stderr)
    assert.matches("POST%s+/bookmarks%s+%-%s+app%.lua:%d+", r.stdout)
  end)

  it("migrates a fresh SQLite file, serves, and runs a queued job with its worker", function()
    local r = run_in(run, "./bookmarks", "migrate up")
    assert.equal(0, r.code, r.stderr .. r.stdout)
    assert.truthy(files.slurp(run .. "/bookmarks.db"))
    local env = { ZEVER_HOME = false, QUEUE_ADAPTER = "db" }
    local srv = assert(serve.start(run, { "--listen", "127.0.0.1:" .. serve.free_port(),
      "--workers", "1" }, env, "serve", run .. "/bookmarks"))
    local defer = require("spec.support.defer")(finally)
    defer(function() srv:kill() end)
    r = srv:curl("/bookmarks", "-H 'x-user: ann' -d '{\"url\":\"https://example.org/a\"}'")
    assert.matches('"owner":"ann"', r.stdout)
    local worker = io.popen("cd " .. quote(run) .. " && env -u ZEVER_HOME QUEUE_ADAPTER=db " ..
      "./bookmarks worker >worker.log 2>&1 & echo $!")
    local wpid = tonumber(worker:read("*l"))
    worker:close()
    defer(function() os.execute("kill " .. wpid .. " 2>/dev/null") end)
    local titled = serve.wait_for(function()
      local got = srv:curl("/bookmarks/1", "-H 'x-user: ann'").stdout
      return got:match('"title":"example.org"')
    end, 20)
    assert.truthy(titled, files.text(run .. "/worker.log"))
  end)

  it("answers zever doctor --json as a readiness probe: 0 when ready, 1 when not", function()
    local r = run_in(run, "./bookmarks", "migrate up")
    assert.equal(0, r.code, r.stderr)
    r = run_in(run, "./bookmarks", "doctor --json")
    assert.equal(0, r.code, r.stderr .. r.stdout)
    local report = require("zever.json").decode(r.stdout)
    assert.equal("OK", report.rows[1].status)
    r = run_in(run, "./bookmarks", "doctor --json", "DB_DSN=sqlite:/nonexistent-dir/x/y.db")
    assert.equal(1, r.code)
    assert.matches('"FAIL"', r.stdout)
  end)

  it("refuses a damaged payload with a clear error", function()
    local bytes = files.read(exe)
    local host = build.host() -- stripped, as the bundle carries it
    -- One byte of the first file's data, then one byte of the index.
    local at = #host + 11
    local damaged = bytes:sub(1, at - 1) .. string.char((bytes:byte(at) + 1) % 256) ..
      bytes:sub(at + 1)
    files.write(run .. "/damaged", damaged)
    os.execute("chmod 755 " .. quote(run .. "/damaged"))
    local r = run_in(run, "./damaged", "serve")
    assert.equal(1, r.code)
    assert.matches("this bundle is damaged: .- does not match its hash", r.stderr)
    at = #bytes - 60
    damaged = bytes:sub(1, at - 1) .. string.char((bytes:byte(at) + 1) % 256) .. bytes:sub(at + 1)
    files.write(run .. "/damaged", damaged)
    r = run_in(run, "./damaged", "--help")
    assert.equal(1, r.code)
    assert.matches("this bundle is damaged %(the index does not match its hash%)", r.stderr)
  end)

  -- The full check (every file and the host) runs once per process, before the command: a file
  -- that serving would load only later, or never, is refused at start all the same; help, which
  -- skips the full check, loads only what it needs and still runs.
  it("refuses at start a damaged file that the command does not load", function()
    local bytes = files.read(exe)
    local function le(at, n)
      local v = 0
      for i = n, 1, -1 do v = v * 256 + bytes:byte(at + i - 1) end
      return v
    end
    local t = #bytes - 48 + 1
    local host_len, index_off = le(t, 8), le(t + 8, 8)
    local pos, count, target = index_off + 1 + 12, le(index_off + 1, 4), nil
    for _ = 1, count do
      local name_len, off, size = le(pos, 4), le(pos + 4, 8), le(pos + 12, 8)
      local name = bytes:sub(pos + 28, pos + 27 + name_len)
      if name == "lua/zever/workflow.lua" then target = { off = off, size = size } end
      pos = pos + 28 + name_len
    end
    assert(target and target.size > 100, "lua/zever/workflow.lua is in the bundle")
    local at = host_len + target.off + 50
    files.write(run .. "/damaged2", bytes:sub(1, at - 1) ..
      string.char((bytes:byte(at) + 1) % 256) .. bytes:sub(at + 1))
    os.execute("chmod 755 " .. quote(run .. "/damaged2"))
    -- (timeout: were the check skipped, it would serve until stopped)
    local r = process.run("cd " .. quote(run) ..
      " && env -u ZEVER_HOME timeout 60 ./damaged2 serve --listen 127.0.0.1:0")
    assert.equal(1, r.code)
    assert.matches("this bundle is damaged: lua/zever/workflow.lua does not match its hash",
      r.stderr, 1, true)
    r = run_in(run, "./damaged2", "--help")
    assert.equal(0, r.code, r.stderr)
  end)

  it("renders the app's templates and reads its files through zever.assets from the bundle",
    function()
      local app = files.tmpdir({ ["app.lua"] = [[
local zever = require "zever"
local assets = require "zever.assets"
local app = zever.app()
app:get("/hi", function(_, res) return res:render("hi", { name = "zv" }) end)
app:get("/terms", function() return assets.read(app.dir .. "/data/terms.txt") end)
return app
]], ["views/hi.etlua"] = "<p><%= name %></p>", ["data/terms.txt"] = "be nice" }, "zv-bundle-views")
      local defer = require("spec.support.defer")(finally)
      defer(function() files.rm_rf(app) end)
      bundle_of(app, tmp .. "/views-app")
      local dir = files.tmpdir({}, "zv-bundle-views-run")
      defer(function() files.rm_rf(dir) end)
      local srv = assert(serve.start(dir, { "--listen", "127.0.0.1:" .. serve.free_port(),
        "--workers", "1" }, { ZEVER_HOME = false }, "serve", tmp .. "/views-app"))
      defer(function() srv:kill() end)
      assert.equal("<p>zv</p>", srv:curl("/hi").stdout)
      assert.equal("be nice", srv:curl("/terms").stdout)
    end)

  it("leaves out --exclude patterns and default ones, and keeps --include ones", function()
    local app = files.tmpdir({ ["app.lua"] = "return require('zever').app()\n",
      ["notes.md"] = "x", ["docs/a.md"] = "a", ["data.db"] = "db", ["keep.db"] = "k",
      ["static/x.css"] = "c" }, "zv-bundle-app")
    finally(function() files.rm_rf(app) end)
    local out = tmp .. "/globs"
    bundle_of(app, out, { "--exclude", "*.md", "--include", "keep.db" })
    local script = tmp .. "/list.lua"
    files.write(script, "for _, n in ipairs(require('zever.bundle').list('app/')) do print(n) end")
    local r = run_in(run, out, "run " .. quote(script))
    assert.equal(0, r.code, r.stderr)
    assert.equal("app/app.lua\napp/keep.db\napp/static/x.css\n", r.stdout)
  end)
end)

describe("zever.bundle_build", function()
  it("matches globs like gitignore: a bare pattern names a file or folder anywhere", function()
    local rows = {
      { "*.md", "README.md", true }, { "*.md", "docs/a.md", true }, { "*.md", "a.mdx", false },
      { ".*", ".git/config", true }, { "spec/**", "spec/a/b.lua", true },
      { "spec/**", "lib/spec/b.lua", false }, { "docs/*.md", "docs/a.md", true },
      { "docs/*.md", "docs/x/a.md", false }, { "a?c", "abc", true },
    }
    for _, row in ipairs(rows) do
      assert.equal(row[3], build.glob(row[1])(row[2]), row[1] .. " vs " .. row[2])
    end
  end)

  it("normalizes bytecode to a chunk of the same size that builds the same tables", function()
    local src = "local t = { zeta = 1, alpha = 'x', mid = true, [3] = false, n = 2.5 }\n" ..
      "return function() return t, { b = 1, a = 2 } end"
    local bc = string.dump(assert(loadstring(src, "@t.lua")))
    local norm = build.normalize(bc)
    assert.equal(#bc, #norm)
    assert.equal(norm, build.normalize(norm))
    local t, u = loadstring(norm)()()
    assert.same({ zeta = 1, alpha = "x", mid = true, [3] = false, n = 2.5 }, t)
    assert.same({ b = 1, a = 2 }, u)
  end)
end)
