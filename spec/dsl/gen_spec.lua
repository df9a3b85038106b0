-- dsl.gen and its models and migrations backends: the golden output of every fixture that
-- compiles without errors (dsl/testdata/gen/<fixture>/<backend>/...), the migration diff between
-- schema versions, and the driver's writing rules. Regenerate the goldens on purpose with
--
--   ZEVER_UPDATE_GOLDEN=1 bin/zever test spec/dsl/gen_spec.lua     (or: zever gen --update-golden)

local gen = require "dsl.gen"
local compile = require "dsl.compile"
local golden = require "spec.dsl.golden"
local migrations = require "dsl.backends.migrations"
local zdb = require "zever.db"
local sys = require "zever.sys"
local fs = require "spec.support.files"

local tmpdir, read = fs.tmpdir, fs.read

local HOME = sys.home()
local GEN = HOME .. "/dsl/testdata/gen"

-- Every file under dir, relative to it, sorted.
local function tree(dir, prefix, out)
  out = out or {}
  for _, name in ipairs(sys.listdir(dir) or {}) do
    local full = dir .. "/" .. name
    if sys.isdir(full) then tree(full, (prefix or "") .. name .. "/", out)
    else out[#out + 1] = (prefix or "") .. name end
  end
  table.sort(out)
  return out
end

-- The IR of one source text (it must compile without errors).
local function ir_of(src)
  local result = compile.compile_sources({ ["schema/s.zen"] = src }, { "schema/s.zen" })
  assert(result.errors == 0, require("dsl.diagnostics").render(result.diags, result.sources))
  return result.ir
end

-- The snapshot table of a migrations backend output.
local function snapshot_of(files)
  local chunk = assert(loadstring(files[migrations.SNAPSHOT]))
  setfenv(chunk, {})
  return chunk()
end

-- Runs the migrations backend from snapshot prev over src: files, snapshot | nil, err.
local function step(prev, src, allow_drop)
  local files, err = migrations.generate(ir_of(src), { snapshot = prev, allow_drop = allow_drop })
  if not files then return nil, err end
  return files, snapshot_of(files)
end

-- The migration file paths of an output, sorted.
local function migration_paths(files)
  local out = {}
  for path in pairs(files) do
    if path ~= migrations.SNAPSHOT then out[#out + 1] = path end
  end
  table.sort(out)
  return out
end

-- Applies every migration file of files (in order) to db.
local function apply(db, files)
  for _, path in ipairs(migration_paths(files)) do
    local m = assert(loadstring(files[path], "=" .. path))()
    db:transaction(function(tx) m.up(tx:strict_handle()) end)
  end
end

local function columns(db, tname)
  local out = {}
  for _, r in ipairs(assert(db:query("SELECT name FROM pragma_table_info(?) ORDER BY cid", tname))) do
    out[#out + 1] = r.name
  end
  return out
end

local function indexes(db, tname)
  local out = {}
  for _, r in ipairs(assert(db:query("SELECT name FROM pragma_index_list(?) ORDER BY name", tname))) do
    if not r.name:match("^sqlite_autoindex") then out[#out + 1] = r.name end
  end
  return out
end

describe("dsl.gen", function()
  describe("golden output", function()
    for _, fx in ipairs(gen.golden_fixtures(HOME)) do
      local files = gen.golden(fx.file, read(fx.path))
      if files then
        local dir = GEN .. "/" .. fx.name
        local backends, seen = {}, {}
        for path in pairs(files) do
          local b = path:match("^[^/]+")
          if not seen[b] then seen[b], backends[#backends + 1] = true, b end
        end
        table.sort(backends)
        for _, backend in ipairs(backends) do
          it("generates the " .. backend .. " output of " .. fx.file .. " as committed", function()
            local want = {}
            for path in pairs(files) do
              if path:match("^[^/]+") == backend then want[#want + 1] = path end
            end
            table.sort(want)
            if golden.update then
              for _, rel in ipairs(tree(dir .. "/" .. backend, backend .. "/")) do
                if not files[rel] then os.remove(dir .. "/" .. rel) end
              end
            end
            for _, rel in ipairs(want) do
              local full = dir .. "/" .. rel
              if golden.update then assert(gen.mkdir_p(full:match("^(.*)/"))) end
              assert.are.equal(golden.expected(full, files[rel]), files[rel])
            end
            assert.are.same(want, tree(dir .. "/" .. backend, backend .. "/"))
          end)
        end
      end
    end

    it("has goldens only for fixtures that compile without errors", function()
      local clean = {}
      for _, fx in ipairs(gen.golden_fixtures(HOME)) do
        if gen.golden(fx.file, read(fx.path)) then clean[#clean + 1] = fx.name end
      end
      local dirs = sys.listdir(GEN) or {}
      table.sort(dirs)
      assert.are.same(clean, dirs)
      assert.is_true(#clean >= 2)
    end)

    it("is the same bytes on every run", function()
      local src = read(HOME .. "/spec/fixtures/zen/shop.zen")
      assert.are.same(gen.golden("shop.zen", src), gen.golden("shop.zen", src))
    end)
  end)

  describe("migrations diff", function()
    local V1 = [[
entity Task {
  id: int64 @primary
  title: string
}
]]

    it("writes only the added column and index into the next migration", function()
      local files1, snap1 = step(nil, V1)
      assert.are.same({ "migrations/0001_create_tasks.lua" }, migration_paths(files1))
      local v2 = V1:gsub("}\n$", "  priority: string @default(\"normal\")\n  index(title)\n}\n")
      local files2, snap2 = step(snap1, v2)
      assert.are.same({ "migrations/0002_add_tasks_priority_and_1_more.lua" }, migration_paths(files2))
      assert.are.equal(2, snap2.version)
      local plan = migrations.diff(snap1.tables, migrations.schema(ir_of(v2)), false)
      local rows = {
        { "sqlite", { [[ALTER TABLE "tasks" ADD COLUMN "priority" TEXT NOT NULL DEFAULT 'normal']],
          [[CREATE INDEX "tasks_title_idx" ON "tasks" ("title")]] } },
        { "postgres", { [[ALTER TABLE "tasks" ADD COLUMN "priority" TEXT NOT NULL DEFAULT 'normal']],
          [[CREATE INDEX "tasks_title_idx" ON "tasks" ("title")]] } },
      }
      for _, row in ipairs(rows) do
        local got = {}
        for _, o in ipairs(plan.ops) do
          for _, s in ipairs(o.up[row[1]]) do got[#got + 1] = s end
        end
        assert.are.same(row[2], got)
      end
      -- On a real database: the rows of version 1 survive and get the default.
      local db = assert(zdb.open("sqlite::memory:"))
      apply(db, files1)
      db:insert_into("tasks"):values{ title = "old" }:exec()
      apply(db, files2)
      assert.are.same({ "id", "title", "priority" }, columns(db, "tasks"))
      assert.are.same({ "tasks_title_idx" }, indexes(db, "tasks"))
      assert.are.equal("normal", db:first("SELECT priority FROM tasks").priority)
      db:close()
    end)

    it("writes no migration and the same snapshot when nothing changed", function()
      local files1, snap1 = step(nil, V1)
      local files2 = step(snap1, V1)
      assert.are.same({}, migration_paths(files2))
      assert.are.equal(files1[migrations.SNAPSHOT], files2[migrations.SNAPSHOT])
    end)

    it("renames a column named by @renamed_from and keeps its data", function()
      local _, snap1 = step(nil, V1)
      local files1 = step(nil, V1)
      local v2 = V1:gsub("title: string", "name: string @renamed_from(\"title\")")
      local files2, snap2 = step(snap1, v2)
      assert.are.same({ "migrations/0002_rename_tasks_title_to_name.lua" }, migration_paths(files2))
      local plan = migrations.diff(snap1.tables, migrations.schema(ir_of(v2)), false)
      assert.are.same({ [[ALTER TABLE "tasks" RENAME COLUMN "title" TO "name"]] }, plan.ops[1].up.sqlite)
      assert.are.same({ [[ALTER TABLE "tasks" RENAME COLUMN "name" TO "title"]] }, plan.ops[1].down.sqlite)
      assert.are.equal(1, #plan.ops)
      local db = assert(zdb.open("sqlite::memory:"))
      apply(db, files1)
      db:insert_into("tasks"):values{ title = "kept" }:exec()
      apply(db, files2)
      assert.are.equal("kept", db:first("SELECT name FROM tasks").name)
      db:close()
      -- The attribute may stay: the next run sees the column under its new name.
      assert.are.same({}, migration_paths((step(snap2, v2))))
    end)

    it("renames an indexed column and reverts it with the index back on the old name", function()
      local v1 = V1:gsub("}\n$", "  index(title)\n}\n")
      local files1, snap1 = step(nil, v1)
      local v2 = v1:gsub("title: string", "name: string @renamed_from(\"title\")")
        :gsub("index%(title%)", "index(name)")
      local files2 = assert(step(snap1, v2))
      local db = assert(zdb.open("sqlite::memory:"))
      apply(db, files1)
      apply(db, files2)
      assert.are.same({ "tasks_name_idx" }, indexes(db, "tasks"))
      local path = migration_paths(files2)[1]
      local m = assert(loadstring(files2[path]))()
      db:transaction(function(tx) m.down(tx:strict_handle()) end)
      assert.are.same({ "id", "title" }, columns(db, "tasks"))
      assert.are.same({ "tasks_title_idx" }, indexes(db, "tasks"))
      db:close()
    end)

    it("refuses a dropped column without allow_drop and drops it with it", function()
      local _, snap1 = step(nil, V1)
      local v2 = V1:gsub("  title: string\n", "")
      local files, err = step(snap1, v2)
      assert.is_nil(files)
      assert.are.equal("invalid", err.code)
      assert.matches("drops the column title of tasks: refused without %-%-allow%-drop", err.message)
      local dropped = assert(step(snap1, v2, true))
      assert.are.same({ "migrations/0002_drop_tasks_title.lua" }, migration_paths(dropped))
      local text = dropped["migrations/0002_drop_tasks_title.lua"]
      assert.matches([[ALTER TABLE "tasks" DROP COLUMN "title"]], text, 1, true)
      assert.matches("cannot be reverted", text, 1, true)
    end)

    it("refuses a dropped table without allow_drop", function()
      local _, snap1 = step(nil, V1 .. "entity Note { id: int64 @primary }\n")
      local files, err = step(snap1, V1)
      assert.is_nil(files)
      assert.matches("drops the table notes", err.message, 1, true)
      local dropped = assert(step(snap1, V1, true))
      assert.are.same({ "migrations/0002_drop_notes.lua" }, migration_paths(dropped))
    end)

    it("refuses a required column without a default on an existing table", function()
      local _, snap1 = step(nil, V1)
      local files, err = step(snap1, V1:gsub("}\n$", "  due: date\n}\n"))
      assert.is_nil(files)
      assert.matches("tasks.due is required and has no @default", err.message, 1, true)
    end)

    it("refuses a column whose type and optionality change together", function()
      local _, snap1 = step(nil, V1)
      local files, err = step(snap1, V1:gsub("title: string", "title: int64?"))
      assert.is_nil(files)
      assert.matches("column tasks.title changed (type text -> bigint)", err.message, 1, true)
    end)

    it("changes a column's type: ALTER COLUMN TYPE on postgres, a rebuild keeping the rows on sqlite", function()
      local src = V1:gsub("}\n$", "  rank: string?\n  index(rank)\n}\n")
      local files1, snap1 = step(nil, src)
      local files2 = assert(step(snap1, (src:gsub("rank: string%?", "rank: int32?"))))
      assert.are.same({ "migrations/0002_change_tasks_rank_to_integer.lua" }, migration_paths(files2))
      local text = files2["migrations/0002_change_tasks_rank_to_integer.lua"]
      assert.matches([[ALTER TABLE "tasks" ALTER COLUMN "rank" TYPE INTEGER USING "rank"::INTEGER]], text, 1, true)
      local db = assert(zdb.open("sqlite::memory:"))
      apply(db, files1)
      db:insert_into("tasks"):values{ { title = "a", rank = "12" }, { title = "b", rank = db.null } }:exec()
      apply(db, files2)
      assert.are.same({ { title = "a", rank = 12 }, { title = "b" } },
        db:from("tasks"):select("title", "rank"):order_by("title"):all())
      assert(db:first("SELECT 1 AS x FROM pragma_index_list('tasks') WHERE name = 'tasks_rank_idx'"))
      local m = assert(loadstring(text))()
      db:transaction(function(tx) m.down(tx:strict_handle()) end)
      assert.are.equal("12", db:from("tasks"):where("title", "a"):first().rank)
      db:close()
      -- int32 -> int64 is INTEGER on sqlite either way: nothing to rebuild there
      local with_n = src:gsub("id: int64 @primary", "id: int64 @primary\n  n: int32?")
      local _, snap3 = step(nil, with_n)
      local files4 = assert(step(snap3, (with_n:gsub("n: int32%?", "n: int64?"))))
      local four = files4[migration_paths(files4)[1]]
      assert.is_nil(four:find("zever_rebuild", 1, true))
      assert.matches([[TYPE BIGINT USING "n"::BIGINT]], four, 1, true)
    end)

    it("refuses a type change on a table a foreign key touches", function()
      local users = "entity User { id: int64 @primary\n  name: string }\n"
      local src = V1:gsub("}\n$", "  belongs_to owner: User?\n}\n") .. users
      local _, snap1 = step(nil, src)
      local files, err = step(snap1, (src:gsub("name: string", "name: int32")))
      assert.is_nil(files)
      assert.matches("zever gen changes a type only on a table no foreign key touches (tasks)", err.message, 1, true)
    end)

    it("adds a belongs_to column with its foreign key to an existing table", function()
      local users = "entity User { id: int64 @primary }\n"
      local files1, snap1 = step(nil, V1 .. users)
      local v2 = V1:gsub("}\n$", "  belongs_to owner: User? @on_delete(set_null)\n}\n") .. users
      local files2 = assert(step(snap1, v2))
      local db = assert(zdb.open("sqlite::memory:"))
      apply(db, files1)
      apply(db, files2)
      db:insert_into("users"):values{ id = 7 }:exec()
      db:insert_into("tasks"):values{ title = "t", owner_id = 7 }:exec()
      local ok, err = db:try(function(d)
        return d:insert_into("tasks"):values{ title = "u", owner_id = 8 }:exec()
      end)
      assert.is_nil(ok)
      assert.are.equal("constraint", err.code)
      db:exec("DELETE FROM users")
      assert.is_nil(db:first("SELECT owner_id FROM tasks").owner_id)
      db:close()
    end)

    it("orders new tables after the tables they reference and reverts them in reverse", function()
      local plan = migrations.diff({}, migrations.schema(ir_of([[
entity Account { id: int64 @primary  belongs_to zone: Zone }
entity Zone { id: int64 @primary }
]])), false)
      assert.matches('^CREATE TABLE "zones"', plan.ops[1].up.sqlite[1])
      assert.matches('^CREATE TABLE "accounts"', plan.ops[1].up.sqlite[2])
      assert.are.same({ [[DROP TABLE "accounts"]], [[DROP TABLE "zones"]] }, plan.ops[1].down.sqlite)
    end)
  end)

  describe("driver", function()
    it("writes changed files only and never overwrites a create-once file", function()
      local dir = tmpdir()
      local files = { ["a/b.txt"] = "one", ["stub.lua"] = { content = "stub", once = true } }
      local r1 = assert(gen.write(files, dir))
      assert.are.same({ "a/b.txt", "stub.lua" }, r1.written)
      local f = assert(io.open(dir .. "/stub.lua", "wb"))
      f:write("mine")
      f:close()
      local r2 = assert(gen.write({ ["a/b.txt"] = "one", ["stub.lua"] = { content = "new", once = true } }, dir))
      assert.are.same({}, r2.written)
      assert.are.same({ "a/b.txt" }, r2.unchanged)
      assert.are.same({ "stub.lua" }, r2.kept)
      assert.are.equal("mine", read(dir .. "/stub.lua"))
      local r3 = assert(gen.write({ ["a/b.txt"] = "two" }, dir))
      assert.are.same({ "a/b.txt" }, r3.written)
      assert.are.equal("two", read(dir .. "/a/b.txt"))
      os.execute("rm -rf '" .. dir .. "'")
    end)

    it("names a misspelt backend with a suggestion", function()
      local list, err = gen.backends({ "modles" })
      assert.is_nil(list)
      assert.are.equal("invalid", err.code)
      assert.matches("unknown backend \"modles\" (did you mean models?)", err.message, 1, true)
    end)

    it("runs backends in the fixed order whatever order they are asked in", function()
      local list = assert(gen.backends({ "migrations", "models" }))
      assert.are.same({ "models", "migrations" }, { list[1].name, list[2].name })
    end)

    it("skips a missing backend by default and refuses it when asked for", function()
      -- A package path that holds only a models backend; the loaded ones are set aside.
      local dir = tmpdir()
      assert(gen.mkdir_p(dir .. "/dsl/backends"))
      local f = assert(io.open(dir .. "/dsl/backends/models.lua", "wb"))
      f:write('return { name = "models", generate = function() return { ["x.txt"] = "x" } end }\n')
      f:close()
      local saved, path = {}, package.path
      for _, name in ipairs(gen.ORDER) do
        saved[name] = package.loaded["dsl.backends." .. name]
        package.loaded["dsl.backends." .. name] = nil
      end
      package.path = dir .. "/?.lua"
      local ok, e = pcall(function()
        local list = assert(gen.backends())
        assert.are.equal(1, #list)
        assert.are.same({ ["x.txt"] = "x" }, (select(2, gen.generate({}, {}))).models)
        local none, err = gen.backends({ "jobs" })
        assert.is_nil(none)
        assert.matches("backend jobs is not available yet", err.message, 1, true)
      end)
      package.path = path
      for _, name in ipairs(gen.ORDER) do package.loaded["dsl.backends." .. name] = saved[name] end
      os.execute("rm -rf '" .. dir .. "'")
      assert(ok, e)
    end)

    it("refuses to generate from a schema with errors and writes nothing", function()
      local dir = tmpdir()
      local f = assert(io.open(dir .. "/bad.zen", "wb"))
      f:write("entity Task { title: strin }\n")
      f:close()
      local report, err = gen.run({ dir }, { out = dir .. "/out" })
      assert.is_nil(report)
      assert.are.equal("schema", err.code)
      assert.is_true(err.result.errors >= 1)
      assert.is_false(sys.isdir(dir .. "/out"))
      os.execute("rm -rf '" .. dir .. "'")
    end)
  end)
end)
