-- cmd/zever: the dispatcher. It finds the command file for argv[1], parses that command's flags
-- and calls its run(args, flags). Commands live one per file in cmd/zever/<name>.lua, each a
-- table {name, summary, usage, flags, run}; this file must not learn about any of them.
--
-- Exit codes: 0 ok, 1 runtime error, 2 usage error (unknown command or flag, bad flag value).

local sys = require "zever.sys"
local bundle = require "zever.bundle" -- a bundle carries cmd/zever/ and the index in its payload

local concat, sort = table.concat, table.sort
local format = string.format
local type, ipairs, pairs = type, ipairs, pairs

local M = {}

-- zever.cli.output (what --json and --dry-run print) loads only when something prints through
-- it: the commands that use it require it, the dispatcher only for a failure under --json. What
-- every start needs (which commands declare the flags, and refusing them where they do not
-- apply) is here, and zever.cli.output re-exports it.

M.JSON_FLAG = { name = "json", summary = "print one JSON document on stdout (failures as JSON on stderr)" }
M.DRY_FLAG = { name = "dry-run", summary = "say what would be done; change nothing" }

local FLAG = { json = "json", dry_run = "dry-run" }

-- Whether cmd declares kind ("json" | "dry_run") for the subcommand sub (the first argument).
function M.supports(cmd, kind, sub)
  local v = cmd[kind]
  if v == true then return true end
  if type(v) ~= "table" then return false end
  for _, s in ipairs(v) do
    if s == sub then return true end
  end
  return false
end

