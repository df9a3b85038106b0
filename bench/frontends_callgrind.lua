-- frontends_callgrind.lua: fixed-count loops over the hot front-end calls (cache:get, cache:set,
-- limiter:allow over the memory adapters, 1024 keys), for instruction counts that load cannot
-- move. The count of an op is the slope between two runs, so start-up and trace compilation
-- cancel out:
--
--   for n in 100000 300000; do
--     valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file=cg.$n \
--       bin/zever run bench/frontends_callgrind.lua get $n
--   done   # Ir per op = (Ir(300000) - Ir(100000)) / 200000 (callgrind_annotate: PROGRAM TOTALS)
--
-- Cases: get, set, allow; n defaults to 200000.

local which, n = arg[1], tonumber(arg[2] or "200000")
local cache = require "zever.cache"
local limiter = require "zever.limiter"

local keys = {}
for i = 1, 1024 do keys[i] = "user:" .. (100000 + i) end
local c = cache.new{ name = "callgrind:cache", max_bytes = 64 * 1024 * 1024 }
local lim = limiter.new{ name = "callgrind:limiter", rate = 1e9, burst = 1e9 }
local value = ("v"):rep(51)
for i = 1, 1024 do
  c:set(keys[i], value)
  lim:allow(keys[i])
end

if which == "get" then
  for i = 1, n do c:get(keys[i % 1024 + 1]) end
elseif which == "set" then
  for i = 1, n do c:set(keys[i % 1024 + 1], value) end
elseif which == "allow" then
  for i = 1, n do lim:allow(keys[i % 1024 + 1]) end
else
  error("frontends_callgrind: case must be get, set or allow", 0)
end
