-- cache_db_callgrind.lua N: CacheDbGetMiss's shape (cache_adapters_lua_bench.lua) for callgrind:
-- after a warm-up, N gets of an absent key through zever.cache over the db adapter (a SQLite
-- WAL file); MODE=incr: CacheDbIncr's, N incr of one counter (one upsert and commit each). It
-- runs on the pre-kit tree too, so bench/callgrind_delta.sh compares the two:
--
--   bash bench/callgrind_delta.sh bench/cache_db_callgrind.lua 20000 60000
--   ZEVER_DIR=/work/base bash bench/callgrind_delta.sh "$PWD/bench/cache_db_callgrind.lua" 20000 60000
--   MODE=incr bash bench/callgrind_delta.sh bench/cache_db_callgrind.lua 2000 6000
local zdb = require "zever.db"
local cache = require "zever.cache"
local dbc = require "adapters.cache.db"

local N = tonumber(arg and arg[1]) or 0
local path = os.tmpname()
os.remove(path)
local db = assert(zdb.open("sqlite:" .. path))
local c = cache.wrap(dbc.new(db))
assert(c:set("present", "value", 3600))
if os.getenv("MODE") == "incr" then
  for _ = 1, 2000 do assert(c:incr("counter")) end
  for _ = 1, N do c:incr("counter") end
else
  for _ = 1, 20000 do assert(c:get("absent") == nil) end
  for _ = 1, N do c:get("absent") end
end
c:close()
db:close()
for _, suffix in ipairs{ "", "-wal", "-shm" } do os.remove(path .. suffix) end
