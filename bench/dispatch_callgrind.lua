-- dispatch_callgrind.lua N [SCENARIO]: app_bench.lua's in-process dispatch for callgrind, N times
-- one scenario (static: AppDispatchStatic, param: AppDispatchParamMiddleware). The same file runs
-- on an older tree's binary (ZEVER_DIR), so it uses only app:dispatch of the pre-kit API:
--
--   bash bench/callgrind_delta.sh bench/dispatch_callgrind.lua 20000 120000
--   SCENARIO=param bash bench/callgrind_delta.sh bench/dispatch_callgrind.lua 20000 120000
--   ZEVER_DIR=/work/base bash bench/callgrind_delta.sh "$PWD/bench/dispatch_callgrind.lua" 20000 120000
local zever = require "zever"

local N = tonumber(arg and arg[1]) or 0
local scenario = os.getenv("SCENARIO") or "static"

local app = zever.app()
app:get("/hello", function() return "hello world" end)
app:get("/users/:id", function(req) return { id = tonumber(req.params.id) } end)
app:use(function(_, _, next) return next() end)

local mw_app = zever.app()
mw_app:get("/hello", function() return "hello world" end)

local source = { header = function() return nil end, headers = function() return {} end,
  body = function() return "" end }

local a, path = mw_app, "/hello"
if scenario == "param" then a, path = app, "/users/42"
elseif scenario ~= "static" then error("SCENARIO must be static or param") end
for _ = 1, N do a:dispatch("GET", path, nil, source) end
