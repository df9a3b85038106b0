-- zever.cli.app: how every command names the app it works on, in one place.
--
-- The convention (docs/cli.md): the app is a folder holding zever.yaml and app.lua (or the
-- file http.app names). A command finds it, in this order:
--
--   zever -C DIR <command> ...    run as if started in DIR, like git -C and make -C (the
--   zever <command> -C DIR ...    dispatcher changes directory before the command runs)
--   --app PATH                    the app folder or app file (every command that loads an app)
--   a positional [app.lua | dir]  where the command had one (serve, worker, routes, schedule)
--   otherwise                     the current directory
--
-- Old spellings keep working and print one deprecation line on stderr: --dir meaning the
-- config folder (doctor, config, mail) is -C DIR; migrate's --dir is --migrations DIR.
--
--   cliapp.FLAG                   the --app flag spec, for a command's flags table
--   cliapp.chdir(dir)             -> true | nil, message
--   cliapp.restore_dir()          -> true | nil, message   (back to the folder before -C)
--   cliapp.deprecated(cmd, old, new)  writes "zever CMD: OLD is deprecated; use NEW" to stderr
--   cliapp.resolve(flags, positional[, cmd]) -> target | nil, message
--       target = { dir = absolute app folder, file = absolute app file or nil }
--       flags.app and positional name the app (a folder or a file); flags.dir (a deprecated
--       alias of -C, for the commands that had it) is honoured with a deprecation line
--   cliapp.is_app(target)         -> true | nil, message: the folder holds an app (app.lua,
--                                    zever.yaml or zever.json), for the commands that write
--                                    into it (generate, add), so that neither writes into a
--                                    folder that is not an app (Rails' `rails generate`)
--   cliapp.config(target)         -> cfg | nil, err      (zever.config.load{ dir = target.dir })
--   cliapp.missing_adapter(battery, adapter) -> one line: that adapter is absent, what to do
--   cliapp.open_db(dsn, opts[, mkdir_parent]) -> db | nil, one-line message without secrets
--   cliapp.load(target)           -> app, path           (zever.app.load(file, target.dir);
--                                                         raises as it does; interpreted)
--   cliapp.interpreted(fn, ...)   -> pcall(fn, ...) with the JIT off, then as it was
--
-- Flags override the configuration and the configuration overrides defaults: commands read
-- flags first, then the cfg this module loads. It must not know any command's own flags.

local ffi = require "ffi"
local jit = require "jit"
local sys = require "zever.sys"
local paths = require "zever.config.paths"

local format = string.format
local unpack = unpack

local function pack(...) return { n = select("#", ...), ... } end

local M = {}

M.FLAG = { name = "app", arg = "PATH", summary = "the app folder or app file (default: .)" }

require "zever.cdef.libc" -- chdir

function M.chdir(dir)
  if type(dir) ~= "string" or dir == "" then return nil, "-C wants a folder" end
  if not sys.isdir(dir) then return nil, format('-C %s: no such folder', dir) end
  local start = paths.cwd()
  if ffi.C.chdir(dir) ~= 0 then return nil, format('-C %s: cannot change to it', dir) end
  M.start_dir = M.start_dir or start
  return true
end

-- Goes back to the folder the process started in (before -C), so that a command that runs its
-- own command line again (zever worker on SIGHUP) finds a relative -C DIR where it was.
function M.restore_dir()
  if M.start_dir and ffi.C.chdir(M.start_dir) ~= 0 then
    return nil, format("cannot go back to %s", M.start_dir)
  end
  return true
end

function M.deprecated(cmd, old, new)
  io.stderr:write(format("zever %s: %s is deprecated; use %s\n", cmd, old, new))
end

local function exists(path)
  local f = io.open(path, "r")
  if not f then return false end
  f:close()
  return true
end

local function resolve(flags, positional, cmd)
  flags = flags or {}
  local named = flags.app
  if flags.dir ~= nil then
    M.deprecated(cmd or "", "--dir", "-C DIR (or --app DIR)")
    if named ~= nil and named ~= flags.dir then return nil, "give the app once: --dir or --app" end
    named = flags.dir
  end
  if named ~= nil and positional ~= nil and named ~= positional then
    return nil, format('give the app once: "%s" or --app %s', positional, named)
  end
  local name = positional or named
  if name == nil then
    local dir = paths.absolute(".")
    return { dir = dir }
  end
  if name == "" then return nil, "--app wants a folder or an app file" end
  local abs = paths.absolute(name)
  if sys.isdir(abs) then return { dir = abs } end
  if not exists(abs) then
    return nil, format('no app at "%s": want a folder (with zever.yaml, app.lua) or an app file', name)
  end
  return { dir = paths.dirname(abs), file = abs }
end

function M.is_app(target)
  if target.file then return true end
  for _, f in ipairs({ "app.lua", "zever.yaml", "zever.json" }) do
    if exists(target.dir .. "/" .. f) then return true end
  end
  return nil, format("%s is not an app folder (no app.lua, zever.yaml or zever.json): " ..
    "`zever new NAME` makes one; --app DIR (or -C DIR) names another", target.dir)
end

-- In a bundle, the folder resolved is the one the bundle's app files stand for (zever.assets).
function M.resolve(flags, positional, cmd)
  local target, err = resolve(flags, positional, cmd)
  local assets = require "zever.assets"
  if target and assets.bundled then assets.root(target.dir) end
  return target, err
end

-- Adapters that are configurable (the schema names them) but not written yet, and what to do.
-- (PostgreSQL was one until adapters.db.postgres landed.)
local NOT_YET = {}

-- One line for a configured adapter this build does not have: which one, and what to do.
function M.missing_adapter(battery, adapter)
  local known = require("zever.adapters").names(battery)
  local hint = NOT_YET[adapter] or format("this build has no %s adapter by that name", battery)
  return format('%s: adapter "%s" is not available: %s (available: %s)', battery, adapter, hint,
    #known > 0 and table.concat(known, ", ") or "none")
end

-- Opens the database of dsn for a command (migrate): db | nil, one-line message. A scheme
-- without an adapter module is one line naming it (no module search path dump); every other
-- failure keeps the adapter's message with the DSN's password hidden. mkdir_parent: create
-- the folder of a SQLite file first (`migrate up` makes the database the app will use).
function M.open_db(dsn, opts, mkdir_parent)
  local db = require "zever.db"
  local scheme = db.parse_dsn(dsn)
  if not scheme then
    return nil, 'not a DSN (want "sqlite:<file>", "sqlite::memory:" or '
      .. '"postgres://user:password@host:port/db")'
  end
  if scheme == "postgresql" then scheme = "postgres" end
  if not require("zever.assets").module("adapters.db." .. scheme) then
    return nil, M.missing_adapter("db", scheme)
  end
  local file = scheme == "sqlite" and dsn:match("^sqlite:(/.*)$")
  if file and mkdir_parent then
    local dir = paths.dirname(file)
    if not sys.isdir(dir) then os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "'") end
  end
  local conn, err = db.open(dsn, opts)
  if not conn then
    local redact = require("zever.config.redact")
    return nil, redact.redact_string("cannot open " .. dsn .. ": " .. tostring(err))
  end
  return conn
end

-- The folder is passed relative to the current directory when it is below it, so that messages
-- name "zever.yaml:3", not a long absolute path; paths in cfg come out absolute either way.
function M.config(target)
  return require("zever.config").load{ dir = paths.relative(target.dir) }
end

-- pcall(fn, ...) with the JIT off; the JIT is as it was afterwards. For what a command runs
-- once (loading the app, its configuration): with the JIT on, LuaJIT records and compiles
-- traces of loops that never run again, about half the instructions of `zever routes`
-- (BENCHMARKS.md "Session 10: the kit").
function M.interpreted(fn, ...)
  local on = jit.status()
  jit.off()
  local ret = pack(pcall(fn, ...))
  if on then jit.on() end
  return unpack(ret, 1, ret.n)
end

local function load(target)
  local file = target.file
  if not file then
    local cfg, err = M.config(target)
    if not cfg then error("invalid configuration:\n" .. tostring(err), 0) end
    file = cfg.http.app
  end
  return require("zever.app").load(file, target.dir)
end

-- Loads the app, interpreted (M.interpreted). The file is target.file, or http.app of the app
-- folder's configuration (app.lua unless zever.yaml or HTTP_APP says otherwise). Raises with a
-- message fit for the CLI.
function M.load(target)
  local ret = pack(M.interpreted(load, target))
  if not ret[1] then error(ret[2], 0) end
  return unpack(ret, 2, ret.n)
end

return M
