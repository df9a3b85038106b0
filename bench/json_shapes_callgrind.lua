-- bench/json_shapes_callgrind.lua N: json.encode of one case N times (after 2,000 to warm up), for
-- bench/callgrind_delta.sh (instructions per encode, load-independent):
--
--   JCASE=tfb bash bench/callgrind_delta.sh bench/json_shapes_callgrind.lua 20000 60000
--
-- JCASE: flat ({id, name, done}), tfb (a TechEmpower World row), rows20 (json.array of 20 World
-- rows, /queries' answer), row8 (8 columns with a fraction: the small-object path gives up on
-- it), big12 (12 integer keys: more than the small-object path takes), nested (a table value).
local json = require "zever.json"

local cases = {
  flat = { id = 42, name = "buy milk", done = false },
  row8 = { id = 1234, user_id = 77, title = "Read the RFC", score = 4.25, done = true,
    created_at = "2026-12-01T14:00:03Z", tags = "rfc,json", priority = 3 },
  tfb = { id = 4174, randomNumber = 331 },
  big12 = {},
  nested = { id = 1, tags = { "a", "b" } },
}
for i = 1, 12 do cases.big12["k" .. i] = i end
local rows = json.array()
for i = 1, 20 do rows[i] = { id = i * 37, randomNumber = i * 101 } end
cases.rows20 = rows

local v = cases[os.getenv("JCASE") or "tfb"]
if v == nil then error("JCASE: one of flat, tfb, rows20, row8, big12, nested", 0) end
local encode, sink = json.encode, 0
for _ = 1, 2000 do sink = sink + #encode(v) end
for _ = 1, tonumber(arg[1]) do sink = sink + #encode(v) end
if sink == 0 then error("nothing encoded") end
