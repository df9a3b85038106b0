-- search_lua_bench.lua: the search and vector batteries through their Lua APIs (app.search,
-- app.vectors) on an in-memory SQLite database, printed as Go-style lines by bench.harness:
--
--   BenchmarkVectorQuery256   query over 256 rows of dimension 384, top_k 10 (metadata {i=n})
--   BenchmarkVectorQuery1k/10k/100k   the same at 1k, 10k, 100k rows (dimension 384)
--   BenchmarkIndexBatch       index_batch of 10 documents of 40 words, upserting the same ids
--                             with one of two texts in turn, so every call changes the content
--                             (IndexBatch1, IndexBatch100: 1 and 100 documents). The FTS5 work
--                             is queued (adapters/search/db.lua) and paid by the next search:
--   BenchmarkIndexBatchFlush  the same 10 documents then flush(): the whole cost of making
--                             them searchable
--   BenchmarkIndexBatchFlushGo the Go framework's BenchmarkIndexBatch (its adapters/search/db,
--                             postgres_bench_test.go: 132.8 us): a new file database holding only
--                             8 documents "batch-a".."batch-h", each "the quick brown fox jumps
--                             over the lazy dog" with metadata {kind = "bench"}, the same 8 ids
--                             and the same text written every op, then flush(). Go's FTS5 update
--                             trigger deletes and re-inserts the unchanged text every op; ours
--                             queues nothing when the text is unchanged (the metadata is written)
--   BenchmarkIndexBatchFlushGoText  the same, the text alternating between two 9-word sentences,
--                             so every op feeds FTS5 a 'delete' and an insert of each document
--                             (the FTS5 work Go's trigger does every op)
--   BenchmarkSearch           "w10 w20" over 1000 documents (3 match), limit 10, with snippets
--                             (SearchDense: a 42-word vocabulary, 417 documents match)
--
-- Run: bin/zever run bench/search_lua_bench.lua [filter]
-- B/op is the Lua heap allocated per op (the collector stopped). The 100k setup takes a few
-- seconds (the rows go through SQLite, then the first query loads them into the C set).

local harness = require "bench.harness"
local go_shape = require "bench.search_go_shape"
local zever_db = require "zever.db"
local filter = arg and arg[1]
local bench = harness.new(filter, { seconds = 0.5 })

local seed = 12345
local function rnd()
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648 * 2 - 1
end

local function want(name) return not filter or name:find(filter, 1, true) end

local function vector_store(rows, dim)
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
  return v, q, db
end

for _, case in ipairs{ { "VectorQuery256", 256 }, { "VectorQuery1k", 1000 },
  { "VectorQuery10k", 10000 }, { "VectorQuery100k", 100000 } } do
  if want(case[1]) then
    local v, q, db = vector_store(case[2], 384)
    bench(case[1], function() return v:query(q, 10) end)
    v:close()
    db:close()
  end
end

local ok_search, search = pcall(require, "zever.search")
if ok_search and (want("IndexBatch") or want("Search")) then
  -- A skewed vocabulary of 5000 words ("w0" common ... "w4999" rare: index = 5000 * u^2), 40
  -- words a document; SearchDense uses 42 words only, so a query matches most documents.
  local function text(n, vocab)
    local t = {}
    for i = 1, n do
      local u = (rnd() + 1) / 2
      t[i] = vocab and vocab[math.floor(u * #vocab) + 1] or ("w" .. math.floor(u * u * 5000))
    end
    return table.concat(t, " ")
  end
  local dense = {}
  for w in ([[alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike
    november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu
    search engine vector index query ranking snippet token unicode document sqlite fulltext]])
    :gmatch("%S+") do dense[#dense + 1] = w end

  local function corpus(vocab)
    local db = assert(zever_db.open("sqlite::memory:"))
    local s = search.wrap(assert(require("adapters.search.db").new(db)))
    local docs = {}
    for i = 1, 1000 do
      docs[#docs + 1] = { id = "d" .. i, content = text(40, vocab), metadata = { n = i } }
      if #docs == 100 then
        assert(s:index_batch(docs))
        docs = {}
      end
    end
    return s, db
  end

  local s, db = corpus(nil)
  assert(s:flush())
  for _, size in ipairs{ 1, 10, 100 } do
    local batches = {}
    for b = 1, 2 do
      local batch = {}
      for i = 1, size do batch[i] = { id = "b" .. i, content = text(40), metadata = { n = i } } end
      batches[b] = batch
    end
    local turn = 0
    local function write()
      turn = 3 - (turn == 0 and 2 or turn)
      return assert(s:index_batch(batches[turn]))
    end
    local name = "IndexBatch" .. (size == 10 and "" or size)
    bench(name, write)
    if size == 10 then
      bench(name .. "Flush", function()
        write()
        return assert(s:flush())
      end)
    end
    assert(s:flush())
  end
  if want("Search") then
    local q = "w10 w20"
    local r = assert(s:search(q, { limit = 10 }))
    print(("# Search: %q matches %d of 1000 documents"):format(q, r.total))
    bench("Search", function() return assert(s:search(q, { limit = 10 })) end)
  end
  s:close()
  db:close()
  if want("SearchDense") then
    s, db = corpus(dense)
    local r = assert(s:search("vector ranking", { limit = 10 }))
    print(("# SearchDense: %q matches %d of 1000 documents"):format("vector ranking", r.total))
    bench("SearchDense", function() return assert(s:search("vector ranking", { limit = 10 })) end)
    s:close()
    db:close()
  end
end
-- The Go framework's shape (see the top): its own small file database.
local go_cases = ok_search and { { "IndexBatchFlushGo", false }, { "IndexBatchFlushGoText", true } }
for _, case in ipairs(go_cases or {}) do
  if want(case[1]) then
    local path = os.tmpname()
    os.remove(path)
    local gdb = assert(zever_db.open("sqlite:" .. path))
    local gs = search.wrap(assert(require("adapters.search.db").new(gdb)))
    local batches = go_shape.batches(case[2])
    local turn = 1
    assert(gs:index_batch(batches[turn]))
    assert(gs:flush())
    bench(case[1], function()
      turn = 3 - turn
      assert(gs:index_batch(batches[turn]))
      return assert(gs:flush())
    end)
    local r = assert(gs:search("quick fox", { limit = 10 }))
    assert(r.total == 8, "the Go shape's 8 documents are searchable")
    gs:close()
    gdb:close()
    for _, suffix in ipairs{ "", "-wal", "-shm" } do os.remove(path .. suffix) end
  end
end
