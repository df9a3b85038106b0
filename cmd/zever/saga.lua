-- zever saga status|retry <id> [--app PATH] [--json]: a .zen saga's run (zever.saga on
-- app.workflow): its status, error and every step's phase; retry makes a stuck saga (out of
-- attempts after its pivot) run again in the worker. The app is loaded (--app PATH or -C DIR,
-- default .; zever.cli.app) for its workflow store, as `zever workflow` does. Both verbs take
-- --json; retry takes --dry-run (says what it would do; the store is not opened, as for
-- `zever workflow`).

local cliapp = require "zever.cli.app"
local output = require "zever.cli.output"

local format = string.format

local USAGE = "zever saga status|retry <id> [--app PATH] [--json] [--dry-run]"

return {
  name = "saga",
  summary = "Show a saga's progress or retry a stuck one",
  usage = USAGE,
  help = "Sagas run on the app's workflows (app.workflow; docs/zen.md#sagas): the store is the\n"
    .. "app's workflow adapter. status prints the run's status (pending, running, completed,\n"
    .. "compensating, failed, stuck, cancelling, cancelled), its error and its steps; retry makes\n"
    .. "a stuck saga run again from its failed step (zever worker runs it).\n"
    .. "Exit codes: 0 ok, 1 no such saga or not stuck, 2 usage.",
  json = true,
  dry_run = { "retry" },
  flags = {
    cliapp.FLAG,
    { name = "dsn", arg = "DSN", summary = "gone: sagas live in the app's workflow store (--app)" },
  },
  run = function(args, flags)
    local verb, id = args[1], args[2]
    if (verb ~= "status" and verb ~= "retry") or not id or args[3] then return 2, "usage: " .. USAGE end
    if flags.dsn then
      return 2, "--dsn is gone: sagas run on app.workflow now and live in the app's workflow " ..
        "store; pass --app PATH (docs/zen.md#sagas)"
    end
    local target, terr = cliapp.resolve(flags, nil, "saga")
    if not target then return 2, terr end
    if flags["dry-run"] then
      output.would(flags, { { action = "retry", target = "saga " .. id, id = id } })
      return 0
    end
    local ok, app = pcall(cliapp.load, target)
    if not ok then return 1, tostring(app) end
    local got, wf = pcall(function() return app.workflow end)
    if not got then
      app:close()
      return 1, tostring(wf)
    end
    local saga = require "zever.saga"
    if verb == "retry" then
      local done, rerr = saga.retry(wf, id)
      app:close()
      if not done then return 1, tostring(rerr) end
      output.emit(flags, { retried = id }, "saga " .. id .. " runs again")
      return 0
    end
    local st, err = saga.status(wf, id)
    app:close()
    if not st then return 1, tostring(err) end
    if flags.json then
      output.emit(flags, st)
      return 0
    end
    print(format("saga %s (%s): %s, attempts %d%s", st.id, st.name, st.status, st.attempts or 0,
      st.error and (" - " .. st.error) or ""))
    for _, s in ipairs(st.steps) do
      print(format("  %-12s %-10s %s", s.step, s.phase, s.status))
    end
    return 0
  end,
}
