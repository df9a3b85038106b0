-- auth_callgrind.lua: a fixed-count loop of JWT HS256 verification (auth_lua_bench.lua's
-- JWTVerifyHS256), for an instruction count load cannot move; the slope of two runs is the
-- count per verify:
--
--   for n in 20000 60000; do
--     valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file=cg.$n \
--       bin/zever run bench/auth_callgrind.lua $n
--   done   # Ir per op = (Ir(60000) - Ir(20000)) / 40000

local n = tonumber(arg[1] or "20000")
local auth = require "zever.auth"
local a = auth.new{ secret = string.rep("k", 32), issuer = "app", audience = "api" }
local token = assert(a:issue("user:42", { role = "admin" }, 3600))
for _ = 1, n do assert(a:verify(token)) end
