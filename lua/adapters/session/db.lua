-- adapters.session.db: sessions in a table of the app's database (SQLite or PostgreSQL), shared
-- by every process that opens it; expired rows are swept in bounded batches on writes.
--
--   dbs.new(db, { table = "sessions", clock = nil }) -> impl
--   impl:get(id) / set(id, blob, ttl) / delete(id) / close()   (adapters.cache.db's)
--
-- It is adapters.cache.db over its own table: key TEXT PRIMARY KEY, value, expires_at. One
-- difference on PostgreSQL: the cache's table is UNLOGGED (a crash empties it, which a cache
-- may lose); the sessions' table is an ordinary, logged one, since emptying it would sign every
-- user out after a crash, and it is what a replica must see (docs/sessions.md).

local cache_db = require "adapters.cache.db"

local M = {}

function M.new(db, opts)
  opts = opts or {}
  local impl = cache_db.new(db, { table = opts.table or "sessions", clock = opts.clock })
  if impl.pg then
    local ddl, n = impl.schema[1]:gsub("^CREATE UNLOGGED TABLE ", "CREATE TABLE ")
    assert(n == 1, "session.db: the cache table's DDL changed shape")
    impl.schema[1] = ddl
  end
  return impl
end

-- The adapter contract: the database is the app's (ctx:get("db")).
function M.open(section, ctx)
  local db, err = ctx:get("db")
  if not db then return nil, err end
  return M.new(db, { table = section.table })
end

return M
