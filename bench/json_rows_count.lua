-- bench/json_rows_count.lua: N encodes of 20 TFB rows ({id, randomNumber}, a json.array), for
-- callgrind: run it at two N and take the slope (instructions per encode), e.g.
--   for n in 2000 12000; do N=$n valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$n \
--     bin/zever run bench/json_rows_count.lua; done
local json = require "zever.json"
local rows = json.array({})
for i = 1, 20 do rows[i] = { id = i * 397 % 10000 + 1, randomNumber = i * 7919 % 10000 + 1 } end
local N = tonumber(os.getenv("N"))
local n = 0
for _ = 1, N do n = n + #json.encode(rows) end
print(n)
