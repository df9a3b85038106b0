-- bench/http/middleware_app: examples/hello's /hello behind BENCH_MIDDLEWARE (default 1)
-- app-level middlewares that pass through (`return next()`), for the cost of a middleware step
-- through the server:
--
--   APP=bench/http/middleware_app sh bench/http/callgrind_serve.sh bin/zever /hello
--   BENCH_MIDDLEWARE=3 APP=bench/http/middleware_app sh bench/http/callgrind_serve.sh bin/zever /hello
local zever = require "zever"

local app = zever.app()
for _ = 1, tonumber(os.getenv("BENCH_MIDDLEWARE") or "1") do
  app:use(function(_, _, next) return next() end)
end
app:get("/hello", function() return "hello world" end)
return app
