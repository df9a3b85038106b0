-- zever gen [paths...]: compiles the .zen schema (default schema/) and runs the backends
-- (dsl/gen.lua does the work; this file parses, prints and picks exit codes). Files are written
-- under --out (default generated/), the migrations in the app's migrations folder, only when
-- their bytes changed; "create once" files (handler stubs) are never overwritten. With
-- --update-golden it regenerates the committed goldens of the compiler's fixtures instead
-- (dsl/testdata/gen/<fixture>/<backend>/...).
-- Diagnostics go to stderr; the list of written files goes to stdout on a terminal only.

local sys = require "zever.sys"
local json = require "zever.json"
local output = require "zever.cli.output"
local paths = require "zever.config.paths"

local format = string.format

local function plural(n, word)
  return format("%d %s%s", n, word, n == 1 and "" or "s")
end

-- Every file under dir, relative to it, sorted.
local function tree(dir, prefix, out)
  for _, name in ipairs(sys.listdir(dir) or {}) do
    local full, rel = dir .. "/" .. name, prefix .. name
    if sys.isdir(full) then tree(full, rel .. "/", out) else out[#out + 1] = rel end
  end
  return out
end

-- The folder the migrations backend writes into: --migrations, else the app's db.migrations
-- (the app is the folder above --out, as for handler stubs). One sequence with the app's own
-- migrations: `zever migrate up` and zever.testing apply that folder. An older layout (numbered
-- files under <out>/migrations, as zever gen wrote before) is refused with what to do: the
-- two numberings would collide in schema_migrations.
local function migrations_dir(flags, out)
  local dir = flags.migrations and paths.absolute(flags.migrations)
  if not dir then
    local root = out:match("^(.*)/[^/]*$") or "."
    local cfg, err = require("zever.config").load{ dir = root }
    if not cfg then return nil, "invalid configuration:\n" .. tostring(err) end
    dir = cfg.db.migrations
  end
  local old = paths.absolute(out .. "/migrations")
  if old ~= dir and require("dsl.gen").last_version(old) > 0 then
    return nil, format("%s holds migrations from an older zever gen; gen now writes them into "
      .. "%s (db.migrations), one sequence with the app's own: move %s/* there (renumber a "
      .. "file whose version the folder already has, before it is applied anywhere), then run "
      .. "zever gen again", paths.relative(old), paths.relative(dir), paths.relative(old))
  end
  return dir
end

local function update_goldens(flags)
  local gen = require "dsl.gen"
  local home = sys.home()
  local root = home .. "/dsl/testdata/gen"
  local count, fixtures = 0, 0
  local ran
  if flags.backend then
    ran = {}
    for _, name in ipairs(flags.backend) do ran[name] = true end
  end
  for _, fx in ipairs(gen.golden_fixtures(home)) do
    local f = assert(io.open(fx.path, "rb"))
    local src = f:read("*a")
    f:close()
    local files = gen.golden(fx.file, src, { backends = flags.backend })
    if files then
      fixtures = fixtures + 1
      local dir = root .. "/" .. fx.name
      -- Files no backend writes any more are removed, so that the goldens are exactly the output.
      for _, rel in ipairs(tree(dir, "", {})) do
        if not files[rel] and (not ran or ran[rel:match("^[^/]+")]) then
          os.remove(dir .. "/" .. rel)
        end
      end
      local report, err = gen.write(files, dir)
      if not report then return 1, tostring(err) end
      count = count + #report.written
    end
  end
  if sys.isatty(1) then
    print(format("updated %s in %s (%s)", plural(count, "golden file"), "dsl/testdata/gen",
      plural(fixtures, "fixture")))
  end
  return 0
end

return {
  name = "gen",
  summary = "Compile the .zen schema into models, migrations, routes, jobs and OpenAPI",
  usage = "zever gen [paths...] [--backend models,migrations,...] [--out DIR] [--migrations DIR]"
    .. " [--allow-drop] [--update-golden]",
  help = "Paths are .zen files or folders searched for them (default: schema/). The schema is\n"
    .. "checked first (as by zever check); any error stops the run before anything is written.\n"
    .. "Backends run in the order models, migrations, routes, jobs, openapi (default: all that\n"
    .. "exist). A file is written only when its content changed. The migrations backend\n"
    .. "compares the schema with schema.snapshot.lua in the app's migrations folder\n"
    .. "(db.migrations, default migrations/) and writes the next migration there, numbered\n"
    .. "after every file the folder has: `zever migrate up` applies them with the app's own.\n"
    .. "Dropping a table or a column needs --allow-drop.\n"
    .. "--dry-run compiles and lists the files (and handler stubs) it would write; nothing is\n"
    .. "written. --json prints {written, unchanged, kept, stubs} (with --dry-run: the actions).\n"
    .. "On a terminal a progress bar follows the phases (compile, each backend) and the writes.\n"
    .. "Exit codes: 0 ok, 1 schema errors or a refused change, 2 usage.",
  json = true,
  dry_run = true,
  flags = {
    { name = "backend", arg = "LIST", type = "list",
      summary = "backends to run, comma-separated (default: all available)" },
    { name = "out", arg = "DIR", summary = "output folder (default generated)" },
    { name = "migrations", arg = "DIR",
      summary = "folder for the migrations backend (default: db.migrations)" },
    { name = "allow-drop", summary = "let migrations drop tables and columns (data is lost)" },
    { name = "update-golden", summary = "regenerate dsl/testdata/gen from the compiler's fixtures" },
  },
  run = function(args, flags)
    local gen = require "dsl.gen"
    if flags.backend then
      local ok, err = gen.backends(flags.backend)
      if not ok then return err.code == "invalid" and 2 or 1, err.message end
    end
    if flags["update-golden"] then
      if #args > 0 or flags.out then return 2, "--update-golden takes no paths and no --out" end
      return update_goldens(flags)
    end
    if #args == 0 then args = { "schema" } end
    local dry = flags["dry-run"]
    local out = (flags.out or "generated"):gsub("/+$", "")
    local mdir, merr = migrations_dir(flags, out)
    if not mdir then return 1, merr end
    -- On a terminal one bar follows the phases (compile, each backend), another the writes.
    local progress = require "zever.cli.progress"
    local phases, started = progress.new("gen", 1 + #(gen.backends(flags.backend) or {})), 0
    local report, err = gen.run(args, { backends = flags.backend, out = flags.out,
      migrations = mdir, allow_drop = flags["allow-drop"], dry_run = true,
      step = phases.active and function(label)
        phases:set(started, label) -- the phases before this one are done
        started = started + 1
      end or nil })
    phases:finish()
    local result = report and report.result or (err and err.result)
    if result and #result.diags > 0 then
      io.stderr:write(require("dsl.diagnostics").render(result.diags, result.sources))
    end
    if not report then
      if err.code == "schema" then
        return 1, format("%s; nothing was generated (run zever check for the same report)",
          err.message)
      end
      return err.code == "invalid" and 2 or 1, err.message
    end
    -- Compiled with nothing written; now each file is written (or, dry, compared) in turn,
    -- under out or (the migrations backend's) the migrations folder: gen.place.
    local where = { out = out, migrations = mdir }
    local files, list = report.files, {}
    for path in pairs(files) do list[#list + 1] = path end
    table.sort(list)
    local bar = (not dry) and progress.new("gen", #list) or nil
    local done = { written = {}, unchanged = {}, kept = {} }
    local shown = {} -- path -> what the user reads: the file's path from the current folder
    for _, path in ipairs(list) do
      local f = files[path]
      local dir, rel = gen.place(path, where)
      shown[path] = paths.relative(dir .. "/" .. rel)
      if dry then
        local old = gen.read(dir .. "/" .. rel)
        local content = type(f) == "table" and f.content or f
        local bucket = (old ~= nil and type(f) == "table" and f.once) and "kept" or
          (old == content and "unchanged" or "written")
        done[bucket][#done[bucket] + 1] = shown[path]
      else
        local r, werr = gen.write({ [rel] = f }, dir)
        if not r then
          bar:finish()
          return 1, tostring(werr and werr.message or werr)
        end
        for k, v in pairs(done) do
          if #r[k] > 0 then v[#v + 1] = shown[path] end
        end
        bar:step(path)
      end
    end
    if bar then bar:finish() end
    for _, v in pairs(done) do table.sort(v) end
    local added, stubs = require("zever.cli.stubs").run(result, flags) -- h5-dev: handlers/ stubs
    if added ~= 0 then return added end
    local stub_lines = stubs and stubs.added or {}
    if dry then
      local actions = {}
      for _, p in ipairs(done.written) do
        actions[#actions + 1] = { action = "write", target = p }
      end
      for _, line in ipairs(stub_lines) do
        actions[#actions + 1] = { action = "add stub", target = line }
      end
      output.would(flags, actions, { unchanged = #done.unchanged, kept = #done.kept })
      return 0
    end
    if flags.json then
      output.emit(flags, { written = json.array(done.written), unchanged = json.array(done.unchanged),
        kept = json.array(done.kept), stubs = json.array(stub_lines) })
    elseif sys.isatty(1) then
      for _, path in ipairs(done.written) do print("wrote " .. path) end
      for _, path in ipairs(done.kept) do print("kept  " .. path .. " (yours)") end
      print(format("zever gen: %s, %s written, %d unchanged", plural(#result.files, "file"),
        plural(#done.written, "file"), #done.unchanged))
    end
    return 0
  end,
}
