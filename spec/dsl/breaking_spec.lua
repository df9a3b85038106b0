-- dsl.breaking and `zever breaking`: every kind of change classified, and the command on files and
-- on git revisions of a real repository.

local compile = require "dsl.compile"
local breaking = require "dsl.breaking"
local process = require "spec.support.process"
local fs = require "spec.support.files"

local BASE = [[
entity Task {
  id: uuid @primary
  title: string @validate(max_len: 200)
  count: int32
  note: string?
}
enum Priority { low, high }
message Note { text: string }
service TaskService {
  rpc Get(id: uuid) -> Task { http: GET "/v1/tasks/{id}"  auth: none }
  rpc Make(title: string, tag: string?) -> Task { http: POST "/v1/tasks"  auth: required }
}
job Remind(task_id: uuid) { queue: reminders }
]]

local function ir_of(src)
  local r = compile.compile_sources({ ["schema/app/s.zen"] = src }, { "schema/app/s.zen" })
  assert(r.errors == 0, require("dsl.diagnostics").render(r.diags, r.sources))
  return r.ir
end

-- The changes from BASE to BASE with each { from, to } replacement applied, as "level: message".
local function changes(edits)
  local new = BASE
  for _, e in ipairs(edits) do
    local s, n = new:gsub(e[1]:gsub("%p", "%%%0"), (e[2]:gsub("%%", "%%%%")), 1)
    assert(n == 1, "no " .. e[1])
    new = s
  end
  local out = {}
  for _, c in ipairs(breaking.compare(ir_of(BASE), ir_of(new))) do
    out[#out + 1] = c.level .. ": " .. c.subject .. ": " .. c.message
  end
  return out
end

describe("dsl.breaking", function()
  local rows = {
    { "nothing for the same schema", {}, {} },
    { "a removed field", { { "  note: string?\n", "" } }, { "breaking: entity app.Task: note removed" } },
    { "an added optional field as additive", { { "  note: string?\n", "  note: string?\n  x: int64?\n" } },
      { "additive: entity app.Task: x: int64? added" } },
    { "an added required field", { { "  note: string?\n", "  note: string?\n  x: int64\n" } },
      { "breaking: entity app.Task: required field x: int64 added (no default)" } },
    { "an added field with a default as additive",
      { { "  note: string?\n", "  note: string?\n  x: int64 @default(0)\n" } },
      { "additive: entity app.Task: x: int64 added" } },
    { "a narrowed type", { { "count: int32", "count: string" } },
      { "breaking: entity app.Task: count changed type int32 -> string" } },
    { "a widened type as additive", { { "count: int32", "count: int64" } },
      { "additive: entity app.Task: count widened int32 -> int64" } },
    { "optional made required", { { "note: string?", "note: string" } },
      { "breaking: entity app.Task: note changed type string? -> string" } },
    { "a tightened @validate", { { "max_len: 200", "max_len: 20" } },
      { "breaking: entity app.Task: title: @validate(max_len) tightened" } },
    { "a removed enum value", { { "low, high", "low" } },
      { "breaking: enum app.Priority: value high removed" } },
    { "an added enum value as additive", { { "low, high", "low, high, urgent" } },
      { "additive: enum app.Priority: value urgent added" } },
    { "a removed rpc", { { '  rpc Get(id: uuid) -> Task { http: GET "/v1/tasks/{id}"  auth: none }\n', "" } },
      { "breaking: rpc TaskService.Get: rpc TaskService.Get removed" } },
    { "a changed path", { { '"/v1/tasks/{id}"', '"/v2/tasks/{id}"' } },
      { "breaking: rpc TaskService.Get: route changed GET /v1/tasks/{id} -> GET /v2/tasks/{id}" } },
    { "a changed verb", { { "GET", "PUT" } },
      { "breaking: rpc TaskService.Get: route changed GET /v1/tasks/{id} -> PUT /v1/tasks/{id}" } },
    { "auth tightened", { { "auth: none", "auth: required" } },
      { "breaking: rpc TaskService.Get: auth tightened none -> required" } },
    { "a required input added", { { "tag: string?)", "tag: string?, size: int32)" } },
      { "breaking: rpc TaskService.Make: required input size: int32 added (no default)" } },
    { "an input removed as additive", { { "title: string, tag: string?", "title: string" } },
      { "additive: rpc TaskService.Make: input tag removed (clients that send it are ignored)" } },
    { "a removed message", { { "message Note { text: string }\n", "" } },
      { "breaking: message app.Note: message app.Note removed" } },
    { "an added entity as additive", { { "enum Priority", "entity Tag { id: uuid @primary }\nenum Priority" } },
      { "additive: entity app.Tag: entity app.Tag added" } },
    { "a job's queue changed", { { "queue: reminders", "queue: other" } },
      { "breaking: job app.Remind: queue changed reminders -> other" } },
  }
  for _, row in ipairs(rows) do
    it("reports " .. row[1], function()
      assert.are.same(row[3], changes(row[2]))
    end)
  end

  it("lists breaking changes first", function()
    local list = changes({ { "low, high", "low, urgent" } })
    assert.are.same({ "breaking: enum app.Priority: value high removed",
      "additive: enum app.Priority: value urgent added" }, list)
  end)
end)

describe("zever breaking", function()
  local dir

  local function git(args)
    local r = process.run("cd " .. process.quote(dir) .. " && git -c user.name=t -c user.email=t@t.example "
      .. args)
    assert(r.code == 0, r.stderr)
    return r
  end

  local function zever(args)
    return process.run("cd " .. process.quote(dir) .. " && " .. process.quote(require("zever.sys").exe())
      .. " breaking " .. args)
  end

  before_each(function()
    dir = fs.tmpdir()
    assert(os.execute("mkdir -p " .. process.quote(dir .. "/schema/app")))
    fs.write(dir .. "/schema/app/s.zen", BASE)
    git("init -q .")
    git("add schema")
    git("commit -q -m one")
  end)

  after_each(function() fs.rm_rf(dir) end)

  it("compares the working tree with a git revision: exit 0 when nothing broke", function()
    fs.write(dir .. "/schema/app/s.zen", BASE:gsub("low, high", "low, high, urgent"))
    local r = zever("HEAD")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("schema/app/s.zen:7:28: additive: enum app.Priority: value urgent added\n", r.stdout)
    assert.matches("1 change, 0 breaking", r.stderr, 1, true)
  end)

  it("exits 1 on a breaking change between two revisions, with --json", function()
    fs.write(dir .. "/schema/app/s.zen", BASE:gsub("  note: string%?\n", ""))
    git("commit -q -am two")
    local r = zever("--json HEAD~1 -- HEAD")
    assert.are.equal(1, r.code, r.stderr)
    local rows = require("zever.json").decode(r.stdout)
    assert.are.equal(1, #rows)
    assert.are.equal("breaking", rows[1].level)
    assert.are.equal("note removed", rows[1].message)
    assert.are.equal("entity app.Task", rows[1].subject)
  end)

  it("compares two files", function()
    fs.write(dir .. "/new.zen", BASE:gsub("count: int32", "count: int64"))
    fs.write(dir .. "/old.zen", BASE)
    local r = zever("old.zen -- new.zen")
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("additive: entity main.Task: count widened int32 -> int64", r.stdout, 1, true)
  end)

  it("exits 2 naming what is neither a path nor a revision, or a version that does not compile", function()
    local r = zever("nope")
    assert.are.equal(2, r.code)
    assert.matches("nope is neither a path nor a git revision", r.stderr, 1, true)
    fs.write(dir .. "/schema/app/s.zen", "entity {")
    r = zever("HEAD")
    assert.are.equal(2, r.code)
    assert.matches("(new) does not compile", r.stderr, 1, true)
  end)
end)
