-- bench/http/callgrind_hello.lua: serves examples/hello on the main loop and exits after N
-- requests, so that callgrind's instruction count divided by requests is a per-request cost.
-- Run two N under valgrind and take the slope (see bench/http/callgrind_hello.sh).
--
--   bin/zever run bench/http/callgrind_hello.lua N PORTFILE [HANDLER_TIMEOUT]
--
-- HANDLER_TIMEOUT (seconds, default 0 = none) turns the handler watchdog on, as `zever serve`
-- does by default (http.handler_timeout 60 s).
local server = require "zever.server"
local loop = require "zever.loop"

local n, portfile, timeout = tonumber(arg[1]), arg[2], tonumber(arg[3] or "0")
local app = server.load_app("examples/hello")
local limits = timeout > 0 and { handler_timeout = timeout } or nil
local srv = assert(server.listen(app, { host = "127.0.0.1", port = 0, limits = limits }))
local f = assert(io.open(portfile .. ".tmp", "w"))
f:write(srv:port())
f:close()
os.rename(portfile .. ".tmp", portfile)
local t
t = loop.every(0.1, function()
  if srv:stats().requests >= n then
    t:stop()
    srv:close()
    loop.stop()
  end
end)
loop.run()
io.stdout:write(srv:stats().requests, "\n")
