-- adapters.db.sqlite: the SQLite adapter of zever.db: a thin layer over the zever.sqlite
-- binding (host/sqlite/), which already speaks the adapter conventions (l_sqlite.c): conn:exec,
-- query, first, each(sql, binds, n[, fn]) returning nil, code, message on failure.
--
-- One connection per worker; WAL, busy_timeout and foreign_keys=ON are set at open. It must not
-- render SQL: that is zever.sql's job, for the "sqlite" dialect named here.

local sqlite = require "zever.sqlite"

local M = {
  dialect = "sqlite",
  -- IMMEDIATE takes the write lock at BEGIN: two writers never deadlock upgrading read locks,
  -- the second waits up to busy_timeout instead.
  begin_sql = "BEGIN IMMEDIATE",
  null = sqlite.null,
  blob = sqlite.blob,
}

-- target: a file path, or ":memory:". Returns conn | nil, code, message.
function M.open(target, opts)
  return sqlite.open(target, opts)
end

return M
