local parser = require "dsl.parser"
local resolver = require "dsl.resolver"
local ir = require "dsl.ir"
local diagnostics = require "dsl.diagnostics"
local golden = require "spec.dsl.golden"

-- The resolver's diagnostics for src (one file, t.zen) as "line:col message".
local function messages(src)
  local tree = parser.parse(src, "t.zen")
  local _, diags = resolver.resolve(tree)
  diagnostics.sort(diags)
  local out = {}
  for _, d in ipairs(diags) do
    out[#out + 1] = string.format("%d:%d %s%s", d.line, d.col,
      d.severity == "warning" and "warning: " or "", d.message)
  end
  return out
end

local function resolve(src)
  local tree = parser.parse(src, "t.zen")
  return resolver.resolve(tree)
end

describe("dsl.resolver", function()
  describe("golden fixtures", function()
    for _, name in ipairs(golden.fixtures()) do
      local base = golden.dir .. "/" .. name
      it("resolves " .. name .. ".zen into " .. name .. ".ir and " .. name .. ".resolve.diag", function()
        local src = assert(golden.read(base .. ".zen"))
        local file = "dsl/testdata/" .. name .. ".zen"
        local out, diags = resolver.resolve({ (parser.parse(src, file)) })
        local ir_text = ir.dump(out)
        local diag_text = diagnostics.render(diags, { [file] = src })
        assert.are.equal(golden.expected(base .. ".ir", ir_text), ir_text)
        assert.are.equal(golden.expected(base .. ".resolve.diag", diag_text), diag_text)
      end)
    end

    it("reports every error of resolve_errors.zen in the resolve phase, sorted", function()
      local src = golden.read(golden.dir .. "/resolve_errors.zen")
      local tree, pdiags = parser.parse(src, "e.zen")
      assert.are.same({}, pdiags)
      local _, diags = resolver.resolve(tree)
      local errors, warnings = diagnostics.count(diags)
      assert.is_true(errors >= 50)
      assert.are.equal(1, warnings)
      for _, d in ipairs(diags) do assert.are.equal("resolve", d.phase) end
    end)
  end)

  describe("resolve", function()
    it("resolves a module split over files and types of another module", function()
      local a = parser.parse("entity User { id: uuid @primary }", "schema/accounts/user.zen")
      local b = parser.parse("entity Task {\n  id: int64 @primary\n"
        .. "  belongs_to owner: accounts.User? @on_delete(set_null)\n}\n"
        .. "entity Note { id: int64 @primary\n  has_many tasks: Task @foreign_key(note_id) }", "schema/tasks/task.zen")
      local c = parser.parse("entity Step { id: int64 @primary\n  belongs_to task: Task }", "schema/tasks/step.zen")
      local out, diags = resolver.resolve({ a, b, c })
      assert.are.same({ "accounts", "tasks" }, out.modules)
      local task = out.entities[4]
      assert.are.equal("Task", task.name)
      assert.are.same({ "id", "owner_id" }, { task.columns[1].name, task.columns[2].name })
      assert.are.equal("uuid?", task.columns[2].type)
      assert.are.same({ kind = "foreign_key", name = "owner_id", line = 3, col = 3, columns = { "owner_id" },
        references = "users", references_columns = { "id" }, on_delete = "set_null" }, task.foreign_keys[1])
      assert.are.same({ "6:3 has_many tasks: Task has no column note_id (add belongs_to note: Note @foreign_key(note_id))" },
        (function()
          local out2 = {}
          for _, d in ipairs(diags) do out2[#out2 + 1] = d.line .. ":" .. d.col .. " " .. d.message end
          return out2
        end)())
      assert.are.equal("schema/tasks/task.zen", diags[1].file)
    end)

    it("builds an IR sorted by name with snake_case plural tables and HTTP statuses", function()
      local out = resolve("enum Kind { a }\nentity Category { id: int32 @primary\n  kind: Kind @default(a) }\n"
        .. "entity BlogPost { id: int32 @primary }\nservice S { rpc G(id: int32) -> BlogPost {\n"
        .. "  http: GET \"/p/{id}\"  auth: none  errors: { not_found, resource_exhausted(\"slow down\") } } }")
      assert.are.same({ "BlogPost", "Category" }, { out.entities[1].name, out.entities[2].name })
      assert.are.same({ "blog_posts", "categories" }, { out.entities[1].table, out.entities[2].table })
      assert.are.equal("a", out.entities[2].columns[2].default_name)
      local rpc = out.services[1].rpcs[1]
      assert.are.same({ "GET", "/p/{id}", "none" }, { rpc.method, rpc.path, rpc.auth })
      assert.are.same({ 404, 429 }, { rpc.errors[1].status, rpc.errors[2].status })
      assert.are.equal("slow down", rpc.errors[2].message)
    end)

    it("is deterministic: the same input gives the same dump", function()
      local src = golden.read(golden.dir .. "/resolve_errors.zen")
      local first = ir.dump((resolve(src)))
      for _ = 1, 5 do assert.are.equal(first, ir.dump((resolve(src)))) end
    end)

    it("survives truncation of a fixture at every byte", function()
      local src = golden.read(golden.dir .. "/resolve_errors.zen")
      for i = 0, #src, 3 do
        local tree = parser.parse(src:sub(1, i), "t.zen")
        local ok, err = pcall(resolver.resolve, tree)
        assert.is_true(ok, err)
      end
    end)

    it("raises on a non-table argument", function()
      assert.has_error(function() resolver.resolve("x") end, "resolve: trees must be a table")
    end)

    -- { name, input, diagnostics }
    local rows = {
      { "nothing for a valid schema",
        "entity A { id: uuid @primary\n  b: string? @validate(min_len: 1) @default(\"x\") }", {} },
      { "an unknown type with a did-you-mean",
        "entity A { id: uuid @primary\n  b: int }", { "2:6 unknown type int (did you mean int32?)" } },
      { "an optional primary key",
        "entity A { id: uuid? @primary }", { "1:22 the @primary field id cannot be optional" } },
      { "an int32 default out of range",
        "entity A { id: uuid @primary\n  n: int32 @default(3000000000) }",
        { "2:21 @default of n must be an integer in the int32 range, found an integer 3000000000" } },
      { "a bad uuid default",
        "entity A { id: uuid @primary @default(\"nope\") }",
        { "1:39 @default of id must be a uuid string, found a string \"nope\"" } },
      { "gt on a string",
        "entity A { id: uuid @primary\n  s: string @validate(gt: 1) }",
        { "2:23 @validate(gt) applies to numbers, not string (s)" } },
      { "set_null on a required foreign key it creates",
        "entity U { id: uuid @primary }\nentity A { id: uuid @primary\n  belongs_to u: U @on_delete(set_null) }",
        { "3:19 @on_delete(set_null) needs the foreign key u_id to be optional (write belongs_to u: U?)" } },
      { "an unknown relation target",
        "entity A { id: uuid @primary\n  has_many bs: Bee }", { "2:16 unknown type Bee" } },
      { "a has_many whose other side names a different column",
        "entity U { id: uuid @primary\n  has_many as: A }\nentity A { id: uuid @primary\n"
          .. "  belongs_to owner: U @foreign_key(owner_ref) }",
        { "2:3 has_many as uses the foreign key u_id but A belongs_to owner uses owner_ref" } },
      { "a route parameter that is not an input",
        "service S { rpc G(id: uuid) { http: GET \"/x/{idd}\"  auth: none } }",
        { "1:41 path parameter {idd} is not an input of G (did you mean id?)" } },
      { "two rpcs on one method and path shape",
        "service S { rpc G(a: uuid) { http: GET \"/x/{a}\"  auth: none }\n"
          .. "  rpc H(b: uuid) { http: GET \"/x/{b}\"  auth: none } }",
        { "2:26 route GET /x/{b} is already served by S.G at t.zen:1:36" } },
      { "a missing auth",
        "service S { rpc G() }", { '1:13 rpc G has no auth: say auth: required, auth: none or permission: "..." '
          .. "(secure by default)" } },
      { "an unknown error code",
        "service S { rpc G() { auth: none  errors: { permision_denied } } }",
        { "1:45 unknown error code permision_denied (did you mean permission_denied?)" } },
      { "a bad backoff base",
        "job J() { retry: backoff(exponential, base: 10) }",
        { "1:45 backoff base: expected a duration (10s), found an integer 10" } },
      { "a schedule without cron and dispatch",
        "schedule S { }", { "1:10 schedule S has no cron:", "1:10 schedule S has no dispatch:" } },
      { "a type that names a job",
        "job J()\nmessage M { j: J }", { "2:16 J is a job, not a type" } },
      { "an unused enum as a warning",
        "enum E { a }", { "1:6 warning: enum E is never used" } },
    }
    for _, row in ipairs(rows) do
      it("reports " .. row[1], function()
        assert.are.same(row[3], messages(row[2]))
      end)
    end
  end)

  describe("check_cron (the Lua check)", function()
    -- { expression, error or true }
    local rows = {
      { "0 9 * * *", true },
      { "*/15 0-6,22 1 jan-mar mon-fri", true },
      { "@hourly", true },
      { "0 9 * *", "expected 5 fields (minute hour day-of-month month day-of-week), found 4" },
      { "60 * * * *", '"60" is out of range 0-59 in the minute field' },
      { "* * 0 * *", '"0" is out of range 1-31 in the day of month field' },
      { "* * * * 5-2", '"5-2" is out of range 0-7 in the day of week field' },
      { "*/0 * * * *", 'bad step "0" in the minute field' },
      { "* * * foo *", 'bad value "foo" in the month field' },
    }
    for _, row in ipairs(rows) do
      it("answers " .. tostring(row[2]) .. " for " .. row[1], function()
        local ok, err = resolver.lua_check_cron(row[1])
        if row[2] == true then assert.is_true(ok) else assert.are.equal(row[2], err) end
      end)
    end
  end)
end)

describe("dsl.ir", function()
  -- { name, expected table name }
  local rows = {
    { "Task", "tasks" }, { "BlogPost", "blog_posts" }, { "Category", "categories" },
    { "Address", "addresses" }, { "Day", "days" }, { "HTTPLog", "http_logs" }, { "Match", "matches" },
  }
  for _, row in ipairs(rows) do
    it("names the table of " .. row[1] .. " " .. row[2], function()
      assert.are.equal(row[2], ir.table_name(row[1]))
    end)
  end
end)
