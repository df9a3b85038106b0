-- bench/http/middleware_app: examples/hello's /hello behind BENCH_MIDDLEWARE (1 to 5, default 1)
-- app-level middlewares, for the cost of a middleware step through the server (the fourth sets
-- a response header with res:header, as security-header middlewares do; the fifth sends the
-- request id back, res:header("X-Request-Id", req.id), DESIGN.md's example middleware):
--
--   APP=bench/http/middleware_app sh bench/http/callgrind_serve.sh bin/zever /hello
--   BENCH_MIDDLEWARE=3 APP=bench/http/middleware_app sh bench/http/callgrind_serve.sh bin/zever /hello
--
-- Three different functions, as an app's middlewares are: one function used at several
-- positions of a chain (a loop registering the same closure) is on the stack once per position,
-- which LuaJIT traces as recursion whatever zever.app does.
local zever = require "zever"

local MIDDLEWARE = {
  function(_, _, next) return next() end,                    -- passes through
  function(req, _, next)                                     -- reads the request first
    if req.method == "TRACE" then return 405 end
    return next()
  end,
  function(_, res, next)                                     -- changes the answer after
    local r = next()
    if res.code == 204 then res.body = "" end
    return r
  end,
  function(_, res, next)                                     -- sets a response header
    res:header("X-Frame-Options", "DENY")
    return next()
  end,
  function(req, res, next)                                   -- reads a request header
    res:header("X-Request-Id", req.id)
    return next()
  end,
}

local app = zever.app()
for i = 1, tonumber(os.getenv("BENCH_MIDDLEWARE") or "1") do app:use(MIDDLEWARE[i]) end
app:get("/hello", function() return "hello world" end)
return app
