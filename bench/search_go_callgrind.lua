-- search_go_callgrind.lua N: search_lua_bench.lua's IndexBatchFlushGo shape for callgrind (the Go
-- framework's BenchmarkIndexBatch: 8 documents "batch-a".."batch-h" of "the quick brown fox jumps
-- over the lazy dog", metadata {kind = "bench"}, the same ids rewritten every op, on a new file
-- database holding nothing else), N times index_batch + flush after 50 warm-up ops. TEXT=1
-- alternates two 9-word texts (IndexBatchFlushGoText: FTS5 deletes and inserts every op);
-- DSN=sqlite::memory: for memory instead of the file.
--
--   TEXT=1 bash bench/callgrind_delta.sh "$PWD/bench/search_go_callgrind.lua" 100 300
local zever_db = require "zever.db"
local search = require "zever.search"

local N = tonumber(arg and arg[1]) or 0
local path = os.tmpname()
os.remove(path)
local dsn = os.getenv("DSN") or ("sqlite:" .. path)
local function clean()
  for _, suffix in ipairs{ "", "-wal", "-shm" } do os.remove(path .. suffix) end
end
local db = assert(zever_db.open(dsn))
local s = search.wrap(assert(require("adapters.search.db").new(db)))
-- Loaded from beside this script, so that another tree (ZEVER_DIR) can run it too.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local batches = dofile(here .. "search_go_shape.lua").batches(os.getenv("TEXT") ~= nil)
local turn = 1
for _ = 1, 50 + N do
  turn = 3 - turn
  assert(s:index_batch(batches[turn]))
  assert(s:flush())
end
assert(assert(s:search("quick fox", { limit = 10 })).total == 8)
s:close()
db:close()
clean()
