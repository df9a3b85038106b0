-- luacheck: no max line length
-- `zever gen` migrations run unchanged on SQLite and on a real PostgreSQL 15 (#pg): the files
-- generated from dsl/testdata/tasks.zen (then a second schema version with a new column, an
-- index and an index(...) @concurrently, and a third that changes a column's type) and spec/fixtures/zen/shop.zen (foreign keys, a
-- many_to_many join table, a unique index) are applied up, checked in the catalog, and rolled back
-- down. On PostgreSQL the statements go through psql exactly as each file gives them to its db
-- handle (one transaction per migration; a transaction = false migration one statement at a
-- time), and through `zever migrate --dsn postgres://...` once the postgres adapter is here.

local gen = require "dsl.gen"
local migrations = require "zever.migrations"
local zdb = require "zever.db"
local sys = require "zever.sys"
local fs = require "spec.support.files"
local process = require "spec.support.process"
local pg_server = require "spec.support.pg_server"

local read, write = fs.read, fs.write
local HOME = sys.home()
local HAVE_ADAPTER = package.searchpath("adapters.db.postgres", package.path) ~= nil

-- Generates the migrations of the .zen source(s) in dir/schema into dir/generated.
local function generate(dir)
  return assert(gen.run({ dir .. "/schema" }, { out = dir .. "/generated", backends = { "migrations" } }))
end

-- The version 2 of tasks.zen: a new column, an index in the transaction, one built concurrently.
local function tasks_v2(src)
  return (src:gsub("  due_at: timestamp%?\n", "%0  priority: string @default(\"normal\")\n  note: string?\n")
    :gsub("  index%(user_id, due_at%)\n", "%0  index(priority)\n  index(note) @concurrently\n"))
end

-- The statements migration file path gives a postgres db handle for step ("up" or "down"), and
-- whether it runs outside a transaction. The handle only records: psql runs the SQL.
local function statements(path, step)
  local mod = dofile(path)
  local list = {}
  local recorder = { dialect = "postgres" }
  function recorder.exec(_, s) list[#list + 1] = s end
  mod[step](recorder)
  return list, mod.transaction == false
end

-- Applies the files of dir/generated/migrations in order (up) or reverse order (down) on dsn
-- through psql. Returns the names of the files it ran.
local function psql_migrate(srv, dsn, dir, step)
  local files = assert(migrations.list(dir .. "/generated/migrations"))
  local ran = {}
  local from, to, by = 1, #files, 1
  if step == "down" then from, to, by = #files, 1, -1 end
  for i = from, to, by do
    local list, outside = statements(files[i].file, step)
    if outside then
      for _, s in ipairs(list) do
        local r = srv:psql(dsn, s) -- one statement a call: psql runs it outside a transaction
        assert(r.code == 0, files[i].file .. ": " .. r.stderr)
      end
    else
      local r = srv:psql(dsn, "BEGIN;\n" .. table.concat(list, ";\n") .. ";\nCOMMIT;")
      assert(r.code == 0, files[i].file .. ": " .. r.stderr)
    end
    ran[#ran + 1] = files[i].version .. "_" .. files[i].name
  end
  return ran
end

local function lines(srv, dsn, sql)
  local r = srv:psql(dsn, sql)
  assert(r.code == 0, r.stderr)
  local out = {}
  for l in r.stdout:gmatch("[^\n]+") do out[#out + 1] = l end
  return out
end

local function tables(srv, dsn)
  return lines(srv, dsn, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1")
end

describe("zever gen migrations on postgres through psql #pg", function()
  local fx = pg_server.fixture("migrations_pg")
  local dir

  before_each(function() dir = fs.tmpdir({ schema = true }) end)
  after_each(function()
    -- each row leaves the database as it found it: down ran, or this drops what is left
    fx.server:psql(fx.dsn, "DROP SCHEMA public CASCADE; CREATE SCHEMA public;")
    fs.rm_rf(dir)
  end)

  it("applies tasks.zen up, a second version with a concurrent index, a third with a type change, and everything down", function()
    local src = read(HOME .. "/dsl/testdata/tasks.zen")
    write(dir .. "/schema/tasks.zen", src)
    generate(dir)
    assert.are.same({ "0001_create_tasks_users" }, psql_migrate(fx.server, fx.dsn, dir, "up"))
    assert.are.same({ "tasks", "users" }, tables(fx.server, fx.dsn))
    assert.are.same({ "tasks_user_id_fkey|f" }, lines(fx.server, fx.dsn,
      "SELECT conname || '|' || contype::text FROM pg_constraint WHERE conrelid = 'tasks'::regclass AND contype = 'f'"))

    write(dir .. "/schema/tasks.zen", tasks_v2(src))
    local report = generate(dir)
    local names = {}
    for _, f in ipairs(report.written) do if f:match("^migrations/00") then names[#names + 1] = f end end
    assert.are.same({ "migrations/0002_add_tasks_priority_and_2_more.lua", "migrations/0003_add_index_tasks_note_idx_concurrently.lua" }, names)
    local third = read(dir .. "/generated/migrations/0003_add_index_tasks_note_idx_concurrently.lua")
    assert.truthy(third:find('CREATE INDEX CONCURRENTLY IF NOT EXISTS "tasks_note_idx" ON "tasks" ("note")', 1, true))
    assert.truthy(third:find("transaction = false,", 1, true))
    -- the files already applied are skipped by version, as zever migrate does
    local files = assert(migrations.list(dir .. "/generated/migrations"))
    assert.are.equal(3, #files)
    local r = fx.server:psql(fx.dsn, "BEGIN;\n" .. table.concat((statements(files[2].file, "up")), ";\n") .. ";\nCOMMIT;")
    assert.are.equal(0, r.code, r.stderr)
    for _, s in ipairs((statements(files[3].file, "up"))) do
      r = fx.server:psql(fx.dsn, s)
      assert.are.equal(0, r.code, r.stderr)
    end
    assert.are.same({ "tasks_note_idx|true", "tasks_priority_idx|true", "tasks_user_id_due_at_idx|true" }, lines(fx.server, fx.dsn,
      "SELECT c.relname || '|' || i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'tasks'::regclass AND NOT i.indisprimary ORDER BY 1"))
    assert.are.same({ "normal" }, lines(fx.server, fx.dsn,
      "INSERT INTO users (id, email) VALUES ('0b9e3c1e-4a57-4d2c-9a55-6c1f0f7e2a10', 'a@x'); INSERT INTO tasks (id, title, user_id) VALUES ('5d6f7a8b-1c2d-4e3f-8a9b-0c1d2e3f4a5b', 't', '0b9e3c1e-4a57-4d2c-9a55-6c1f0f7e2a10') RETURNING priority"))

    -- Version 3 changes the type of a column: ALTER COLUMN ... TYPE, the index kept.
    write(dir .. "/schema/tasks.zen", (tasks_v2(src):gsub("note: string%?", "note: int32?")))
    generate(dir)
    files = assert(migrations.list(dir .. "/generated/migrations"))
    assert.are.equal("0004_change_tasks_note_to_integer", files[4].version .. "_" .. files[4].name)
    r = fx.server:psql(fx.dsn, "BEGIN;\n" .. table.concat((statements(files[4].file, "up")), ";\n") .. ";\nCOMMIT;")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.same({ "integer" }, lines(fx.server, fx.dsn,
      "SELECT data_type FROM information_schema.columns WHERE table_name = 'tasks' AND column_name = 'note'"))
    assert.are.same({ "tasks_note_idx" }, lines(fx.server, fx.dsn, "SELECT indexname FROM pg_indexes WHERE indexname = 'tasks_note_idx'"))

    assert.are.same({ "0004_change_tasks_note_to_integer", "0003_add_index_tasks_note_idx_concurrently",
      "0002_add_tasks_priority_and_2_more", "0001_create_tasks_users" },
      psql_migrate(fx.server, fx.dsn, dir, "down"))
    assert.are.same({}, tables(fx.server, fx.dsn))
  end)

  it("applies shop.zen (foreign keys, a join table, a unique index) up and down", function()
    write(dir .. "/schema/shop.zen", read(HOME .. "/spec/fixtures/zen/shop.zen"))
    generate(dir)
    assert.are.equal(1, #psql_migrate(fx.server, fx.dsn, dir, "up"))
    local t = tables(fx.server, fx.dsn)
    assert.is_true(#t >= 6, table.concat(t, ","))
    assert.truthy(table.concat(t, ","):find("order_products", 1, true))
    local fks = lines(fx.server, fx.dsn, "SELECT count(*) FROM pg_constraint WHERE contype = 'f'")
    assert.is_true(tonumber(fks[1]) >= 4, fks[1])
    -- @on_delete(cascade) and @on_delete(set_null) reached the catalog
    local actions = table.concat(lines(fx.server, fx.dsn, "SELECT DISTINCT confdeltype FROM pg_constraint WHERE contype = 'f' ORDER BY 1"), "")
    assert.truthy(actions:find("c", 1, true), actions)
    assert.truthy(actions:find("n", 1, true), actions)
    psql_migrate(fx.server, fx.dsn, dir, "down")
    assert.are.same({}, tables(fx.server, fx.dsn))
  end)
end)

describe("zever gen migrations on sqlite, the same files", function()
  local dir
  before_each(function() dir = fs.tmpdir({ schema = true }) end)
  after_each(function() fs.rm_rf(dir) end)

  it("applies tasks.zen's three versions (a concurrent index, a type change) up and down through zever.migrations", function()
    local src = read(HOME .. "/dsl/testdata/tasks.zen")
    write(dir .. "/schema/tasks.zen", src)
    generate(dir)
    local db = assert(zdb.open("sqlite:" .. dir .. "/app.db"))
    assert.are.equal(1, #assert(migrations.up(db, dir .. "/generated/migrations")))
    write(dir .. "/schema/tasks.zen", tasks_v2(src))
    generate(dir)
    assert.are.equal(2, #assert(migrations.up(db, dir .. "/generated/migrations")))
    assert(db:first("SELECT 1 AS x FROM pragma_index_list('tasks') WHERE name = 'tasks_note_idx'"))
    -- version 3: a type change, a table rebuild on sqlite that keeps the rows and the indexes
    db:exec("INSERT INTO users (id, email) VALUES ('u1', 'a@x')")
    db:exec("INSERT INTO tasks (id, title, user_id, note) VALUES ('t1', 'x', 'u1', '42')")
    write(dir .. "/schema/tasks.zen", (tasks_v2(src):gsub("note: string%?", "note: int32?")))
    generate(dir)
    assert.are.equal(1, #assert(migrations.up(db, dir .. "/generated/migrations")))
    assert.are.equal(42, db:first("SELECT note FROM tasks WHERE id = 't1'").note)
    assert(db:first("SELECT 1 AS x FROM pragma_index_list('tasks') WHERE name = 'tasks_note_idx'"))
    db:exec("DELETE FROM tasks")
    assert.are.equal(4, #assert(migrations.down(db, dir .. "/generated/migrations", 4)))
    assert.is_nil(db:first("SELECT name FROM sqlite_master WHERE name IN ('tasks', 'users')"))
    db:close()
  end)

  it("runs a transaction = false migration outside a transaction and records it", function()
    write(dir .. "/m/0001_t.lua", [[return { up = function(db) db:exec("CREATE TABLE t (id)") end,
      down = function(db) db:exec("DROP TABLE t") end }]])
    write(dir .. "/m/0002_outside.lua", [[return { transaction = false,
      up = function(db) assert(not db:in_transaction(), "in a transaction"); db:exec("CREATE INDEX t_id ON t (id)"); db:exec("NOT SQL") end,
      down = function(db) db:exec("DROP INDEX t_id") end }]])
    local db = assert(zdb.open("sqlite:" .. dir .. "/app.db"))
    local done, err = migrations.up(db, dir .. "/m")
    assert.is_nil(done)
    assert.truthy(err.message:find("0002_outside.lua", 1, true), err.message)
    assert.truthy(err.message:find("outside a transaction", 1, true), err.message)
    -- the statement before the failure stayed; the version was not recorded
    assert(db:first("SELECT 1 AS x FROM pragma_index_list('t') WHERE name = 't_id'"))
    local st = assert(migrations.status(db, dir .. "/m"))
    assert.are.same({ true, false }, { st[1].applied, st[2].applied })
    write(dir .. "/m/0002_outside.lua", [[return { transaction = false,
      up = function(db) db:exec("CREATE INDEX IF NOT EXISTS t_id ON t (id)") end,
      down = function(db) db:exec("DROP INDEX t_id") end }]])
    assert.are.equal(1, #assert(migrations.up(db, dir .. "/m")))
    assert.are.equal(2, #assert(migrations.down(db, dir .. "/m", 2)))
    write(dir .. "/m/0003_bad.lua", [[return { transaction = "no", up = function() end }]])
    done, err = migrations.up(db, dir .. "/m")
    assert.is_nil(done)
    assert.truthy(err.message:find("transaction must be true or false", 1, true), err.message)
    db:close()
  end)
end)

describe("zever migrate with a postgres DSN #pg", function()
  if not HAVE_ADAPTER then
    pending("the postgres adapter (lua/adapters/db/postgres.lua, branch h-pg) is not in this tree yet")
    return
  end
  local fx = pg_server.fixture("migrate_cli_pg")
  local dir
  before_each(function() dir = fs.tmpdir({ schema = true }) end)
  after_each(function() fs.rm_rf(dir) end)

  local function zever_in(...)
    local parts = { "cd " .. process.quote(dir) .. " &&", process.quote(sys.exe()) }
    for i = 1, select("#", ...) do parts[#parts + 1] = process.quote((select(i, ...))) end
    return process.run(table.concat(parts, " "))
  end

  it("applies and rolls back generated migrations, the concurrent index outside a transaction", function()
    local src = read(HOME .. "/dsl/testdata/tasks.zen")
    write(dir .. "/schema/tasks.zen", src)
    generate(dir)
    write(dir .. "/schema/tasks.zen", tasks_v2(src))
    generate(dir)
    local r = zever_in("migrate", "up", "--migrations", "generated/migrations", "--dsn", fx.dsn)
    assert.are.equal(0, r.code, r.stderr)
    r = zever_in("migrate", "status", "--json", "--migrations", "generated/migrations", "--dsn", fx.dsn)
    assert.are.equal(0, r.code, r.stderr)
    local list = require("zever.json").decode(r.stdout)
    assert.are.same({ true, true, true }, { list[1].applied, list[2].applied, list[3].applied })
    assert.are.same({ "t" }, lines(fx.server, fx.dsn,
      "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'tasks_note_idx'"))
    r = zever_in("migrate", "down", "-n", "3", "--migrations", "generated/migrations", "--dsn", fx.dsn)
    assert.are.equal(0, r.code, r.stderr)
    assert.are.same({ "schema_migrations" }, tables(fx.server, fx.dsn))
    for _, out in ipairs { r.stdout, r.stderr } do
      assert.is_nil(out:find(fx.server.password, 1, true))
    end
  end)

  it("exits 1 naming the file when a migration fails, without the password", function()
    write(dir .. "/m/0001_bad.lua", [[return { up = function(db) db:exec("CREATE TABLE ok1 (id int)"); db:exec("NOT SQL") end }]])
    local r = zever_in("migrate", "up", "--migrations", "m", "--dsn", fx.dsn)
    assert.are.equal(1, r.code)
    assert.truthy(r.stderr:find("0001_bad.lua", 1, true), r.stderr)
    assert.is_nil((r.stdout .. r.stderr):find(fx.server.password, 1, true))
    assert.are.same({ "schema_migrations" }, tables(fx.server, fx.dsn))
  end)
end)
