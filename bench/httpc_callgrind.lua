-- bench/httpc_callgrind.lua: N sequential GETs on one keep-alive connection with zever.httpc,
-- for callgrind's instruction counts of the client (the server runs in another process, so
-- its work is not counted). Per-request instructions = (Ir(N) - Ir(M)) / (N - M).
--
--   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
--     bin/zever run bench/httpc_callgrind.lua URL N
-- (bench/httpc_bench.sh runs it with a `zever serve` of examples/hello.)
local url, n = arg[1], tonumber(arg[2])
local http = require "zever.httpc"
local body
for _ = 1, n do
  local res = assert(http.get(url))
  body = res.body
end
io.stdout:write(body and "ok\n" or "nothing\n")
