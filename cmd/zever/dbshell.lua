-- zever dbshell [--app DIR] [--dsn DSN] [-- ARGS...]: the same as `zever db console` (Django's
-- name for it); cmd/zever/db.lua does the work.

local db = require "cmd.zever.db"

return {
  name = "dbshell",
  json = false,
  dry_run = false,
  why = "replaces itself with psql or sqlite3",
  summary = "Open the database's shell (the same as zever db console)",
  usage = "zever dbshell [--app DIR] [--dsn DSN] [-- ARGS...]",
  help = db.help,
  flags = db.flags,
  run = function(args, flags)
    local list = { "console" }
    for _, a in ipairs(args) do list[#list + 1] = a end
    return db.run(list, flags)
  end,
}
