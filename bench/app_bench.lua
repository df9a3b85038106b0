-- bench/app_bench.lua: dispatch into a Lua handler in-process (no socket): the router match,
-- the request and response objects, the handler, the result rules. Run with
--   bin/zever run bench/app_bench.lua [filter]
-- Prints Go-style lines (bench/harness.lua): ns/op and Lua heap bytes allocated per op.

local zever = require "zever"

local filter = arg and arg[1]

local app = zever.app()
app:get("/hello", function() return "hello world" end)
app:get("/users/:id", function(req) return { id = tonumber(req.params.id) } end)
app:use(function(_, _, next) return next() end)

local mw_app = zever.app()
mw_app:get("/hello", function() return "hello world" end)

local source = { header = function() return nil end, headers = function() return {} end,
  body = function() return "" end }

local bench = require("bench.harness").new(filter)

bench("AppDispatchStatic", function() return mw_app:dispatch("GET", "/hello", nil, source) end)
bench("AppDispatchParamMiddleware", function()
  return app:dispatch("GET", "/users/42", nil, source)
end)
bench("AppDispatchNotFound", function() return mw_app:dispatch("GET", "/nope", nil, source) end)
