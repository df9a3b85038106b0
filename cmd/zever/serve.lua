-- zever serve [app] [--listen host:port] [--workers N]: serves an app over HTTP with N worker
-- threads, each with its own event loop and Lua state, sharing the port with SO_REUSEPORT.

local sys = require "zever.sys"
local cliapp = require "zever.cli.app"

local function cpu_count()
  local f = io.popen("nproc 2>/dev/null")
  local n = f and tonumber(f:read("*l"))
  if f then f:close() end
  return n or 1
end

return {
  name = "serve",
  summary = "Serve an app over HTTP",
  usage = "zever serve [app.lua | dir] [--listen host:port] [--workers N]",
  flags = {
    cliapp.FLAG,
    { name = "listen", arg = "HOST:PORT", summary = "address to listen on (default 127.0.0.1:8080)" },
    { name = "workers", arg = "N", type = "number", summary = "worker threads (default: CPU count)" },
    { name = "access-log", arg = "FORMAT", summary = "text (default), json or off" },
    { name = "drain", arg = "SECONDS", type = "number",
      summary = "how long in-flight requests may run after SIGTERM (default 10)" },
    { name = "max-body", arg = "BYTES", type = "number", summary = "request body limit (default 1 MiB)" },
  },
  run = function(args, flags)
    local listen = flags.listen or "127.0.0.1:8080"
    local host, port = listen:match("^%[?([^%]]*)%]?:(%d+)$")
    if not host then return 2, 'want --listen host:port, got "' .. listen .. '"' end
    local workers = flags.workers or cpu_count()
    if workers < 1 or workers % 1 ~= 0 then return 2, "--workers wants a positive integer" end
    local log = flags["access-log"] or "text"
    if log ~= "text" and log ~= "json" and log ~= "off" then
      return 2, '--access-log wants text, json or off, got "' .. log .. '"'
    end
    -- The app: positional, --app or -C DIR; a folder serves its http.app (zever.cli.app).
    local target, terr = cliapp.resolve(flags, args[1], "serve")
    if not target then return 2, terr end
    local app_path = target.file
    if not app_path then
      local cfg, cerr = cliapp.config(target)
      if not cfg then return 1, "invalid configuration:\n" .. tostring(cerr) end
      app_path = cfg.http.app
    end
    local server = require "zever.server"
    local ok, code = pcall(server.run, {
      app = app_path, root = target.dir, host = host, port = tonumber(port), workers = workers,
      access_log = log ~= "off" and log or false, drain = flags.drain or 10,
      limits = { max_body_bytes = flags["max-body"] },
      home = sys.home(),
    })
    if not ok then return 1, tostring(code) end
    return code
  end,
}
