-- zever db console [--app DIR] [--dsn DSN] [-- ARGS...]: opens the database's own shell on the
-- configured database (db.dsn, or --dsn): psql for postgres:// and postgresql:// DSNs, sqlite3
-- for sqlite: ones. ARGS after -- go to the shell as they are (`-- -c "select 1"`).
-- `zever dbshell` is the same command (cmd/zever/dbshell.lua).
--
-- It must never show the DSN's password: it is not printed, and psql does not get it on its
-- command line (argv is visible to every user in ps): the password goes to psql in its
-- environment (PGPASSWORD), the URI it gets has none. The shell replaces this process (execv):
-- its exit code is the command's, and the terminal is the shell's.

local ffi = require "ffi"
local cliapp = require "zever.cli.app"
local paths = require "zever.config.paths"

local format, gsub, char = string.format, string.gsub, string.char

local USAGE = "zever db console [--app DIR] [--dsn DSN] [-- ARGS...]"

-- The absolute path of program name on PATH, or nil.
local function which(name)
  for dir in (os.getenv("PATH") or "/usr/bin:/bin"):gmatch("[^:]+") do
    local path = dir .. "/" .. name
    local f = io.open(path, "r")
    if f then
      f:close()
      if os.execute("test -x '" .. path:gsub("'", "'\\''") .. "'") == 0 then return path end
    end
  end
  return nil
end

local function unescape(s)
  return (gsub(s, "%%(%x%x)", function(h) return char(tonumber(h, 16)) end))
end

-- Splits a libpq URI into the URI without its password and the password (decoded), or nil when
-- it has none. The password may be in the authority (user:pw@) or in the query (password=pw).
local function split_password(dsn)
  local scheme, rest = dsn:match("^(postgres[%w]*://)(.*)$")
  if not scheme then return nil end
  local password
  local authority, tail = rest:match("^([^/?#]*)(.*)$")
  local userinfo, hostpart = authority:match("^(.*)@(.*)$")
  if userinfo then
    local user, pw = userinfo:match("^([^:]*):(.*)$")
    if user then
      password = unescape(pw)
      authority = user .. "@" .. hostpart
    end
  end
  local path, query = tail:match("^([^?]*)%?(.*)$")
  if query then
    local kept = {}
    for pair in query:gmatch("[^&]+") do
      local k, v = pair:match("^([^=]*)=(.*)$")
      if k == "password" then password = unescape(v) else kept[#kept + 1] = pair end
    end
    tail = path .. (#kept > 0 and ("?" .. table.concat(kept, "&")) or "")
  end
  return scheme .. authority .. tail, password
end

-- Replaces this process with program (an absolute path) and its arguments; returns only on a
-- failure, with a message.
local function exec(program, args, env)
  require "zever.cdef.libc" -- execv, setenv, strerror
  for k, v in pairs(env or {}) do
    if ffi.C.setenv(k, v, 1) ~= 0 then return "cannot set " .. k end
  end
  local argv = ffi.new("char *[?]", #args + 2)
  local keep = { ffi.new("char[?]", #program + 1, program) }
  argv[0] = keep[1]
  for i, a in ipairs(args) do
    keep[i + 1] = ffi.new("char[?]", #a + 1, a)
    argv[i] = keep[i + 1]
  end
  argv[#args + 1] = nil
  io.stdout:flush()
  io.stderr:flush()
  ffi.C.execv(program, argv)
  return format("cannot run %s: %s", program, ffi.string(ffi.C.strerror(ffi.errno())))
end

-- What to run for dsn: program name, its arguments, its environment; or nil, message, code.
local function shell_for(dsn, extra)
  local db = require "zever.db"
  local scheme, target = db.parse_dsn(dsn)
  if scheme == "sqlite" then
    if target == ":memory:" or target == "" then
      return nil, "the database is in memory (sqlite::memory:): there is nothing to open", 2
    end
    if target:sub(1, 5) == "file:" then target = target:match("^file:([^?]*)") end
    local args = { target }
    for _, a in ipairs(extra) do args[#args + 1] = a end
    return "sqlite3", args, {}
  elseif scheme == "postgres" or scheme == "postgresql" then
    local uri, password = split_password(dsn)
    if not uri then return nil, "not a postgres URI (want postgres://user:password@host:port/db)", 2 end
    local args = { uri }
    for _, a in ipairs(extra) do args[#args + 1] = a end
    return "psql", args, { PGPASSWORD = password }
  end
  return nil, format('db console knows sqlite: and postgres:// DSNs, not "%s:"', tostring(scheme)), 2
end

local M = {
  name = "db",
  json = false,
  dry_run = false,
  why = "replaces itself with psql or sqlite3",
  summary = "Open the database's shell (psql or sqlite3) on the configured database",
  usage = USAGE,
  help = "The DSN comes from db.dsn (zever.yaml, DB_DSN) or --dsn and is never printed; psql gets\n"
    .. "the password in its environment (PGPASSWORD), not on its command line.",
  flags = {
    cliapp.FLAG,
    { name = "dsn", arg = "DSN", summary = "the database to open (default: db.dsn)" },
  },
}

M.split_password = split_password

function M.run(args, flags)
  local sub = args[1]
  if sub ~= "console" then
    local hint = sub and require("cmd.zever").suggest(sub, { "console" }) or ""
    return 2, (sub and format('unknown subcommand "%s".%s', sub, hint) or "missing subcommand.")
      .. " Usage: " .. USAGE
  end
  local extra = {}
  for i = 2, #args do extra[#extra + 1] = args[i] end
  local dsn = flags.dsn and paths.resolve_dsn(flags.dsn, paths.cwd())
  if not dsn then
    local target, terr = cliapp.resolve(flags, nil, "db")
    if not target then return 2, terr end
    local cfg, err = cliapp.config(target)
    if not cfg then return 1, "invalid configuration:\n" .. tostring(err) end
    dsn = cfg.db.dsn
  end
  local program, list, env = shell_for(dsn, extra)
  if not program then return env, list end
  local path = which(program)
  if not path then
    return 1, format("%s is not installed (Debian: apt-get install %s)", program,
      program == "psql" and "postgresql-client" or "sqlite3")
  end
  return 1, exec(path, list, env)
end

return M
