local process = require "spec.support.process"
local golden = require "spec.dsl.golden"
local json = require "zever.json"
local sys = require "zever.sys"

local zever = process.zever

local TASKS = golden.dir .. "/tasks.zen"
local BLOG = golden.dir .. "/blog.zen"

-- A folder with schema/<module>/app.zen holding src; returns the folder.
local function project(src)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. process.quote(dir .. "/schema/shop")) == 0)
  local f = assert(io.open(dir .. "/schema/shop/app.zen", "wb"))
  f:write(src)
  f:close()
  return dir
end

local SHOP = [[
entity Order { id: int64 @primary  total: float64 @validate(gte: 0) }
service Orders {
  // Cancels an order.
  // Paid orders cannot be cancelled.
  rpc CancelOrder(id: int64, reason: string? @validate(max_len: 200), notify: bool @default(true)) {
    http: POST "/v1/orders/{id}/cancel"
    permission: "orders.cancel"
    errors: { not_found, failed_precondition("the order is paid") }
  }
}
]]

describe("zever explain", function()
  it("prints the declaration, route, inputs, auth, output and errors with statuses", function()
    local r = zever("explain", "TaskService.CreateTask", TASKS)
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("", r.stderr)
    assert.are.equal(table.concat({
      "TaskService.CreateTask",
      "  declared   " .. TASKS .. ":14:3 (service TaskService, module testdata)",
      "  route      POST /v1/tasks",
      "  auth       required (opts.auth must return a principal)",
      "  inputs",
      "    title     string    required; from the JSON body; @validate(min_len: 1)",
      "    priority  Priority  required; from the JSON body; one of low, normal, high",
      "  output     Task",
      "  errors",
      "    400  invalid_argument  the input does not decode or validate (a message per field)",
      "    400  invalid_argument  declared: title is taken",
      "    401  unauthenticated   no principal from the auth hook",
      "    409  already_exists    declared",
    }, "\n") .. "\n", r.stdout)
  end)

  it("finds an rpc by its bare name and shows pagination and path inputs", function()
    local r = zever("explain", "ListTasks", TASKS)
    assert.are.equal(0, r.code, r.stderr)
    assert.is_truthy(r.stdout:find("^TaskService.ListTasks\n"))
    assert.is_truthy(r.stdout:find("  route      GET /v1/users/{user_id}/tasks\n", 1, true))
    assert.is_truthy(r.stdout:find("    user_id  uuid  required; from the path\n", 1, true))
    assert.is_truthy(r.stdout:find("  paginated  page_size and page_token in the query", 1, true))
  end)

  it("finds an rpc by its module-qualified name", function()
    local r = zever("explain", "testdata.TaskService.ListTasks", TASKS)
    assert.are.equal(0, r.code, r.stderr)
    assert.is_truthy(r.stdout:find("^TaskService.ListTasks\n"))
  end)

  it("exits 2 and suggests the closest Service.Rpc for an unknown name", function()
    local r = zever("explain", "TaskService.CreatTask", TASKS)
    assert.are.equal(2, r.code)
    assert.are.equal("", r.stdout)
    assert.are.equal('zever explain: unknown rpc "TaskService.CreatTask". Did you mean '
      .. '"TaskService.CreateTask"?\n', r.stderr)
  end)

  it("exits 2 without a name", function()
    local r = zever("explain")
    assert.are.equal(2, r.code)
    assert.is_truthy(r.stderr:find("usage: zever explain Service.Rpc", 1, true))
  end)

  it("exits 1 when the schema path does not exist", function()
    local r = zever("explain", "A.B", "/nonexistent/schema.zen")
    assert.are.equal(1, r.code)
    assert.are.equal("", r.stdout)
  end)

  it("reads schema/ by default and explains permissions, defaults, docs and query-less POSTs", function()
    local dir = project(SHOP)
    local r = process.run("cd " .. process.quote(dir) .. " && " .. process.quote(sys.exe())
      .. " explain Orders.CancelOrder")
    os.execute("rm -rf " .. process.quote(dir))
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal(table.concat({
      "Orders.CancelOrder",
      "  declared   schema/shop/app.zen:5:3 (service Orders, module shop)",
      "  doc        Cancels an order.",
      "             Paid orders cannot be cancelled.",
      "  route      POST /v1/orders/{id}/cancel",
      "  auth       required, permission orders.cancel (opts.auth must return a principal, "
        .. "opts.authorize must allow it)",
      "  inputs",
      "    id      int64    required; from the path",
      "    reason  string?  optional; from the JSON body; @validate(max_len: 200)",
      "    notify  bool     default true; from the JSON body",
      "  output     none (204 No Content)",
      "  errors",
      "    400  failed_precondition  declared: the order is paid",
      "    400  invalid_argument     the input does not decode or validate (a message per field)",
      "    401  unauthenticated      no principal from the auth hook",
      "    403  permission_denied    authorize says no to orders.cancel",
      "    404  not_found            declared",
    }, "\n") .. "\n", r.stdout)
  end)

  it("explains what resolved of a schema with errors and says so on stderr", function()
    local r = zever("explain", "Blog.Ping", BLOG)
    assert.are.equal(0, r.code)
    assert.are.equal("zever explain: note: the schema has 4 errors (zever check shows them); "
      .. "this is what resolved\n", r.stderr)
    assert.is_truthy(r.stdout:find("  route      none: no http: option, so no route is generated\n", 1, true))
    assert.is_truthy(r.stdout:find("  auth       required by default: the rpc says no auth:", 1, true))
  end)

  it("prints a JSON object with --json", function()
    local r = zever("explain", "Blog.GetPost", BLOG, "--json")
    assert.are.equal(0, r.code)
    local e = json.decode(r.stdout)
    assert.are.same({ method = "GET", path = "/v1/v1/posts/{id}", pattern = "/v1/v1/posts/:id" }, e.route)
    assert.are.equal("none", e.auth)
    assert.are.same({ name = "id", type = "int64", from = "path", required = true, line = 30, col = 15 },
      e.inputs[1])
    assert.are.same({ { status = 400, code = "invalid_argument",
      message = "the input does not decode or validate (a message per field)" } }, e.errors)
  end)
end)
