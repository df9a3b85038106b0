-- zever migrate up|down|status|new: applies, rolls back, lists and creates database migrations
-- (lua/zever/migrations.lua does the work; this file parses, prints and picks exit codes).
-- Progress lines go to stdout on a terminal; piped, up and down print nothing on success.

local sys = require "zever.sys"

local USAGE = "zever migrate up|down|status|new <name> [--dsn DSN] [--dir DIR] [-n N]"

local function open(flags)
  local dsn = flags.dsn or "sqlite:app.db"
  local db, err = require("zever.db").open(dsn)
  if not db then return nil, "cannot open " .. dsn .. ": " .. tostring(err) end
  return db
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
    { name = "dsn", arg = "DSN", summary = "database to migrate (default sqlite:app.db)" },
    { name = "dir", arg = "DIR", summary = "folder of migration files (default migrations)" },
    { name = "n", arg = "N", type = "number", summary = "how many migrations to roll back (default 1)" },
    { name = "json", summary = "print status as JSON" },
  },
  run = function(args, flags)
    local sub = args[1]
    flags.dir = flags.dir or "migrations"
    if sub == "new" then
      if not args[2] then return 2, "new: missing the migration name; usage: " .. USAGE end
      if args[3] then return 2, "new: one name only; usage: " .. USAGE end
      local path, err = require("zever.migrations").new(flags.dir, args[2])
      if not path then return (err.code == "invalid") and 2 or 1, "new: " .. err.message end
      print(path)
      return 0
    end
    if not handlers[sub] then
      return 2, (sub and ("unknown subcommand '" .. sub .. "'") or "missing subcommand")
        .. "; usage: " .. USAGE
    end
    if args[2] then return 2, sub .. ": unexpected argument '" .. args[2] .. "'" end
    if flags.n ~= nil and (sub ~= "down" or flags.n < 1 or flags.n % 1 ~= 0) then
      return 2, "-n takes a positive integer and only applies to down"
    end
    local db, err = open(flags)
    if not db then return 1, sub .. ": " .. err end
    local code, msg = handlers[sub](db, flags, sys.isatty(1))
    if code == 0 then db:close() end
    return code, msg
  end,
}
