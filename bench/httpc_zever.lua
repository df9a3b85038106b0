-- bench/httpc_zever.lua: N sequential GETs on one keep-alive connection with zever.httpc;
-- prints "requests seconds cpu_seconds" (bench/httpc_bench.sh). Run by `zever run`.
local host, port, path, n = arg[1], arg[2], arg[3], tonumber(arg[4])
local http = require "zever.httpc"
local sys = require "zever.sys"
local url = "http://" .. host .. ":" .. port .. path
assert(http.get(url)) -- the connection, outside the timing
local t0, c0 = sys.now(), os.clock()
for _ = 1, n do assert(http.get(url)) end
local t1, c1 = sys.now(), os.clock()
print(n, t1 - t0, c1 - c0)
