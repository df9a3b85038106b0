-- adapters.session.memory: sessions in the process-wide memory table of host/cache (byte budget,
-- LRU), shared by every worker thread of the process; they end with the process.
--
--   memory.new{ name = "default", max_bytes = 64 MiB, clock = nil } -> impl
--   impl:get(id) / set(id, blob, ttl) / delete(id) / close()   (adapters.cache.memory's)
--
-- It is adapters.cache.memory under its own name ("session:<name>"), so sessions never share
-- the app cache's budget. Under memory pressure the least recently used sessions go first.

local cache_memory = require "adapters.cache.memory"

local M = {}

function M.new(opts)
  opts = opts or {}
  return cache_memory.new{ name = "session:" .. (opts.name or "default"),
    max_bytes = opts.max_bytes or 64 * 1024 * 1024, clock = opts.clock }
end

-- The adapter contract: section is the config's session section.
function M.open(section)
  return M.new{ max_bytes = section.max_bytes }
end

return M
