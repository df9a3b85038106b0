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
-- The dispatcher (cmd/zever/init.lua, loaded at every start) reads the declarations:
-- dispatch.with_flags(cmd) (cmd.flags plus json / dry-run when declared, each once),
-- dispatch.supports(cmd, kind, sub), dispatch.declared(cmd, kind), dispatch.check(cmd, flags,
-- args). This module is only what a command prints, and loads when something prints through it:
--
--   output.emit(flags, data, text)   prints data as JSON when flags.json, else text(data)
--                                    (text a function, or a string printed as is)
--   output.would(flags, actions[, extra])  a dry run's report: { { action =, target =, ... } }
--                                    printed as "would <action> <target>" lines, or as
--                                    { dry_run = true, actions = [...] } (+ extra) with --json
--   output.error(cmd_name, code, message)  -> the JSON text of a failure (stderr)
--   output.color(fd)                 -> true when fd is a terminal and NO_COLOR is unset/empty
--   output.paint(fd, sgr, s)         -> s wrapped in the SGR sequence when output.color(fd)

local sys = require "zever.sys"

-- zever.json loads when a command prints JSON: `zever migrate status` should not pay for what it
-- does not use.
local function json()
  return require "zever.json"
end

local type, ipairs = type, ipairs

local M = {}

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
