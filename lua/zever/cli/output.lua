-- zever.cli.output: what every command shares about its output: `--json` (one JSON document on
-- stdout; a failure as one JSON object on stderr) and `--dry-run` (what the command would do,
-- nothing changed). A command declares which of its subcommands print data and which write:
--
--   json = true | false | { "status", ... }      prints data: the dispatcher adds --json
--   dry_run = true | false | { "up", ... }       writes (files, databases, queues, mail):
--                                                the dispatcher adds --dry-run
--   why = "..."                                  when both are false: why (a server, a REPL...)
--
-- Every command declares both (spec/cmd/cli_contract_spec.lua walks the command index and runs
-- each declared case on a temporary app). A flag given to a subcommand that does not declare it
-- is a usage error (exit 2), so `--dry-run` can never be silently ignored by a command that
-- writes.
--
--   output.with_flags(cmd)           -> cmd.flags plus json / dry-run when declared (each once)
--   output.supports(cmd, kind, sub)  -> boolean   kind "json" | "dry_run", sub the first arg
--   output.emit(flags, data, text)   prints data as JSON when flags.json, else text(data)
--                                    (text a function, or a string printed as is)
--   output.would(flags, actions[, extra])  a dry run's report: { { action =, target =, ... } }
--                                    printed as "would <action> <target>" lines, or as
--                                    { dry_run = true, actions = [...] } (+ extra) with --json
--   output.error(cmd_name, code, message)  -> the JSON text of a failure (stderr)
--   output.color(fd)                 -> true when fd is a terminal and NO_COLOR is unset/empty
--   output.paint(fd, sgr, s)         -> s wrapped in the SGR sequence when output.color(fd)

local sys = require "zever.sys"

-- zever.json loads when a command prints JSON: the dispatcher requires this module on every
-- start, and `zever version` should not pay for what it does not use.
local function json()
  return require "zever.json"
end

local type, ipairs, format = type, ipairs, string.format

local M = {}

M.JSON_FLAG = { name = "json", summary = "print one JSON document on stdout (failures as JSON on stderr)" }
M.DRY_FLAG = { name = "dry-run", summary = "say what would be done; change nothing" }

local FLAG = { json = "json", dry_run = "dry-run" }

function M.supports(cmd, kind, sub)
  local v = cmd[kind]
  if v == true then return true end
  if type(v) ~= "table" then return false end
  for _, s in ipairs(v) do
    if s == sub then return true end
  end
  return false
end

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

function M.with_flags(cmd)
  local flags = cmd.flags or {}
  local out
  for _, kind in ipairs({ "json", "dry_run" }) do
    if M.declared(cmd, kind) and not has_flag(flags, FLAG[kind]) then
      out = out or { unpack(flags) }
      local base = kind == "json" and M.JSON_FLAG or M.DRY_FLAG
      if type(cmd[kind]) == "table" then
        -- Help names the subcommands it applies to: "status, up: print one JSON document ...".
        base = { name = base.name, summary = table.concat(cmd[kind], ", ") .. ": " .. base.summary }
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
      local list = type(cmd[kind]) == "table" and (" (only " .. table.concat(cmd[kind], ", ") .. ")") or ""
      return format('flag "--%s" does not apply to "%s"%s', name, what, list)
    end
  end
end

function M.emit(flags, data, text)
  if flags and flags.json then
    io.stdout:write(json().encode(data), "\n")
  elseif type(text) == "function" then
    text(data)
  elseif text ~= nil then
    io.stdout:write(text, "\n")
  end
end

function M.would(flags, actions, extra)
  if flags and flags.json then
    local doc = { dry_run = true, actions = json().array(actions) }
    for k, v in pairs(extra or {}) do doc[k] = v end
    io.stdout:write(json().encode(doc), "\n")
    return
  end
  if #actions == 0 then
    io.stdout:write("nothing to do\n")
    return
  end
  for _, a in ipairs(actions) do
    io.stdout:write("would ", a.action, a.target and (" " .. a.target) or "", "\n")
  end
end

function M.error(name, code, message)
  return json().encode({ error = { command = name, exit = code, message = message } })
end

function M.color(fd)
  return sys.isatty(fd or 1) and (os.getenv("NO_COLOR") or "") == ""
end

function M.paint(fd, sgr, s)
  if not M.color(fd) then return s end
  return "\27[" .. sgr .. "m" .. s .. "\27[0m"
end

return M
