-- bench/http/callgrind_hello.lua: serves examples/hello on the main loop and exits after N
-- requests, so that callgrind's instruction count divided by requests is a per-request cost.
-- Run two N under valgrind and take the slope (see bench/http/callgrind_hello.sh).
--
--   bin/zever run bench/http/callgrind_hello.lua N PORTFILE
local server = require "zever.server"
local loop = require "zever.loop"

local n, portfile = tonumber(arg[1]), arg[2]
local app = server.load_app("examples/hello")
local srv = assert(server.listen(app, { host = "127.0.0.1", port = 0 }))
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
