-- flag_lua_bench.lua: app.flag lookups through the front-end (zever.flag over the memory
-- adapter; the file adapter holds the same compiled table), printed as Go-style lines:
--
--   BenchmarkFlagBool      N  x ns/op  y B/op   a plain boolean flag, 64 names
--   BenchmarkFlagTenant    ...                  a per-tenant override ({ tenant = ... } ctx)
--   BenchmarkFlagRollout   ...                  a rollout: the hash of name + a 9-byte key
--   BenchmarkFlagMissing   ...                  an absent flag: the fallback
--
-- Run: bin/zever run bench/flag_lua_bench.lua [filter]. Target (issue #23): lookup <= 50 ns.

local flag = require "zever.flag"

local bench = require("bench.harness").new(arg and arg[1], { seconds = 0.2 }).loop

local tree, names = {}, {}
for i = 1, 64 do
  names[i] = "feature_" .. i
  tree[names[i]] = (i % 2 == 0)
end
tree.themed = { value = "light", tenants = { acme = "dark", initech = "blue" } }
tree.pilot = { rollout = 25 }
local flags = flag.new{ flags = tree }

local keys = {}
for i = 1, 64 do keys[i] = "user-" .. (1000 + i) end
local ctxs = { { tenant = "acme" }, { tenant = "initech" }, { tenant = "other" } }

bench("FlagBool", function(n)
  local on = 0
  for i = 1, n do
    if flags:bool(names[i % 64 + 1], false) then on = on + 1 end
  end
  return on
end)

bench("FlagTenant", function(n)
  local dark = 0
  for i = 1, n do
    if flags:string("themed", "x", ctxs[i % 3 + 1]) == "dark" then dark = dark + 1 end
  end
  return dark
end)

bench("FlagRollout", function(n)
  local on = 0
  for i = 1, n do
    if flags:enabled("pilot", keys[i % 64 + 1]) then on = on + 1 end
  end
  return on
end)

bench("FlagMissing", function(n)
  local on = 0
  for _ = 1, n do
    if flags:bool("absent", true) then on = on + 1 end
  end
  return on
end)
