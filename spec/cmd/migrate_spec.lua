-- luacheck: no max line length
-- zever migrate: the command run through the real binary in a temporary folder.

local process = require "spec.support.process"

local function sh(dir, args)
  return process.run("cd " .. process.quote(dir) .. " && " .. process.quote(require("zever.sys").exe()) .. " " .. args)
end

describe("zever migrate", function()
  local dir

  before_each(function()
    dir = require("spec.support.files").tmpdir()
  end)

  after_each(function()
    os.execute("rm -rf '" .. dir .. "'")
  end)

  local function write(name, text)
    local f = assert(io.open(dir .. "/migrations/" .. name, "wb"))
    f:write(text)
    f:close()
  end

  it("creates numbered migration files with new", function()
    local r = sh(dir, "migrate new create_users")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("migrations/0001_create_users.lua\n", r.stdout)
    r = sh(dir, "migrate new add_posts")
    assert.are.equal("migrations/0002_add_posts.lua\n", r.stdout)
  end)

  it("applies, lists and rolls back migrations, quietly when piped", function()
    sh(dir, "migrate new create_users")
    write("0001_create_users.lua", [[return { up = function(db) db:exec("CREATE TABLE users (id INTEGER)") end,
      down = function(db) db:exec("DROP TABLE users") end }]])
    local r = sh(dir, "migrate status")
    assert.are.equal(0, r.code, r.stderr)
    assert.truthy(r.stdout:find("^pending  0001_create_users"))
    r = sh(dir, "migrate up")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("", r.stdout)
    r = sh(dir, "migrate status --json")
    local list = require("zever.json").decode(r.stdout)
    assert.are.equal(true, list[1].applied)
    assert.are.equal("0001", list[1].version)
    r = sh(dir, "migrate down -n 1")
    assert.are.equal(0, r.code, r.stderr)
    r = sh(dir, "migrate status")
    assert.truthy(r.stdout:find("^pending"))
  end)

  it("takes --dsn and --migrations", function()
    assert(os.execute("mkdir -p '" .. dir .. "/db/m'"))
    local f = assert(io.open(dir .. "/db/m/0001_t.lua", "wb"))
    f:write([[return { up = function(db) db:exec("CREATE TABLE t (id)") end }]])
    f:close()
    local r = sh(dir, "migrate up --dsn sqlite:db/other.db --migrations db/m")
    assert.are.equal(0, r.code, r.stderr)
    local db = assert(require("zever.db").open("sqlite:" .. dir .. "/db/other.db"))
    assert.truthy(db:first("SELECT name FROM sqlite_master WHERE name = 't'"))
    db:close()
  end)

  it("exits 1 naming the file and the SQL error when a migration fails", function()
    sh(dir, "migrate new broken")
    write("0001_broken.lua", [[return { up = function(db) db:exec("CREATE TABLE ok1 (id)"); db:exec("NOT SQL") end }]])
    local r = sh(dir, "migrate up")
    assert.are.equal(1, r.code)
    assert.truthy(r.stderr:find("0001_broken.lua", 1, true), r.stderr)
    assert.truthy(r.stderr:find("syntax error", 1, true), r.stderr)
    local db = assert(require("zever.db").open("sqlite:" .. dir .. "/app.db"))
    assert.is_nil(db:first("SELECT name FROM sqlite_master WHERE name = 'ok1'"))
    db:close()
  end)

  it("refuses a second folder whose version is recorded under another name, dry or not (exit 1)", function()
    sh(dir, "migrate new add_tags")
    assert.are.equal(0, sh(dir, "migrate up").code)
    -- `zever gen`'s entity tables: a folder of its own, numbered from 0001 too.
    os.execute("mkdir -p " .. process.quote(dir .. "/generated/migrations"))
    local f = assert(io.open(dir .. "/generated/migrations/0001_create_posts.lua", "wb"))
    f:write([[return { up = function(db) db:exec("CREATE TABLE posts (id INTEGER)") end }]])
    f:close()
    local r = sh(dir, "migrate status --migrations generated/migrations")
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("pending  0001_create_posts  (its version is recorded as applied by add_tags)", r.stdout, 1, true)
    assert.matches("applied  0001_add_tags  %S+  %(file missing%)", r.stdout)
    for _, args in ipairs({ "up", "up --dry-run", "down", "down --dry-run" }) do
      r = sh(dir, "migrate " .. args .. " --migrations generated/migrations")
      assert.are.equal(1, r.code, args)
      assert.matches("0001_create_posts.lua: version 0001 is recorded as applied by 0001_add_tags", r.stderr, 1, true)
    end
    -- Nothing ran: add_tags is still the one applied.
    assert.matches("^applied  0001_add_tags", sh(dir, "migrate status").stdout)
  end)

  it("exits 2 on an unknown subcommand or a misplaced -n", function()
    assert.are.equal(2, sh(dir, "migrate sideways").code)
    assert.are.equal(2, sh(dir, "migrate").code)
    assert.are.equal(2, sh(dir, "migrate up -n 2").code)
    assert.are.equal(2, sh(dir, "migrate new").code)
    assert.are.equal(2, sh(dir, "migrate new 'bad name'").code)
  end)

  it("exits 1 when the migrations folder is missing", function()
    local r = sh(dir, "migrate up --migrations nowhere")
    assert.are.equal(1, r.code)
    assert.truthy(r.stderr:find("nowhere", 1, true))
  end)
end)
