-- The CLI's contract, walked over every command the index lists (cmd.zever.names(): the files of
-- cmd/zever/, the same list `make` writes to build/commands.lua), so that a new command cannot
-- drift: each declares json and dry_run (zever.cli.output); each subcommand declared as printing
-- data runs here with --json on a temporary app and prints one valid JSON document; each declared
-- as writing runs here with --dry-run and changes nothing (every file of the app folder, the
-- SQLite database among them, has the same bytes before and after). A declared subcommand with no
-- case below fails the spec: add its case when you add the command.

local process = require "spec.support.process"
local fs = require "spec.support.files"
local json = require "zever.json"
local sys = require "zever.sys"

local quote = process.quote

-- "command sub" (sub "" for a command declared true) -> the arguments after the command name.
-- {APP} is the app folder, {OUT} a scratch folder outside it.
local JSON_CASES = {
  ["add "] = { "add", "session/db" },
  ["breaking "] = { "breaking", "schema/app.zen" },
  ["bundle "] = { "bundle" },
  ["check "] = { "check" },
  ["check-boundaries "] = { "check-boundaries" },
  ["config show"] = { "config", "show" },
  ["doctor "] = { "doctor" },
  ["explain "] = { "explain", "Things.List" },
  ["fmt "] = { "fmt" },
  ["gen "] = { "gen" },
  ["generate "] = { "generate", "entity", "Post", "title:string" },
  ["graph "] = { "graph" },
  ["help "] = { "help", "migrate" },
  ["jobs failed"] = { "jobs", "failed" },
  ["jobs retry"] = { "jobs", "retry", "1" },
  ["jobs forget"] = { "jobs", "forget", "--all" },
  ["mail test"] = { "mail", "test", "--to", "a@example.com" },
  ["migrate status"] = { "migrate", "status" },
  ["migrate up"] = { "migrate", "up" },
  ["migrate down"] = { "migrate", "down" },
  ["migrate new"] = { "migrate", "new", "another" },
  ["new "] = { "new", "inner" },
  ["outbox status"] = { "outbox", "status" },
  ["outbox relay"] = { "outbox", "relay" },
  ["outbox dlq"] = { "outbox", "dlq", "list" },
  ["outbox purge"] = { "outbox", "purge", "--before", "1h" },
  ["routes "] = { "routes" },
  ["saga "] = { "saga", "status", "run-1" },
  ["schedule list"] = { "schedule", "list" },
  ["search reindex"] = { "search", "reindex" },
  ["search optimize"] = { "search", "optimize" },
  ["systemd-unit "] = { "systemd-unit" },
  ["version "] = { "version" },
  ["workflow "] = { "workflow", "list" },
}

local DRY_CASES = {
  ["add "] = { "add", "jobs" },
  ["bundle "] = { "bundle" },
  ["fmt "] = { "fmt", "--write" },
  ["gen "] = { "gen" },
  ["generate "] = { "generate", "entity", "Post", "title:string" },
  ["jobs retry"] = { "jobs", "retry", "--all" },
  ["jobs forget"] = { "jobs", "forget", "1" },
  ["mail test"] = { "mail", "test", "--to", "a@example.com" },
  ["migrate up"] = { "migrate", "up" },
  ["migrate down"] = { "migrate", "down", "-n", "2" },
  ["migrate new"] = { "migrate", "new", "another" },
  ["new "] = { "new", "inner" },
  ["outbox relay"] = { "outbox", "relay" },
  ["outbox dlq"] = { "outbox", "dlq", "requeue", "--all" },
  ["outbox purge"] = { "outbox", "purge", "--before", "1h" },
  ["saga retry"] = { "saga", "retry", "run-1" },
  ["search reindex"] = { "search", "reindex" },
  ["search optimize"] = { "search", "optimize" },
  ["systemd-unit "] = { "systemd-unit", "-o", "{OUT}" },
  ["workflow start"] = { "workflow", "start", "greet", "--input", "{}" },
  ["workflow signal"] = { "workflow", "signal", "run-1", "go", "--value", "true" },
  ["workflow cancel"] = { "workflow", "cancel", "run-1" },
  ["workflow retry"] = { "workflow", "retry", "run-1" },
  ["workflow purge"] = { "workflow", "purge", "--before", "1h" },
}

