-- bench/json_lua_bench.lua: zever.json on the request path, run in the host:
--   bin/zever run bench/json_lua_bench.lua [filter]
-- JsonEncodeFlat: a small flat object, as a handler returns it ({id, name, done}).
-- JsonEncodeRow: a db-style row of 8 columns with a fraction and a timestamp string.
-- JsonDecodeSmall: a small request body (req:json's work), JsonDecodeArray: 20 small objects.
-- With ZV_JSON_REF=1 the same cases run through lua-cjson 2.1.0 (Debian's; cjson.safe for
-- decode), the codec zever.json used before host/json/, for the side-by-side in BENCHMARKS.md.

local json = require "zever.json"
if os.getenv("ZV_JSON_REF") == "1" then
  local cjson, safe = require("cjson").new(), require("cjson.safe").new()
  json = { encode = cjson.encode, decode = safe.decode }
end
local encode, decode = json.encode, json.decode

local bench = require("bench.harness").new(arg and arg[1])

local flat = { id = 42, name = "buy milk", done = false }
local row = { id = 1234, user_id = 77, title = "Read the RFC", score = 4.25, done = true,
  created_at = "2026-12-01T14:00:03Z", tags = "rfc,json", priority = 3 }
local small = '{"title":"buy milk","done":false,"priority":3}'
local parts = {}
for i = 1, 20 do parts[i] = '{"id":' .. i .. ',"title":"task ' .. i .. '","done":true}' end
local array = "[" .. table.concat(parts, ",") .. "]"

bench.loop("JsonEncodeFlat", function(n) for _ = 1, n do encode(flat) end end)
bench.loop("JsonEncodeRow", function(n) for _ = 1, n do encode(row) end end)
bench.loop("JsonDecodeSmall", function(n) for _ = 1, n do decode(small) end end)
bench.loop("JsonDecodeArray20", function(n) for _ = 1, n do decode(array) end end)
