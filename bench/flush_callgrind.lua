-- flush_callgrind.lua N: IndexBatchFlush's shape (search_lua_bench.lua) for callgrind: a corpus
-- of 1000 documents of 40 words (index_batch of 100 at a time, one flush), then N times 10
-- documents rewritten (two texts in turn) and flush(). MODE=write: index_batch only;
-- MODE=search: N times search("w10 w20", limit 10) instead (search_lua_bench's Search);
-- MODE=cycle: rewrite, flush and search each time (minus MODE=flush: the search's cost averaged
-- over FTS5's merge cycle, where MODE=search sees one layout of segments). SIZE=100: batches of
-- 100 documents (IndexBatch100's shape with MODE=write).
-- SMALL=1 flushes after each 100 of the corpus (FTS5's in-memory term hash then never grows
-- past what 100 documents need); DSN=sqlite:/path for a file instead of memory; REOPEN=1 (a file
-- only) closes and reopens the database after the corpus's feed, so the measured steps run on a
-- connection whose FTS5 term hash never held the corpus (1024 slots at first).
-- AUTOMERGE=n sets FTS5's automerge option after the corpus (default 4); FEED_CHUNK=n sets the
-- adapter's FEED_CHUNK (rows a feed statement) before anything is written. MERGE_EVERY=k with
-- MERGE_PAGES=p runs FTS5 'merge' of p pages after every k-th measured flush (merges scheduled by
-- the caller; with AUTOMERGE=0 the only ones).
--
--   bash bench/callgrind_delta.sh "$PWD/bench/flush_callgrind.lua" 100 300
local zever_db = require "zever.db"
local search = require "zever.search"

local N = tonumber(arg and arg[1]) or 0
local MODE = os.getenv("MODE") or "flush"
local seed = 12345
local function rnd()
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648 * 2 - 1
end
local function text(n)
  local t = {}
  for i = 1, n do
    local u = (rnd() + 1) / 2
    t[i] = "w" .. math.floor(u * u * 5000)
  end
  return table.concat(t, " ")
end
local dsn = os.getenv("DSN") or "sqlite::memory:"
local file = dsn:match("^sqlite:(/.+)$")
local function clean()
  if file then for _, x in ipairs{ "", "-wal", "-shm" } do os.remove(file .. x) end end
end
clean()
local db_search = require "adapters.search.db"
if os.getenv("FEED_CHUNK") then db_search.FEED_CHUNK = tonumber(os.getenv("FEED_CHUNK")) end
local db = assert(zever_db.open(dsn))
local s = search.wrap(assert(db_search.new(db)))
local docs = {}
for i = 1, 1000 do
  docs[#docs + 1] = { id = "d" .. i, content = text(40), metadata = { n = i } }
  if #docs == 100 then
    assert(s:index_batch(docs))
    docs = {}
    if os.getenv("SMALL") then assert(s:flush()) end
  end
end
assert(s:flush())
if os.getenv("REOPEN") then
  assert(file, "REOPEN needs DSN=sqlite:/path")
  db:close()
  db = assert(zever_db.open(dsn))
  s = search.wrap(assert(db_search.new(db)))
end
if os.getenv("AUTOMERGE") then
  db:exec("INSERT INTO zever_search_fts(zever_search_fts, rank) VALUES ('automerge', ?)",
    tonumber(os.getenv("AUTOMERGE")))
end
local SIZE = tonumber(os.getenv("SIZE")) or 10
local batches = {}
for b = 1, 2 do
  local batch = {}
  for i = 1, SIZE do batch[i] = { id = "b" .. i, content = text(40), metadata = { n = i } } end
  batches[b] = batch
end
local turn = 1
for _ = 1, 4 do
  turn = 3 - turn
  assert(s:index_batch(batches[turn]))
  assert(s:flush())
end
if MODE == "search" then
  for _ = 1, N do assert(s:search("w10 w20", { limit = 10 })) end
  N = 0
end
local every, pages = tonumber(os.getenv("MERGE_EVERY")), tonumber(os.getenv("MERGE_PAGES"))
for i = 1, N do
  turn = 3 - turn
  assert(s:index_batch(batches[turn]))
  if MODE ~= "write" then assert(s:flush()) end
  if every and i % every == 0 then
    assert(db:exec("INSERT INTO zever_search_fts(zever_search_fts, rank) VALUES ('merge', ?)",
      pages))
  end
  if MODE == "cycle" then assert(s:search("w10 w20", { limit = 10 })) end
end
s:close()
db:close()
clean()
