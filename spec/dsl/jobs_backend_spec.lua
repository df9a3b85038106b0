local parser = require "dsl.parser"
local resolver = require "dsl.resolver"
local backend = require "dsl.backends.jobs"
local zever = require "zever"
local json = require "zever.json"
local process = require "spec.support.process"

local SCHEMA = [[
job SendReminder(task_id: uuid) { queue: reminders  retry: max_attempts(5), backoff(exponential, base: 10s, max: 1h) }
job Poll() { retry: max_attempts(2), backoff(fixed, base: 30s)  timeout: 2m }
job Rebuild(kind: string, full: bool?) { queue: search }
schedule Nightly { cron: "30 2 * * *"  dispatch: Rebuild(kind: "all", full: true) }
schedule Hourly { cron: "@hourly"  dispatch: Poll() }
]]

local function compile(src, file)
  local ir, diags = resolver.resolve({ (parser.parse(src, file or "schema/app.zen")) })
  for _, d in ipairs(diags) do
    assert(d.severity == "warning", "schema error: " .. d.message)
  end
  return ir
end

local function load_module(src)
  return assert(loadstring(src, "=jobs.lua"))()
end

local function handlers(names, calls)
  local out = {}
  for _, name in ipairs(names) do
    out[name] = function(args, job) calls[#calls + 1] = { name = name, args = args, job = job } end
  end
  return out
end

describe("dsl.backends.jobs", function()
  local files = assert(backend.generate(compile(SCHEMA)))
  local mod = load_module(files["jobs.lua"])

  it("writes jobs.lua and a handler stub written only once", function()
    local stub = files["handlers/jobs.lua"]
    assert.are.equal(true, stub.once)
    for _, name in ipairs({ "SendReminder", "Poll", "Rebuild" }) do
      assert.is_truthy(stub.content:find('M["' .. name .. '"] = function(args, job)', 1, true), name)
    end
  end)

  it("produces the same bytes on every run and Lua that luacheck passes", function()
    local again = assert(backend.generate(compile(SCHEMA)))
    assert.are.equal(files["jobs.lua"], again["jobs.lua"])
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write(files["jobs.lua"], "\n")
    f:close()
    local r = process.run("luacheck --no-config --std luajit " .. process.quote(path))
    os.remove(path)
    assert.are.equal(0, r.code, r.stdout)
  end)

  it("registers each job with the retry policy, queue and timeout of the schema", function()
    local app = zever.app()
    mod.register(app, handlers({ "SendReminder", "Poll", "Rebuild" }, {}))
    local rows = {
      -- name, attempts, base, cap, queue, timeout (seconds)
      { "SendReminder", 5, 10, 3600, "reminders", 30 },
      { "Poll", 2, 30, 30, "default", 120 },
      { "Rebuild", 3, 10, 600, "search", 30 },
    }
    for _, row in ipairs(rows) do
      local h = app.jobs:handler(row[1])
      assert.is_table(h, row[1])
      assert.are.same({ row[1], row[2], row[3], row[4], row[5], row[6] },
        { h.name, h.attempts, h.base, h.cap, h.queue, h.timeout })
      assert.are.equal("jobs:" .. row[5], h.topic)
    end
  end)

  it("registers each schedule with the scheduler, with the dispatch arguments", function()
    local app = zever.app()
    mod.register(app, handlers({ "SendReminder", "Poll", "Rebuild" }, {}))
    local list = app.scheduler:list(0)
    table.sort(list, function(a, b) return a.job < b.job end)
    assert.are.same({
      { kind = "cron", spec = "@hourly", job = "Poll", next = 3600 },
      { kind = "cron", spec = "30 2 * * *", job = "Rebuild", args = { kind = "all", full = true },
        next = 2 * 3600 + 30 * 60 },
    }, list)
  end)

  it("dispatches the scheduled job onto its queue when the slot comes, and the handler runs it", function()
    local app = zever.app()
    local calls = {}
    local h = handlers({ "SendReminder", "Poll", "Rebuild" }, calls)
    mod.register(app, h)
    assert.are.equal(0, app.scheduler:tick(0))
    -- 02:30: Nightly's slot, and Hourly's 02:00 one (01:00 was missed: skipped, not replayed).
    assert.are.equal(2, app.scheduler:tick(2 * 3600 + 30 * 60))
    assert.are.same({ name = "Poll" }, json.decode(assert(app.queue:pop("jobs:default")).payload))
    local msg = assert(app.queue:pop("jobs:search"))
    local payload = json.decode(msg.payload)
    assert.are.same({ name = "Rebuild", args = { kind = "all", full = true } }, payload)
    app.jobs:handler(payload.name).fn(payload.args, { name = payload.name })
    assert.are.same({ kind = "all", full = true }, calls[1].args)
  end)

  it("raises naming a job without a handler", function()
    local ok, err = pcall(mod.register, zever.app(), handlers({ "Poll", "Rebuild" }, {}))
    assert.is_false(ok)
    assert.is_truthy(err:find("no handler for job SendReminder (handlers/jobs.lua)", 1, true))
  end)

  it("registers the tasks.zen fixture's jobs and its daily digest", function()
    local f = assert(io.open("dsl/testdata/tasks.zen", "rb"))
    local src = f:read("*a")
    f:close()
    local m = load_module(assert(backend.generate(compile(src, "dsl/testdata/tasks.zen")))["jobs.lua"])
    local app = zever.app()
    m.register(app, handlers({ "SendReminder", "SendDigest" }, {}))
    local h = app.jobs:handler("SendReminder")
    assert.are.same({ 5, 10, "reminders" }, { h.attempts, h.base, h.queue })
    assert.are.equal("digests", app.jobs:handler("SendDigest").queue)
    local list = app.scheduler:list(0)
    assert.are.same({ { kind = "cron", spec = "0 9 * * *", job = "SendDigest", next = 9 * 3600 } }, list)
  end)

  describe("argument", function()
    local rows = {
      { 'kind="all"', "kind", "all" },
      { 'note="a \\"b\\"\\n"', "note", 'a "b"\n' },
      { "n=42", "n", 42 },
      { "x=1.5", "x", 1.5 },
      { "full=true", "full", true },
      { "level=high", "level", "high" },
      { "every=10s", "every", "10s" },
    }
    for _, row in ipairs(rows) do
      it("reads " .. row[1] .. " as a Lua value", function()
        local k, v = backend.argument(row[1])
        assert.are.same({ row[2], row[3] }, { k, v })
      end)
    end
  end)
end)
