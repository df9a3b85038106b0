-- bench/json_callgrind.lua: a fixed number of JSON operations, for callgrind's instruction
-- counts (load-independent, unlike ns/op on this shared machine). Not part of `make bench`.
--
--   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
--     bin/zever run bench/json_callgrind.lua OP N [OLD_JSON_LUA]
--
-- OP: encode (a small flat object), decode (a small request body), decode20 (an array of 20
-- small objects), dispatch (POST /echo in
-- process: req:json then res:json). Per-op instructions = (Ir(N) - Ir(0)) / N. OLD_JSON_LUA, when
-- given, is a zever.json source file loaded in place of the module (the lua-cjson one it
-- replaced: git show 43b0fa9^:lua/zever/json.lua > /tmp/json_old.lua).
local op, n, old = arg[1], tonumber(arg[2]), arg[3]
if old then package.loaded["zever.json"] = dofile(old) end
local json = require "zever.json"
local zever = require "zever"

local flat = { id = 42, name = "buy milk", done = false }
local small = '{"title":"buy milk","done":false,"priority":3}'
local parts = {}
for i = 1, 20 do parts[i] = '{"id":' .. i .. ',"title":"task ' .. i .. '","done":true}' end
local array = "[" .. table.concat(parts, ",") .. "]"
local app = zever.app()
app:post("/echo", function(req, res) return res:json(req:json()) end)
local source = { header = function() return nil end, headers = function() return {} end,
  body = function() return small end }

local encode, decode = json.encode, json.decode
local sink
if op == "encode" then
  for _ = 1, n do sink = encode(flat) end
elseif op == "decode" then
  for _ = 1, n do sink = decode(small) end
elseif op == "decode20" then
  for _ = 1, n do sink = decode(array) end
elseif op == "dispatch" then
  for _ = 1, n do sink = app:dispatch("POST", "/echo", nil, source) end
else
  error("usage: json_callgrind.lua encode|decode|decode20|dispatch N [old_json.lua]")
end
io.stdout:write(sink and "ok\n" or "nothing\n")