-- Whether cmd declares kind for anything.
function M.declared(cmd, kind)
  local v = cmd[kind]
  return v == true or (type(v) == "table" and #v > 0)
end

local function has_flag(flags, name)
  for _, f in ipairs(flags) do
    if f.name == name then return true end
  end
  return false
end

-- cmd.flags plus --json / --dry-run where declared (each once; a command's own stays).
function M.with_flags(cmd)
  local flags = cmd.flags or {}
  local out
  for _, kind in ipairs({ "json", "dry_run" }) do
    if M.declared(cmd, kind) and not has_flag(flags, FLAG[kind]) then
      out = out or { unpack(flags) }
      local base = kind == "json" and M.JSON_FLAG or M.DRY_FLAG
      if type(cmd[kind]) == "table" then
        -- Help names the subcommands it applies to: "status, up: print one JSON document ...".
        base = { name = base.name, summary = concat(cmd[kind], ", ") .. ": " .. base.summary }
      end
      out[#out + 1] = base
    end
  end
  return out or flags
end

-- Why a flag the parser accepted does not apply (nil when it does).
function M.check(cmd, flags, args)
  local sub = args[1]
  for kind, name in pairs(FLAG) do
    -- A command that declares nothing (yet) keeps whatever flags of its own it has.
    if cmd[kind] ~= nil and flags[name] and not M.supports(cmd, kind, sub) then
      local what = type(cmd[kind]) == "table" and sub and (cmd.name .. " " .. sub) or cmd.name
      local list = type(cmd[kind]) == "table" and (" (only " .. concat(cmd[kind], ", ") .. ")") or ""
      return format('flag "--%s" does not apply to "%s"%s', name, what, list)
    end
  end
end

local function stderr(msg)
  io.stderr:write(msg, "\n")
end

-- Files of cmd/zever/ that are not commands: this dispatcher (init.lua, which Lua's require
-- finds as "cmd.zever"). A name in here is never loaded as a command.
local INTERNAL = { init = true }

-- Words users type for a command that has another name: a did-you-mean by meaning, where the
-- edit distance finds nothing. Only commands that exist are suggested.
local SYNONYMS = { init = "new", create = "new", start = "serve", server = "serve",
  migration = "migrate", migrations = "migrate", job = "jobs", cron = "schedule",
  env = "config", settings = "config", ["routes:list"] = "routes" }

-- The names of the files of cmd/zever/ but the internal ones, sorted, listed once per process.
local listed
local function list_names()
  if listed then return listed end
  local names = {}
  local files = bundle.active and bundle.list("cmd/zever/") or sys.listdir(sys.home() .. "/cmd/zever")
  for _, file in ipairs(files or {}) do
    local name = file:match("([%w_-]+)%.lua$")
    if name and not INTERNAL[name] then names[#names + 1] = name end
  end
  sort(names)
  listed = names
  return names
end

-- The command table for name, or nil when name is not a command (no such file, or an
-- internal one). A command file that does not return a command table raises: a bug.
function M.load(name)
  if type(name) ~= "string" or not name:match("^[%w_-]+$") or INTERNAL[name] then return nil end
  if bundle.active then
    if not bundle.list("cmd/zever/" .. name .. ".lua")[1] then return nil end
  else
    local f = io.open(sys.home() .. "/cmd/zever/" .. name .. ".lua", "r")
    if not f then return nil end
    f:close()
  end
  local cmd = require("cmd.zever." .. name)
  if type(cmd) ~= "table" or type(cmd.run) ~= "function" or cmd.name ~= name then
    error(format("cmd/zever/%s.lua must return a command table {name = %q, run = ...}", name, name), 2)
  end
  -- A command that declares json / dry_run (zever.cli.output) gets --json / --dry-run here.
  cmd.flags = M.with_flags(cmd)
  return cmd
end

-- The index `make` writes (zever.cli.index: { [name] = summary } and the mtime of cmd/zever/
-- it was written against), or nil when it is missing or out of date: a command file changed
-- since (its mtime), or a command added or removed (the folder's mtime differs from the
-- index's, or, for an index without it, the names differ from the folder's). While the folder
-- is unchanged the index names the commands and the folder is not even listed.
local indexed -- false: looked, none
local function load_index()
  if indexed ~= nil then return indexed or nil end
  indexed = false
  local home = sys.home()
  local path = home .. "/build/commands.lua"
  local built = sys.mtime(path)
  if not built then return nil end
  -- Its bytecode (zever.cli.index writes both) only while strictly newer than the source.
  local compiled = sys.mtime(path .. "c")
  local chunk = compiled and compiled > built and loadfile(path .. "c") or loadfile(path)
  local ok, index, folder = pcall(chunk or error)
  if not ok or type(index) ~= "table" then return nil end
  local names
  if folder ~= nil and folder == sys.mtime(home .. "/cmd/zever") then
    names = {}
    for name in pairs(index) do names[#names + 1] = name end
    sort(names)
  else
    names = list_names()
    local count = 0
    for _ in pairs(index) do count = count + 1 end
    if count ~= #names then return nil end
  end
  for _, name in ipairs(names) do
    local changed = sys.mtime(home .. "/cmd/zever/" .. name .. ".lua")
    if type(index[name]) ~= "string" or not changed or changed >= built then return nil end
  end
  listed = listed or names
  indexed = index
  return index
end

-- Names of every command, sorted: from the index while it is up to date, else the files of
-- cmd/zever/ but the internal ones. A new table each call.
function M.names()
  local names = not bundle.active and load_index() and listed or list_names()
  return { unpack(names) }
end

-- { [name] = summary } of every command: from the index `make` writes (zever.cli.index) while
-- it is up to date, otherwise by loading each command.
function M.summaries()
  local index
  if bundle.active then
    local chunk = bundle.load("build/commands.lua")
    index = chunk and chunk()
  else
    index = load_index()
  end
  if index then return index end
  index = {}
  for _, name in ipairs(list_names()) do index[name] = M.load(name).summary or "" end
  return index
end

-- "Did you mean ...?" for word among candidates, or "" when nothing is close.
function M.suggest(word, candidates)
  local best = require("zever.text").closest(word, candidates)
  if not best then
    local syn = SYNONYMS[word]
    for _, c in ipairs(candidates) do
      if c == syn then best = syn end
    end
  end
  if not best then return "" end
  return format(' Did you mean "%s"?', best)
end

-- A message with every URL password and key=value password hidden: what any command prints
-- on failure goes through it (a DSN in an error must not leak its password).
local function redact(msg)
  return require("zever.config.redact").redact_string(tostring(msg))
end
M.redact = redact

local function flag_names(cmd)
  local names = {}
  for _, f in ipairs(cmd.flags or {}) do
    names[#names + 1] = (#f.name == 1 and "-" or "--") .. f.name
  end
  names[#names + 1] = "--help"
  return names
end

local function find_flag(cmd, name)
  for _, f in ipairs(cmd.flags or {}) do
    if f.name == name then return f end
  end
end

local function convert(cmd, f, raw)
  if f.type == "number" then
    local n = tonumber(raw)
    if not n then
      return nil, format('flag "--%s" of "%s" wants a number, not "%s"', f.name, cmd.name, raw)
    end
    return n
  elseif f.type == "list" then
    local list = {}
    for item in raw:gmatch("[^,]+") do list[#list + 1] = item end
    return list
  end
  return raw
end

-- Splits argv (from position first) into positional args and flags by cmd.flags.
-- Returns args, flags, or nil and a usage message.
function M.parse(cmd, argv, first)
  local args, flags = {}, {}
  local i = first
  while i <= #argv do
    local a = argv[i]
    if a == "--" then
      for j = i + 1, #argv do args[#args + 1] = argv[j] end
      break
    elseif a:sub(1, 1) == "-" and #a > 1 and not (cmd.passthrough and #args > 0) then
      local name, value = a:match("^%-%-?([^=]+)=(.*)$")
      if not name then name = a:match("^%-%-?(.+)$") end
      if name == "help" or a == "-h" then
        flags.help = true
      elseif name == "C" and a:sub(2, 2) ~= "-" then
        -- -C DIR works on every command: the dispatcher changes directory (see main).
        if not value then
          i = i + 1
          value = argv[i]
          if value == nil then return nil, format('flag "-C" of "%s" needs a value (DIR)', cmd.name) end
        end
        flags.C = value
      else
        local f = find_flag(cmd, name)
        local dashes = a:sub(2, 2) == "-" and 2 or 1
        if not f or (dashes == 1) ~= (#name == 1) then
          return nil, format('unknown flag "%s" for "%s".%s', a:match("^[^=]+"), cmd.name,
            M.suggest(a:match("^[^=]+"), flag_names(cmd)))
        end
        if f.arg then
          if not value then
            i = i + 1
            value = argv[i]
            if value == nil then
              return nil, format('flag "%s" of "%s" needs a value (%s)', a, cmd.name, f.arg)
            end
          end
          local v, err = convert(cmd, f, value)
          if v == nil then return nil, err end
          flags[f.name] = v
        elseif value then
          return nil, format('flag "--%s" of "%s" takes no value', f.name, cmd.name)
        else
          flags[f.name] = true
        end
      end
    else
      args[#args + 1] = a
    end
    i = i + 1
  end
  return args, flags
end

-- The help text of one command.
function M.command_help(cmd)
  local lines = { format("%s\n\nUsage: %s", cmd.summary, cmd.usage or ("zever " .. cmd.name)) }
  if cmd.help then lines[#lines + 1] = "\n" .. cmd.help end
  if cmd.flags and #cmd.flags > 0 then
    lines[#lines + 1] = "\nFlags:"
    local width = 0
    local left = {}
    for i, f in ipairs(cmd.flags) do
      left[i] = (#f.name == 1 and "-" or "--") .. f.name .. (f.arg and (" " .. f.arg) or "")
      if #left[i] > width then width = #left[i] end
    end
    for i, f in ipairs(cmd.flags) do
      lines[#lines + 1] = format("  %-" .. width .. "s  %s", left[i], f.summary or "")
    end
  end
  lines[#lines + 1] = "\n-C DIR runs the command as if zever was started in DIR (every command)."
  return concat(lines, "\n")
end

local jit = require "jit"

-- Runs the command line argv (argv[1] is the command); returns the process exit code.
-- Start-up runs with the JIT off: loading modules and parsing flags run once, and recording
-- and compiling their loops cost more than interpreting them (`zever serve`'s first request:
-- BENCHMARKS.md "Deploy: static files from the bundle, first request"). The command's run gets
-- the JIT on; it is on again whichever way main returns.
local main
function M.main(argv)
  jit.off()
  local ok, code = pcall(main, argv)
  jit.on()
  if not ok then error(code, 0) end
  return code
end

function main(argv)
  -- zever -C DIR <command> ...: the same as the command's own -C DIR.
  while argv[1] == "-C" or (argv[1] or ""):match("^%-C.") do
    local dir
    if argv[1] == "-C" then dir = argv[2] else dir = argv[1]:sub(3) end
    if dir == nil then
      stderr('zever: flag "-C" needs a value (DIR)')
      return 2
    end
    -- Right after the command name, so that a passthrough command (run) parses it as a flag.
    local rest = { argv[argv[1] == "-C" and 3 or 2], "-C", dir }
    for i = (argv[1] == "-C" and 4 or 3), #argv do rest[#rest + 1] = argv[i] end
    if rest[1] == nil then
      stderr("zever: -C DIR wants a command after it")
      return 2
    end
    argv = rest
  end
  local name = argv[1]
  if name == nil or name == "--help" or name == "-h" then
    name = "help"
  elseif name == "--version" or name == "-v" then
    name = "version"
  elseif name:sub(1, 1) == "-" then
    stderr(format('zever: unknown flag "%s".%s Run "zever help" for usage.', name,
      M.suggest(name, { "--help", "--version" })))
    return 2
  end
  local cmd = M.load(name)
  if not cmd then
    stderr(format('zever: unknown command "%s".%s', name, M.suggest(name, M.names())))
    return 2
  end
  -- With --json a failure is one JSON object on stderr (the exit code is the same).
  local as_json = false
  for i = 2, #argv do
    if argv[i] == "--" then break end
    if argv[i] == "--json" then as_json = M.supports(cmd, "json", argv[2]) end
  end
  local function fail(code, msg)
    if as_json then
      stderr(require("zever.cli.output").error(cmd.name, code, msg))
    else
      stderr(format("zever %s: %s", cmd.name, msg))
    end
    return code
  end
  local args, flags = M.parse(cmd, argv, 2)
  if not args then
    if as_json then return fail(2, flags) end
    stderr("zever: " .. flags)
    return 2
  end
  if flags.help then
    print(M.command_help(cmd))
    return 0
  end
  local unfit = M.check(cmd, flags, args)
  if unfit then return fail(2, unfit) end
  -- A bundle checks its whole payload (every file's hash, the host's) before a command runs;
  -- help and --help read only the index and the files they load, each checked as it loads.
  if bundle.active and name ~= "help" then
    local ok, verr = bundle.verify()
    if not ok then
      stderr("zever: " .. verr .. "; rebuild it with zever bundle")
      return 1
    end
  end
  if flags.C then
    local ok, err = require("zever.cli.app").chdir(flags.C)
    if not ok then return fail(2, err) end
    flags.C = nil
  end
  -- The host starts with the collector stopped (host/main.c): the command runs with it on,
  -- its first cycle due when the heap has doubled ("restart", -1 sets LuaJIT's threshold
  -- from the pause, where a plain restart would start a cycle at once). A command with
  -- gc = "own" restarts it itself, once its start-up is over (serve: once its workers run).
  if cmd.gc ~= "own" and not collectgarbage("isrunning") then collectgarbage("restart", -1) end
  jit.on()
  local ok, code, msg = xpcall(cmd.run, function(e)
    if type(e) ~= "string" then return e end
    return debug.traceback(e, 2)
  end, args, flags)
  if not ok then
    -- A bug or an unexpected failure: its message and trace, with passwords hidden.
    return fail(1, redact(type(code) == "table" and (code.message or tostring(code)) or code))
  end
  if msg then return fail(code or 0, redact(msg)) end
  return code or 0
end

return M
