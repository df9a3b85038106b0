-- zever.migrations: up, down and status on a file database; a failing migration leaves nothing.

local zdb = require "zever.db"
local migrations = require "zever.migrations"
local fs = require "spec.support.files"

local write = fs.write

local USERS = [[
return {
  up = function(db) db:exec("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT)") end,
  down = function(db) db:exec("DROP TABLE users") end,
}]]

local POSTS = [[
return {
  up = function(db)
    db:exec("CREATE TABLE posts (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id))")
    db:insert_into("posts"):values { id = 1 }:exec()
  end,
  down = function(db) db:exec("DROP TABLE posts") end,
}]]

-- Creates a table, then fails on a bad statement whose result it does not even check.
local BROKEN = [[
return {
  up = function(db)
    db:exec("CREATE TABLE tags (id INTEGER PRIMARY KEY)")
    db:exec("CREATE TABLEZ nonsense")
  end,
  down = function(db) db:exec("DROP TABLE tags") end,
}]]

local function tables(db)
  local out = {}
  for _, r in ipairs(db:query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")) do
    out[#out + 1] = r.name
  end
  return out
end

describe("zever.migrations", function()
  local dir, mdir, db

  before_each(function()
    dir = fs.tmpdir({ migrations = true })
    mdir = dir .. "/migrations"
    write(mdir .. "/0001_create_users.lua", USERS)
    write(mdir .. "/0002_create_posts.lua", POSTS)
    write(mdir .. "/README.txt", "not a migration")
    db = assert(zdb.open("sqlite:" .. dir .. "/app.db"))
  end)

  after_each(function()
    db:close()
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("lists migration files in version order", function()
    write(mdir .. "/0010_later.lua", USERS)
    local list = assert(migrations.list(mdir))
    assert.are.same({ "0001", "0002", "0010" }, { list[1].version, list[2].version, list[3].version })
    assert.are.equal("create_users", list[1].name)
  end)

  it("applies pending migrations in order and records them", function()
    local done = assert(migrations.up(db, mdir))
    assert.are.equal(2, #done)
    assert.are.same({ "posts", "schema_migrations", "users" }, tables(db))
    local status = assert(migrations.status(db, mdir))
    assert.is_true(status[1].applied and status[2].applied)
    assert.truthy(status[1].applied_at:match("^%d%d%d%d%-%d%d%-%d%dT"))
    assert.are.equal(0, #assert(migrations.up(db, mdir)))
  end)

  it("reports pending migrations in status", function()
    migrations.up(db, mdir)
    write(mdir .. "/0003_more.lua", BROKEN)
    local status = assert(migrations.status(db, mdir))
    assert.are.same({ true, true, false }, { status[1].applied, status[2].applied, status[3].applied })
  end)

  it("rolls back the last migration, or the last n", function()
    migrations.up(db, mdir)
    local done = assert(migrations.down(db, mdir, 1))
    assert.are.equal("0002", done[1].version)
    assert.are.same({ "schema_migrations", "users" }, tables(db))
    migrations.up(db, mdir)
    done = assert(migrations.down(db, mdir, 5))
    assert.are.equal(2, #done)
    assert.are.same({ "schema_migrations" }, tables(db))
  end)

  it("stops at a failing migration, rolling it back entirely, with the file and the SQL error", function()
    write(mdir .. "/0003_broken.lua", BROKEN)
    write(mdir .. "/0004_after.lua", USERS:gsub("users", "after"))
    local ok, err, done = migrations.up(db, mdir)
    assert.is_nil(ok)
    assert.are.equal(2, #done)
    assert.are.equal("syntax", err.code)
    assert.truthy(err.message:find("0003_broken.lua", 1, true))
    assert.truthy(err.message:find("CREATE TABLEZ", 1, true))
    assert.are.same({ "posts", "schema_migrations", "users" }, tables(db))
    local status = migrations.status(db, mdir)
    assert.is_false(status[3].applied)
    assert.is_false(status[4].applied)
  end)

  it("rolls back a migration that raises a Lua error", function()
    write(mdir .. "/0003_raises.lua", [[
      return { up = function(db) db:exec("CREATE TABLE t3 (id)"); error("no way") end }]])
    local ok, err = migrations.up(db, mdir)
    assert.is_nil(ok)
    assert.truthy(err.message:find("no way", 1, true))
    assert.is_nil(db:first("SELECT name FROM sqlite_master WHERE name = 't3'"))
  end)

  it("refuses a file that does not return a migration", function()
    write(mdir .. "/0003_bad.lua", "return 42")
    local ok, err = migrations.up(db, mdir)
    assert.is_nil(ok)
    assert.are.equal("invalid", err.code)
  end)

  it("refuses two files with the same version", function()
    write(mdir .. "/0002_again.lua", USERS)
    local ok, err = migrations.list(mdir)
    assert.is_nil(ok)
    assert.are.equal("invalid", err.code)
  end)

  it("never takes a file as applied when its version is recorded under another name", function()
    -- Two folders numbered alike (migrations/ and generated/migrations/ of `zever gen`): the
    -- second folder's 0001 must not count as applied because the first folder's 0001 was.
    local other = dir .. "/generated"
    write(other .. "/0001_create_tags.lua", BROKEN:gsub("CREATE TABLEZ nonsense", "SELECT 1"))
    assert(migrations.up(db, mdir))
    local st = assert(migrations.status(db, other))
    assert.are.same({ { "0001", "create_tags", false, "create_users" },
      { "0001", "create_users", true, true }, { "0002", "create_posts", true, true } },
      { { st[1].version, st[1].name, st[1].applied, st[1].conflict },
        { st[2].version, st[2].name, st[2].applied, st[2].missing },
        { st[3].version, st[3].name, st[3].applied, st[3].missing } })
    local done, err = migrations.up(db, other)
    assert.is_nil(done)
    assert.are.equal("invalid", err.code)
    assert.matches("0001_create_tags.lua: version 0001 is recorded as applied by 0001_create_users",
      err.message, 1, true)
    -- down refuses too, before reverting anything (the conflict is not even its first step).
    write(other .. "/0002_create_posts.lua", POSTS)
    done, err = migrations.down(db, other, 1)
    assert.is_nil(done)
    assert.matches("recorded as applied by 0001_create_users", err.message, 1, true)
    -- Nothing ran: no tags table, users and posts still there and recorded.
    assert.are.same({ "posts", "schema_migrations", "users" }, tables(db))
  end)

  it("creates the next numbered file from a template", function()
    local path = assert(migrations.new(mdir, "add_tags"))
    assert.are.equal(mdir .. "/0003_add_tags.lua", path)
    local mod = dofile(path)
    assert.are.equal("function", type(mod.up))
    assert.is_nil(migrations.new(mdir, "bad name"))
  end)
end)
