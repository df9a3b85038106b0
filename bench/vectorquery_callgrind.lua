-- vectorquery_callgrind.lua N: search_lua_bench.lua's VectorQuery1k shape for callgrind: 1000
-- rows of dimension 384 through app.vectors on an in-memory SQLite database (ROWS overrides),
-- then N top-10 queries. For two trees' instructions per query:
--
--   bash bench/callgrind_delta.sh "$PWD/bench/vectorquery_callgrind.lua" 200 600
--   ZEVER_DIR=/work/base bash bench/callgrind_delta.sh "$PWD/bench/vectorquery_callgrind.lua" 200 600
local zever_db = require "zever.db"

local N = tonumber(arg and arg[1]) or 0
local rows, dim = tonumber(os.getenv("ROWS")) or 1000, 384
local seed = 12345
local function rnd()
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648 * 2 - 1
end
local db = assert(zever_db.open("sqlite::memory:"))
local v = require("zever.vectors").wrap(assert(require("adapters.vectors.db").new(db)))
local batch = {}
for i = 1, rows do
  local e = {}
  for j = 1, dim do e[j] = rnd() end
  batch[#batch + 1] = { ("doc-%06d"):format(i), e, { i = i } }
  if #batch == 1000 or i == rows then
    assert(v:upsert_batch(batch))
    batch = {}
  end
end
local q = {}
for j = 1, dim do q[j] = rnd() end
assert(#v:query(q, 10) == math.min(10, rows))
for _ = 1, N do v:query(q, 10) end
v:close()
db:close()
