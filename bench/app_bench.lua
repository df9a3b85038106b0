-- bench/app_bench.lua: dispatch into a Lua handler in-process (no socket): the router match,
-- the request and response objects, the handler, the result rules. Run with
--   bin/zever run bench/app_bench.lua [filter]
-- Prints Go-style lines: ns/op and the Lua heap allocated per op (collectgarbage("count")),
-- median of 5 runs of ~0.5 s each.

local zever = require "zever"
local sys = require "zever.sys"

local filter = arg and arg[1]

local app = zever.app()
app:get("/hello", function() return "hello world" end)
app:get("/users/:id", function(req) return { id = tonumber(req.params.id) } end)
app:use(function(_, _, next) return next() end)

local mw_app = zever.app()
mw_app:get("/hello", function() return "hello world" end)

local source = { header = function() return nil end, headers = function() return {} end,
  body = function() return "" end }

local function median(t)
  table.sort(t)
  return t[math.ceil(#t / 2)]
end

local function bench(name, fn)
  if filter and not name:find(filter, 1, true) then return end
  local n = 1000
  while true do
    local t0 = sys.now()
    for _ = 1, n do fn() end
    local dt = sys.now() - t0
    if dt > 0.5 then break end
    n = math.floor(n * math.min(100, 0.6 / math.max(dt, 1e-6)))
  end
  local ns, kb = {}, {}
  for r = 1, 5 do
    collectgarbage()
    collectgarbage("stop")
    local k0 = collectgarbage("count")
    local t0 = sys.now()
    for _ = 1, n do fn() end
    ns[r] = (sys.now() - t0) / n * 1e9
    kb[r] = (collectgarbage("count") - k0) * 1024 / n
    collectgarbage("restart")
  end
  print(string.format("Benchmark%-28s %10d %12.1f ns/op %8.0f B/op", name, n, median(ns), median(kb)))
end

bench("AppDispatchStatic", function() return mw_app:dispatch("GET", "/hello", nil, source) end)
bench("AppDispatchParamMiddleware", function()
  return app:dispatch("GET", "/users/42", nil, source)
end)
bench("AppDispatchNotFound", function() return mw_app:dispatch("GET", "/nope", nil, source) end)
