-- zever help [command]: the list of commands, or one command's usage and flags.

local sys = require "zever.sys"

local format = string.format

return {
  name = "help",
  summary = "Show the commands, or one command's usage and flags",
  usage = "zever help [command] [--json]",
  json = true,
  dry_run = false,
  run = function(args, flags)
    local dispatch = require "cmd.zever"
    local output = require "zever.cli.output"
    if args[1] then
      local cmd = dispatch.load(args[1])
      if not cmd then
        return 2, format('unknown command "%s".%s', args[1],
          dispatch.suggest(args[1], dispatch.names()))
      end
      local fl = {}
      for i, f in ipairs(cmd.flags or {}) do
        fl[i] = { name = f.name, arg = f.arg, type = f.type, summary = f.summary }
      end
      local function subs(v)
        if type(v) == "table" then return require("zever.json").array(v) end
        return v == true
      end
      output.emit(flags, { name = cmd.name, summary = cmd.summary,
        usage = cmd.usage or ("zever " .. cmd.name),
        flags = require("zever.json").array(fl), json = subs(cmd.json), dry_run = subs(cmd.dry_run) },
        dispatch.command_help(cmd))
      return 0
    end
    if flags.json then
      output.emit(flags, { version = sys.version, commands = dispatch.summaries() })
      return 0
    end
    local names, summaries, rows, width = dispatch.names(), dispatch.summaries(), {}, 0
    for _, name in ipairs(names) do
      if #name > width then width = #name end
    end
    for _, name in ipairs(names) do
      rows[#rows + 1] = format("  %-" .. width .. "s  %s", name, summaries[name])
    end
    print(format([[
zever %s: a batteries-included application framework for Lua

Usage: zever <command> [flags] [args]

Commands:
%s

Run "zever help <command>" or "zever <command> --help" for its usage and flags.]],
      sys.version, table.concat(rows, "\n")))
    return 0
  end,
}
