-- zever migrate up|down|status|new: applies, rolls back, lists and creates database migrations
-- (lua/zever/migrations.lua does the work; this file parses, prints and picks exit codes).
-- Progress lines go to stdout on a terminal; piped, up and down print nothing on success.
--
-- The database and the folder come from the app's configuration (db.dsn, db.migrations,
-- relative to the app folder), which --dsn and --migrations override (relative to the current
-- directory, as any path typed on a command line). The app folder: -C DIR or --app DIR.
-- --dir is a deprecated alias of --migrations.

local sys = require "zever.sys"
local cliapp = require "zever.cli.app"
local paths = require "zever.config.paths"

local USAGE = "zever migrate up|down|status|new <name> [--app DIR] [--dsn DSN] [--migrations DIR] [-n N]"

local function open(dsn, cfg, create)
  return cliapp.open_db(dsn, { busy_timeout = math.floor(cfg.db.busy_timeout * 1000) }, create)
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

function handlers.up(db, flags, tty)
  local migrations = require "zever.migrations"
  local done, err, partial = migrations.up(db, flags.dir, {
    progress = tty and function(_, m) io.write("applying ", label(m), "\n") end or nil,
  })
  if not done then return fail(db, err, partial, "up") end
  if tty then print(#done == 0 and "nothing to apply" or ("applied " .. #done .. " migration(s)")) end
  return 0
end

function handlers.down(db, flags, tty)
  local migrations = require "zever.migrations"
  local done, err, partial = migrations.down(db, flags.dir, flags.n or 1, {
    progress = tty and function(_, m) io.write("reverting ", label(m), "\n") end or nil,
  })
  if not done then return fail(db, err, partial, "down") end
  if tty then print(#done == 0 and "nothing to roll back" or ("rolled back " .. #done .. " migration(s)")) end
  return 0
end

function handlers.status(db, flags)
  local migrations = require "zever.migrations"
  local list, err = migrations.status(db, flags.dir)
  if not list then return fail(db, err, {}, "status") end
  if flags.json then
    local out = {}
    for i, m in ipairs(list) do
      out[i] = { version = m.version, name = m.name, applied = m.applied, applied_at = m.applied_at,
        missing = m.missing or nil }
    end
    print(require("zever.json").encode(out))
  else
    for _, m in ipairs(list) do
      local state = m.applied and "applied" or "pending"
      print(string.format("%-8s %s%s%s", state, label(m), m.applied_at and ("  " .. m.applied_at) or "",
        m.missing and "  (file missing)" or ""))
    end
  end
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
    { name = "json", summary = "print status as JSON" },
  },
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
      local path, err = require("zever.migrations").new(flags.dir, args[2])
      if not path then return (err.code == "invalid") and 2 or 1, "new: " .. err.message end
      print(paths.relative(path))
      return 0
    end
    local db, err = open(dsn, cfg, sub == "up")
    if not db then return 1, sub .. ": " .. err end
    local code, msg = handlers[sub](db, flags, sys.isatty(1))
    if code == 0 then db:close() end
    return code, msg
  end,
}
