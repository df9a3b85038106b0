-- zever help [command]: the list of commands, or one command's usage and flags.

local sys = require "zever.sys"

local format = string.format

return {
  name = "help",
  summary = "Show the commands, or one command's usage and flags",
  usage = "zever help [command]",
  run = function(args)
    local dispatch = require "cmd.zever"
    if args[1] then
      local cmd = dispatch.load(args[1])
      if not cmd then
        return 2, format('unknown command "%s".%s', args[1],
          dispatch.suggest(args[1], dispatch.names()))
      end
      print(dispatch.command_help(cmd))
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
