-- zever version: the version of zever and of the LuaJIT it embeds.

local sys = require "zever.sys"

return {
  name = "version",
  summary = "Print the version of zever and of its LuaJIT",
  usage = "zever version [--json]",
  flags = {
    { name = "json", summary = "print a JSON object" },
  },
  run = function(_, flags)
    if flags.json then
      print(string.format('{"version":"%s","luajit":"%s"}', sys.version, jit.version))
    else
      print(string.format("zever %s (%s)", sys.version, jit.version))
    end
    return 0
  end,
}