local function zever_in(dir, args, extra)
  local parts = { "cd " .. quote(dir) .. " && " .. quote(sys.exe()) }
  for _, a in ipairs(args) do parts[#parts + 1] = quote(a) end
  for _, a in ipairs(extra or {}) do parts[#parts + 1] = quote(a) end
  return process.run(table.concat(parts, " "))
end

-- path -> md5 of every file under dir (the database file and any -wal/-shm next to it included).
local function checksum(dir)
  local out = process.output("cd " .. quote(dir) .. " && find . -type f -print0 | sort -z | xargs -0 md5sum")
  local map = {}
  for sum, path in out:gmatch("(%x+)%s+([^\n]+)") do map[path] = sum end
  return map
end

local function cases_of(cmd, kind)
  local v = cmd[kind]
  if v == true then return { "" } end
  if type(v) == "table" then return v end
  return {}
end

describe("the CLI contract #cli", function()
  local root, template, out

  -- One app with something in every battery the commands read: a migration applied and one
  -- pending, a failed job, a search document, a delivered and a dead outbox message, a workflow
  -- run (run-1, waiting for a signal) in the db store.
  setup(function()
    root = fs.tmpdir()
    out = root .. "/out"
    os.execute("mkdir -p " .. quote(out))
    template = root .. "/tpl"
    local r = zever_in(root, { "new", "tpl", "--batteries", "db,cache,queue,jobs,scheduler,search,mailer" })
    assert(r.code == 0, r.stderr)
    local yaml = fs.read(template .. "/zever.yaml")
    fs.write(template .. "/zever.yaml", yaml .. "outbox:\n  adapter: db\nworkflow:\n  adapter: db\n")
    local app_lua, patched = fs.read(template .. "/app.lua"):gsub("\nreturn app\n$", [[

app.workflow:define("greet", function(ctx) return ctx:wait("go") end)

return app
]])
    assert(patched == 1, "app.lua of zever new no longer ends in return app")
    fs.write(template .. "/app.lua", app_lua)
    r = zever_in(template, { "add", "jobs" })
    assert(r.code == 0, r.stdout .. r.stderr)
    r = zever_in(template, { "migrate", "new", "second" })
    assert(r.code == 0, r.stderr)
    r = zever_in(template, { "migrate", "up" })
    assert(r.code == 0, r.stderr)
    r = zever_in(template, { "migrate", "new", "pending_one" })
    assert(r.code == 0, r.stderr)
    r = zever_in(template, { "generate", "rpc", "Things.List" })
    assert(r.code == 0, r.stdout .. r.stderr)
    r = zever_in(template, { "gen" })
    assert(r.code == 0, r.stderr)
    fs.write(template .. "/seed.lua", [[
local app = require("zever.app").load("app.lua", (require("zever.config.paths").cwd()))
assert(app.search:index({ id = "1", content = "hello world" }))
assert(app.search:flush())
app.db:exec("INSERT INTO failed_jobs (queue, name, args, error, attempts, failed_at) VALUES (?, ?, ?, ?, ?, ?)",
  "default", "SendMail", "[]", "boom", 3, 1700000000)
local ob = app.outbox
assert(app.db:transaction(function(tx) return ob:record(tx, { topic = "t", key = "k", payload = { n = 1 } }) end))
app:close()
]])
    r = zever_in(template, { "run", "seed.lua" })
    assert(r.code == 0, r.stdout .. r.stderr)
    r = zever_in(template, { "workflow", "start", "greet", "--id", "run-1" })
    assert(r.code == 0, r.stdout .. r.stderr)
    os.remove(template .. "/seed.lua")
    -- outbox status creates its table on first use: once here, so the dry runs start from it.
    r = zever_in(template, { "outbox", "status" })
    assert(r.code == 0, r.stdout .. r.stderr)
  end)

  teardown(function()
    if root then os.execute("rm -rf " .. quote(root)) end
  end)

  -- A fresh copy of the template for one case.
  local function copy(name)
    local dir = root .. "/" .. name
    os.execute("rm -rf " .. quote(dir) .. " && cp -a " .. quote(template) .. " " .. quote(dir))
    return dir
  end

  local function fill(args, dir)
    local list = {}
    for i, a in ipairs(args) do list[i] = a:gsub("{OUT}", out):gsub("{APP}", dir) end
    return list
  end

  local dispatch = require "cmd.zever"

  it("every command declares json and dry_run", function()
    local names = dispatch.names()
    assert.is_true(#names > 20)
    for _, name in ipairs(names) do
      local cmd = dispatch.load(name)
      assert.is_not_nil(cmd.json, name .. ": declare json = true | false | { subcommands }")
      assert.is_not_nil(cmd.dry_run, name .. ": declare dry_run = true | false | { subcommands }")
      if not dispatch.declared(cmd, "json") and not dispatch.declared(cmd, "dry_run") then
        assert.is_string(cmd.why, name .. ": neither --json nor --dry-run: say why")
      end
    end
  end)

  it("has a case for every declared --json and --dry-run", function()
    for _, name in ipairs(dispatch.names()) do
      local cmd = dispatch.load(name)
      for _, sub in ipairs(cases_of(cmd, "json")) do
        assert.is_table(JSON_CASES[name .. " " .. sub], "no --json case for " .. name .. " " .. sub)
      end
      for _, sub in ipairs(cases_of(cmd, "dry_run")) do
        assert.is_table(DRY_CASES[name .. " " .. sub], "no --dry-run case for " .. name .. " " .. sub)
      end
    end
  end)

  it("prints one JSON document for every command declared to print data", function()
    local ran = 0
    for _, name in ipairs(dispatch.names()) do
      local cmd = dispatch.load(name)
      for _, sub in ipairs(cases_of(cmd, "json")) do
        local key = name .. " " .. sub
        local dir = copy("json")
        local r = zever_in(dir, fill(JSON_CASES[key], dir), { "--json" })
        assert.are.equal(0, r.code, key .. ": " .. r.stdout .. r.stderr)
        local doc, err = json.decode(r.stdout)
        assert.is_not_nil(doc, key .. ": not JSON (" .. tostring(err) .. "): " .. r.stdout)
        assert.is_nil(r.stdout:find("\27[", 1, true), key .. ": colour in --json output")
        ran = ran + 1
      end
    end
    assert.is_true(ran >= 25, "ran " .. ran)
  end)

  it("changes nothing with --dry-run for every command declared to write", function()
    local ran = 0
    for _, name in ipairs(dispatch.names()) do
      local cmd = dispatch.load(name)
      for _, sub in ipairs(cases_of(cmd, "dry_run")) do
        local key = name .. " " .. sub
        local dir = copy("dry")
        local before = checksum(dir)
        local outs = process.output("ls -A " .. quote(out))
        local r = zever_in(dir, fill(DRY_CASES[key], dir), { "--dry-run" })
        assert.are.equal(0, r.code, key .. ": " .. r.stdout .. r.stderr)
        assert.are_not.equal("", r.stdout, key .. ": a dry run says what it would do")
        assert.are.same(before, checksum(dir), key .. ": --dry-run changed the app folder")
        assert.are.equal(outs, process.output("ls -A " .. quote(out)), key .. ": wrote outside the app")
        -- The same with --json, where the command prints data too: one document.
        if dispatch.supports(cmd, "json", sub ~= "" and sub or nil) then
          r = zever_in(dir, fill(DRY_CASES[key], dir), { "--dry-run", "--json" })
          assert.are.equal(0, r.code, key .. ": " .. r.stderr)
          assert.is_not_nil(json.decode(r.stdout), key .. " --dry-run --json: " .. r.stdout)
          assert.are.same(before, checksum(dir), key .. ": --dry-run --json changed the app folder")
        end
        ran = ran + 1
      end
    end
    assert.is_true(ran >= 15, "ran " .. ran)
  end)

  it("says what a dry run would do, and then does it", function()
    local dir = copy("real")
    local r = zever_in(dir, { "migrate", "up", "--dry-run", "--json" })
    assert.are.equal(0, r.code, r.stderr)
    local plan = json.decode(r.stdout)
    assert.are.equal(1, #plan.actions)
    assert.are.equal("apply", plan.actions[1].action)
    assert.matches("_pending_one$", plan.actions[1].target)
    r = zever_in(dir, { "migrate", "up", "--json" })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.same({ applied = { plan.actions[1].target } }, json.decode(r.stdout))
    r = zever_in(dir, { "jobs", "retry", "--all", "--dry-run", "--json" })
    local jobs = json.decode(r.stdout)
    assert.are.equal(1, #jobs.actions)
    assert.are.equal("SendMail", jobs.actions[1].name)
    r = zever_in(dir, { "jobs", "retry", "--all", "--json" })
    assert.are.same({ retried = 1 }, json.decode(r.stdout))
    r = zever_in(dir, { "jobs", "failed", "--json" })
    assert.are.equal("[]\n", r.stdout)
  end)

  it("bundle, workflow and saga: JSON documents, and dry runs that write nothing", function()
    local dir = copy("wfjson")
    local r = zever_in(dir, { "workflow", "list", "--json" })
    assert.are.equal(0, r.code, r.stderr)
    local runs = json.decode(r.stdout)
    assert.are.equal(1, #runs)
    assert.are.same({ id = "run-1", name = "greet", status = "pending", attempts = 0 }, runs[1])
    r = zever_in(dir, { "workflow", "status", "run-1", "--json" })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("greet", json.decode(r.stdout).name)
    r = zever_in(dir, { "saga", "status", "run-1", "--json" })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.same({}, json.decode(r.stdout).steps)
    -- start: an undefined workflow fails the dry run as it fails the real one.
    r = zever_in(dir, { "workflow", "start", "nope", "--dry-run", "--json" })
    assert.are.equal(1, r.code)
    assert.matches('no workflow named "nope"', json.decode(r.stderr).error.message, 1, true)
    r = zever_in(dir, { "workflow", "start", "greet", "--id", "run-2", "--dry-run", "--json" })
    assert.are.same({ dry_run = true, actions = { { action = "start", target = "greet as run-2",
      name = "greet", id = "run-2" } } }, json.decode(r.stdout))
    r = zever_in(dir, { "workflow", "start", "greet", "--id", "run-2", "--json" })
    assert.are.same({ id = "run-2" }, json.decode(r.stdout))
    r = zever_in(dir, { "workflow", "cancel", "run-2", "--json" })
    assert.are.same({ cancelled = "run-2" }, json.decode(r.stdout))
    r = zever_in(dir, { "workflow", "list", "--json" })
    assert.are.equal(2, #json.decode(r.stdout))
    -- bundle: the dry run reports the file's size and hash and makes neither it nor dist/.
    r = zever_in(dir, { "bundle", "-o", "dist/app", "--dry-run", "--json" })
    assert.are.equal(0, r.code, r.stderr)
    local plan = json.decode(r.stdout).actions[1]
    assert.are.equal("dist/app", plan.path)
    assert.is_false(sys.isdir(dir .. "/dist"))
    r = zever_in(dir, { "bundle", "-o", "dist/app", "--json" })
    assert.are.equal(0, r.code, r.stderr)
    local built = json.decode(r.stdout)
    assert.are.same({ plan.path, plan.files, plan.bytes, plan.hash },
      { built.path, built.files, built.bytes, built.hash })
    assert.are.equal(built.bytes, #fs.read(dir .. "/dist/app"))
    -- On the memory store a list in another process is always empty: it says so (not under --json).
    local yaml = fs.read(dir .. "/zever.yaml")
    fs.write(dir .. "/zever.yaml", (yaml:gsub("workflow:\n  adapter: db", "workflow:\n  adapter: memory")))
    r = zever_in(dir, { "workflow", "list" })
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("no runs\n", r.stdout)
    assert.matches("workflow.adapter is memory", r.stderr, 1, true)
    r = zever_in(dir, { "workflow", "list", "--json" })
    assert.are.same({ "[]\n", "" }, { r.stdout, r.stderr })
  end)

  it("refuses --dry-run and --json where they do not apply (exit 2), as JSON under --json", function()
    local dir = copy("refuse")
    local r = zever_in(dir, { "migrate", "status", "--dry-run" })
    assert.are.equal(2, r.code)
    assert.matches('flag "--dry-run" does not apply to "migrate status" (only up, down, new)', r.stderr, 1, true)
    r = zever_in(dir, { "serve", "--json" })
    assert.are.equal(2, r.code)
    assert.matches('unknown flag "--json" for "serve"', r.stderr, 1, true)
    r = zever_in(dir, { "migrate", "status", "--dry-run", "--json" })
    assert.are.equal(2, r.code)
    assert.are.equal("", r.stdout)
    local e = json.decode(r.stderr)
    assert.are.same({ command = "migrate", exit = 2,
      message = 'flag "--dry-run" does not apply to "migrate status" (only up, down, new)' }, e.error)
  end)

  it("prints a failure as one JSON object on stderr with the exit code, secrets redacted", function()
    local dir = copy("fail")
    local r = zever_in(dir, { "migrate", "status", "--json", "--dsn", "postgres://app:hunter2@127.0.0.1:1/app" })
    assert.are.equal(1, r.code)
    assert.are.equal("", r.stdout)
    local e = assert(json.decode(r.stderr), r.stderr)
    assert.are.equal("migrate", e.error.command)
    assert.are.equal(1, e.error.exit)
    assert.is_nil(r.stderr:find("hunter2", 1, true))
    r = zever_in(dir, { "jobs", "retry", "99", "--json" })
    assert.are.equal(1, r.code)
    assert.are.same({ command = "jobs", exit = 1, message = "retry: no failed job with id 99" },
      json.decode(r.stderr).error)
  end)
end)
