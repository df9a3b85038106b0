-- zever migrate up|down|status|new: applies, rolls back, lists and creates database migrations
-- (lua/zever/migrations.lua does the work; this file parses, prints and picks exit codes).
-- On a terminal up and down draw a progress bar (zever.cli.progress) and name what they applied;
-- piped, they print nothing on success (--json: {"applied": [...]} / {"reverted": [...]}).
-- --dry-run lists what up / down / new would do and changes nothing (not even schema_migrations).
--
-- The database and the folder come from the app's configuration (db.dsn, db.migrations,
-- relative to the app folder), which --dsn and --migrations override (relative to the current
-- directory, as any path typed on a command line). The app folder: -C DIR or --app DIR.
-- --dir is a deprecated alias of --migrations.

local sys = require "zever.sys"
local cliapp = require "zever.cli.app"
local paths = require "zever.config.paths"
local json = require "zever.json"
local output = require "zever.cli.output"
local progress = require "zever.cli.progress"

local USAGE = "zever migrate up|down|status|new <name> [--app DIR] [--dsn DSN] [--migrations DIR] [-n N]"

local function open(dsn, cfg, create)
  return cliapp.open_db(dsn, { busy_timeout = math.floor(cfg.db.busy_timeout * 1000) }, create)
end

-- The database for status and dry runs, which only read: nil (and no error) for a SQLite file
-- that does not exist (nothing applied; the file is not created), else opened without switching
-- it to WAL (that rewrites the file's header), so that every byte stays as it was.
local function open_read(dsn, cfg)
  local file = dsn:match("^sqlite:(.+)$")
  if file and file ~= ":memory:" and not sys.mtime(file) then return nil end
  return cliapp.open_db(dsn, { busy_timeout = math.floor(cfg.db.busy_timeout * 1000), wal = false })
end

local function label(m)
  return m.version .. "_" .. m.name
end

local function fail(db, err, done, verb)
  if db then db:close() end
  local msg = verb .. ": " .. (err and err.message or "failed")
  if #done > 0 then msg = msg .. " (" .. #done .. " done before it)" end
  return 1, msg
end

local handlers = {}

-- The migrations up (or down) would run, without writing anything: the applied versions are
-- read only when schema_migrations exists (zever.migrations.has_table; nothing is created).
local function applied_versions(db)
  local migrations = require "zever.migrations"
  local exists, err = migrations.has_table(db)
  if exists == nil then error(err, 0) end
  local applied = {}
  if not exists then return applied end
  local soft = db.try_handle and db:try_handle() or db
  for _, r in ipairs(soft:from(migrations.TABLE):order_by("version"):all() or {}) do
    applied[tonumber(r.version)] = r
  end
  return applied
end

local function plan(db, flags, sub)
  local migrations = require "zever.migrations"
  local list, err = migrations.list(flags.dir)
  if not list then return nil, err end
  local applied = db and applied_versions(db) or {}
  local out = {}
  -- What up and down refuse, the dry run refuses too.
  for _, m in ipairs(list) do
    local ce = migrations.conflict(m, applied[tonumber(m.version)])
    if ce then return nil, ce end
  end
  if sub == "up" then
    for _, m in ipairs(list) do
      if not applied[tonumber(m.version)] then
        out[#out + 1] = { action = "apply", target = label(m), version = m.version, name = m.name }
      end
    end
  else
    local versions = {}
    for v in pairs(applied) do versions[#versions + 1] = v end
    table.sort(versions, function(a, b) return a > b end)
    local by = {}
    for _, m in ipairs(list) do by[tonumber(m.version)] = m end
    for i = 1, math.min(flags.n or 1, #versions) do
      local row = applied[versions[i]]
      local m = by[versions[i]] or { version = row.version, name = row.name }
      out[#out + 1] = { action = "revert", target = label(m), version = m.version, name = m.name }
    end
  end
  return out
end

-- A progress(event, m) for migrations.up/down drawing the CLI's bar (a no-op when piped).
local function bar_for(verb, total)
  local bar = progress.new("migrate " .. verb, total)
  local n = 0
  return bar, function(_, m)
    bar:set(n, label(m))
    n = n + 1
  end
end

local function labels(done)
  local out = {}
  for i, m in ipairs(done) do out[i] = label(m) end
  return json.array(out)
end

function handlers.up(db, flags, tty)
  local migrations = require "zever.migrations"
  local todo = plan(db, flags, "up")
  local bar, step = bar_for("up", todo and #todo or 0)
  local done, err, partial = migrations.up(db, flags.dir, { progress = step })
  bar:set(done and #done or bar.done)
  bar:finish()
  if not done then return fail(db, err, partial, "up") end
  if tty and not flags.json then
    for _, m in ipairs(done) do print("applied " .. label(m)) end
  end
  output.emit(flags, { applied = labels(done) }, tty and
    (#done == 0 and "nothing to apply" or ("applied " .. #done .. " migration(s)")) or nil)
  return 0
end

function handlers.down(db, flags, tty)
  local migrations = require "zever.migrations"
  local todo = plan(db, flags, "down")
  local bar, step = bar_for("down", todo and #todo or 0)
  local done, err, partial = migrations.down(db, flags.dir, flags.n or 1, { progress = step })
  bar:set(done and #done or bar.done)
  bar:finish()
  if not done then return fail(db, err, partial, "down") end
  if tty and not flags.json then
    for _, m in ipairs(done) do print("reverted " .. label(m)) end
  end
  output.emit(flags, { reverted = labels(done) }, tty and
    (#done == 0 and "nothing to roll back" or ("rolled back " .. #done .. " migration(s)")) or nil)
  return 0
end

-- db is nil when the database does not exist yet: every migration is pending.
function handlers.status(db, flags)
  local migrations = require "zever.migrations"
  local list, err
  if db then
    list, err = migrations.status(db, flags.dir)
  else
    list, err = migrations.list(flags.dir)
  end
  if not list then return fail(db, err, {}, "status") end
  local out = {}
  for i, m in ipairs(list) do
    out[i] = { version = m.version, name = m.name, applied = m.applied, applied_at = m.applied_at,
      missing = m.missing or nil, conflict = m.conflict }
  end
  output.emit(flags, json.array(out), function()
    for _, m in ipairs(list) do
      local state = m.applied and "applied" or "pending"
      print(string.format("%-8s %s%s%s%s", state, label(m), m.applied_at and ("  " .. m.applied_at) or "",
        m.missing and "  (file missing)" or "",
        m.conflict and ("  (its version is recorded as applied by " .. m.conflict .. ")") or ""))
    end
  end)
  return 0
end

return {
  name = "migrate",
  summary = "Apply, roll back or list database migrations",
  usage = USAGE,
  flags = {
    cliapp.FLAG,
    { name = "dsn", arg = "DSN", summary = "database to migrate (default: db.dsn)" },
    { name = "migrations", arg = "DIR", summary = "folder of migration files (default: db.migrations)" },
    { name = "dir", arg = "DIR", summary = "deprecated: use --migrations DIR" },
    { name = "n", arg = "N", type = "number", summary = "how many migrations to roll back (default 1)" },
  },
  json = { "status", "up", "down", "new" },
  dry_run = { "up", "down", "new" },
  run = function(args, flags)
    local sub = args[1]
    if flags.dir ~= nil then
      cliapp.deprecated("migrate", "--dir", "--migrations DIR")
      if flags.migrations ~= nil and flags.migrations ~= flags.dir then
        return 2, "give the migrations folder once: --migrations or --dir"
      end
      flags.migrations, flags.dir = flags.migrations or flags.dir, nil
    end
    if sub ~= "new" and not handlers[sub] then
      return 2, (sub and ("unknown subcommand '" .. sub .. "'") or "missing subcommand")
        .. "; usage: " .. USAGE
    end
    if sub == "new" then
      if not args[2] then return 2, "new: missing the migration name; usage: " .. USAGE end
      if args[3] then return 2, "new: one name only; usage: " .. USAGE end
    else
      if args[2] then return 2, sub .. ": unexpected argument '" .. args[2] .. "'" end
      if flags.n ~= nil and (sub ~= "down" or flags.n < 1 or flags.n % 1 ~= 0) then
        return 2, "-n takes a positive integer and only applies to down"
      end
    end
    local target, terr = cliapp.resolve(flags, nil, "migrate")
    if not target then return 2, terr end
    local cfg, cerr = cliapp.config(target)
    if not cfg then return 1, "invalid configuration:\n" .. tostring(cerr) end
    -- flags > configuration > defaults
    flags.dir = flags.migrations and paths.absolute(flags.migrations) or cfg.db.migrations
    local dsn = flags.dsn and paths.resolve_dsn(flags.dsn, paths.cwd()) or cfg.db.dsn
    if sub == "new" then
      local migrations = require "zever.migrations"
      if flags["dry-run"] then
        -- The name new() would pick, without creating the folder or file.
        local file, nerr = migrations.next_path(flags.dir, args[2])
        if not file then return nerr.code == "invalid" and 2 or 1, "new: " .. nerr.message end
        output.would(flags, { { action = "write", target = paths.relative(file) } })
        return 0
      end
      local path, err = migrations.new(flags.dir, args[2])
      if not path then return (err.code == "invalid") and 2 or 1, "new: " .. err.message end
      output.emit(flags, { path = paths.relative(path) }, paths.relative(path))
      return 0
    end
    if flags["dry-run"] or sub == "status" then
      -- Read only: a database that does not exist yet has nothing applied.
      local db, err = open_read(dsn, cfg)
      if err then return 1, sub .. ": " .. err end
      if sub == "status" then
        local code, msg = handlers.status(db, flags)
        if code == 0 and db then db:close() end
        return code, msg
      end
      local todo, perr = plan(db, flags, sub)
      if db then db:close() end
      if not todo then return 1, sub .. ": " .. tostring(perr and perr.message or perr) end
      output.would(flags, todo)
      return 0
    end
    local db, err = open(dsn, cfg, sub == "up")
    if not db then return 1, sub .. ": " .. err end
    local code, msg = handlers[sub](db, flags, sys.isatty(1))
    if code == 0 then db:close() end
    return code, msg
  end,
}
