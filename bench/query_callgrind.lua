-- query_callgrind.lua N: req.query's parser (zever.request.parse_query) N times on one query
-- string, for callgrind: bench/callgrind_delta.sh counts the instructions of one call. QS picks
-- the string (default "queries=20", TFB's /queries):
--
--   RUNS=3 bash bench/callgrind_delta.sh "$PWD/bench/query_callgrind.lua" 20000 60000
--   QS='a=1&b=x+y&c=%41%42&k[]=1&k[]=2' RUNS=3 \
--     bash bench/callgrind_delta.sh "$PWD/bench/query_callgrind.lua" 20000 60000
local request = require "zever.request"

local n = tonumber(arg[1]) or error("usage: query_callgrind.lua N")
local qs = os.getenv("QS") or "queries=20"
local keys = 0
for _ = 1, n do
  if next(request.parse_query(qs)) then keys = keys + 1 end
end
assert(keys == n or qs == "", "the query string gave no pair")
