-- bench/vectors_callgrind.lua: a fixed-count driver for callgrind instruction counts of the exact
-- vector scan (zever.vectors_core: 200 top-10 queries over 2000 x 64 rows, JIT off). Run:
--   valgrind --tool=callgrind bin/zever run bench/vectors_callgrind.lua
jit.off()
local core = require "zever.vectors_core"
local ffi = require "ffi"
local dim, rows = 64, 2000
local s = core.new(dim)
local buf = ffi.new("float[?]", dim)
local seed = 1
local function rnd() seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648 - 0.5 end
for i = 0, rows - 1 do
  for j = 0, dim - 1 do buf[j] = rnd() end
  assert(s:put(i, ffi.string(buf, dim * 4)))
end
for j = 0, dim - 1 do buf[j] = rnd() end
local q = ffi.string(buf, dim * 4)
local best
for _ = 1, 200 do best = s:query(q, 10) end
print(#best, best[1][1])
