-- breaker_callgrind.lua: fixed-count loops of a closed breaker's guard (cb:call around a
-- function that returns its argument), for instruction counts that load cannot move. The count
-- of a call is the slope between two runs, so start-up and trace compilation cancel out:
--
--   for n in 200000 600000; do
--     valgrind --tool=callgrind --callgrind-out-file=cg.$n \
--       bin/zever run bench/breaker_callgrind.lua memory|inproc|bare $n
--   done   # Ir per call = (Ir(600000) - Ir(200000)) / 400000

local which, n = arg[1], tonumber(arg[2] or "200000")
local breaker = require "zever.breaker"
local function upstream(x) return x end
local cb
if which == "inproc" then
  cb = breaker.wrap(require("adapters.breaker.inproc").new{ name = "cg" }):get("cg",
    { window = 100, min_calls = 100 })
else
  cb = breaker.new():get("cg", { window = 100, min_calls = 100 })
end
local sink = 0
if which == "bare" then
  for i = 1, n do sink = sink + upstream(i) end
else
  for i = 1, n do sink = sink + cb:call(upstream, i) end
end
assert(sink > 0)
