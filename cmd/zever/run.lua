-- zever run <file.lua> [args...]: runs a Lua script inside the host, as `luajit file.lua` would,
-- with every zever module available. The global `arg` is set the way luajit sets it; the exit
-- code is 0 when the script returns, 1 when it raises, or whatever it passes to os.exit.

local sys = require "zever.sys"

return {
  name = "run",
  json = false,
  dry_run = false,
  why = "runs a script: what it prints and writes is the script's",
  summary = "Run a Lua script inside the host with every zever module available",
  usage = "zever run <file.lua> [args...]",
  passthrough = true,
  run = function(args)
    local file = args[1]
    if not file then return 2, "missing the script to run; usage: zever run <file.lua> [args...]" end
    local chunk, err = loadfile(file)
    if not chunk then return 1, err end
    local script_arg = { [-1] = sys.exe(), [0] = file }
    for i = 2, #args do script_arg[i - 1] = args[i] end
    rawset(_G, "arg", script_arg)
    local ok, msg = xpcall(function() return chunk(unpack(script_arg, 1, #args - 1)) end,
      debug.traceback)
    if not ok then return 1, tostring(msg) end
    return 0
  end,
}
