-- bench/search_go_shape.lua: the Go framework's BenchmarkIndexBatch documents, for
-- search_lua_bench.lua's IndexBatchFlushGo rows and search_go_callgrind.lua: 8 documents
-- "batch-a".."batch-h", metadata {kind = "bench"}, the same ids every op. batches(change) returns
-- two batches to alternate: with change, two different 9-word texts (FTS5 deletes and inserts
-- every op); without, the same text in both.
local M = {}

local TEXTS = { "the quick brown fox jumps over the lazy dog",
  "a lazy dog sleeps under the quick brown fox" }

function M.batches(change)
  local batches = {}
  for b = 1, 2 do
    local batch = {}
    for i = 1, 8 do
      batch[i] = { id = "batch-" .. string.char(96 + i),
        content = TEXTS[change and b or 1], metadata = { kind = "bench" } }
    end
    batches[b] = batch
  end
  return batches
end

return M
