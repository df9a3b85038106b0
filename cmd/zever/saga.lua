-- zever saga status|retry <id> [--dsn DSN] [--json]: a saga's progress (zever.saga) in the
-- database of --dsn (default DB_DSN): its state, error and every step's phase, status, attempts
-- and error; retry puts a stuck saga back to running (the app's next saga.run drives it).

local USAGE = "zever saga status|retry <id> [--dsn DSN] [--json]"

return {
  name = "saga",
  summary = "Show a saga's progress or retry a stuck one",
  usage = USAGE,
  help = "The saga tables (zever_sagas, zever_saga_steps) live in the app's database: --dsn, or\n"
    .. "DB_DSN. status prints the saga's state (running, done, compensated, stuck), its error and\n"
    .. "its steps; retry makes a stuck saga running again, with its failed step's attempts reset.\n"
    .. "Exit codes: 0 ok, 1 no such saga or not stuck, 2 usage.",
  flags = {
    { name = "dsn", arg = "DSN", summary = "the database (default: DB_DSN)" },
    { name = "json", summary = "print the status as JSON" },
  },
  run = function(args, flags)
    local verb, id = args[1], args[2]
    if (verb ~= "status" and verb ~= "retry") or not id or args[3] then return 2, "usage: " .. USAGE end
    local dsn = flags.dsn or os.getenv("DB_DSN")
    if not dsn or dsn == "" then return 2, "no database: pass --dsn or set DB_DSN" end
    local db, err = require("zever.db").open(dsn)
    if not db then return 1, "cannot open the database: " .. tostring(err) end
    local saga = require "zever.saga"
    saga.migrate(db)
    if verb == "retry" then
      local ok, rerr = saga.retry(db, id)
      db:close()
      if not ok then return 1, rerr end
      print("saga " .. id .. " is running again")
      return 0
    end
    local st = saga.status(db, id)
    db:close()
    if not st then return 1, "no saga " .. id end
    if flags.json then
      print(require("zever.json").encode(st))
      return 0
    end
    print(string.format("saga %s (%s): %s%s", st.id, st.name, st.state,
      st.error and (" - " .. st.error) or ""))
    for _, s in ipairs(st.steps) do
      print(string.format("  %-12s %-10s %-6s attempts %d%s", s.step, s.phase, s.status, s.attempts,
        s.error and (" - " .. s.error) or ""))
    end
    return 0
  end,
}
