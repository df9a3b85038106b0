-- zever workflow list|status|start|signal|cancel: the app's durable workflows (app.workflow,
-- docs/workflow.md) from the command line. The app (--app PATH or -C DIR, default .;
-- zever.cli.app) is loaded, so its workflow definitions are known; `zever worker` runs them.
--
--   list [--status S] [--json]          runs (oldest first)
--   status ID [--json]                  a run: status, attempts, steps done, error, output
--   start NAME [--input JSON] [--id ID] a new run (its id printed)
--   signal ID NAME [--value JSON]       delivers a signal
--   cancel ID                           cancels it (compensations run in the worker)
--   retry ID                            a stuck run (out of attempts past a pivot) runs again
--   purge --before DURATION             deletes runs that ended longer ago than that
--                                       ("168h", "7d"), batch after batch (workflow.sweep_batch)
--
-- Every verb takes --json (one JSON document); start, signal, cancel, retry and purge take
-- --dry-run: the arguments are checked (start: the workflow is defined, --input is JSON) and what
-- would be done is printed; only purge opens the store then (to count what it would delete).

local json = require "zever.json"
local cliapp = require "zever.cli.app"
local output = require "zever.cli.output"

local format = string.format

local USAGE = "zever workflow list [--status S] | status ID | " ..
  "start NAME [--input JSON] [--id ID] | signal ID NAME [--value JSON] | cancel ID | retry ID " ..
  "| purge --before 168h [--app PATH] [--json] [--dry-run]"
local VERBS = { "list", "status", "start", "signal", "cancel", "retry", "purge" }

local function decode_flag(s, what)
  if s == nil then return true, nil end
  local ok, v = pcall(json.decode, s)
  if not ok then return false, what .. " is not JSON: " .. tostring(v) end
  return true, v
end

local function run_verb(wf, args, flags)
  local verb = args[1]
  if verb == "list" then
    local runs, err = wf:list(flags.status, flags.limit)
    if not runs then return 1, tostring(err) end
    if flags.json then
      local out = {}
      for i, r in ipairs(runs) do
        out[i] = { id = r.id, name = r.name, status = r.status, attempts = r.attempts }
      end
      output.emit(flags, json.array(out))
      return 0
    end
    if #runs == 0 then
      print("no runs")
      if flags.adapter == "memory" then
        io.stderr:write("zever workflow: workflow.adapter is memory: runs live only in the process ",
          "that started them; set workflow.adapter to db or redis to see the worker's\n")
      end
      return 0
    end
    print(format("%-32s %-16s %-10s %s", "ID", "NAME", "STATUS", "ATTEMPTS"))
    for _, r in ipairs(runs) do
      print(format("%-32s %-16s %-10s %d", r.id, r.name, r.status, r.attempts or 0))
    end
    return 0
  elseif verb == "status" then
    if not args[2] then return 2, "status: want a run id" end
    local st, err = wf:status(args[2])
    if not st then return 1, tostring(err) end
    if flags.json then output.emit(flags, st) return 0 end
    print(format("%s (%s): %s, attempts %d, steps %s%s", st.id, st.name, st.status,
      st.attempts or 0, #st.steps > 0 and table.concat(st.steps, ",") or "none",
      st.error and (", last error: " .. st.error) or ""))
    return 0
  elseif verb == "start" then
    if not args[2] then return 2, "start: want a workflow name" end
    local ok, input = decode_flag(flags.input, "--input")
    if not ok then return 2, input end
    if flags["dry-run"] then
      if not wf.defs[args[2]] then return 1, format('no workflow named "%s" is defined', args[2]) end
      output.would(flags, { { action = "start", target = args[2] .. (flags.id and (" as " .. flags.id) or ""),
        name = args[2], id = flags.id } })
      return 0
    end
    local id, err = wf:start(args[2], input or {}, flags.id)
    if not id then return 1, tostring(err) end
    output.emit(flags, { id = id }, id)
    return 0
  elseif verb == "signal" then
    if not args[2] or not args[3] then return 2, "signal: want a run id and a signal name" end
    local ok, value = decode_flag(flags.value, "--value")
    if not ok then return 2, value end
    if flags["dry-run"] then
      output.would(flags, { { action = "signal", target = args[2] .. " " .. args[3], id = args[2],
        signal = args[3] } })
      return 0
    end
    local done, err = wf:signal(args[2], args[3], value)
    if not done then return 1, tostring(err) end
    output.emit(flags, { signalled = args[2], signal = args[3] }, "signalled " .. args[2])
    return 0
  elseif verb == "cancel" then
    if not args[2] then return 2, "cancel: want a run id" end
    if flags["dry-run"] then
      output.would(flags, { { action = "cancel", target = args[2], id = args[2] } })
      return 0
    end
    local done, err = wf:cancel(args[2])
    if not done then return 1, tostring(err) end
    output.emit(flags, { cancelled = args[2] }, "cancelling " .. args[2])
    return 0
  elseif verb == "retry" then
    if not args[2] then return 2, "retry: want a run id" end
    if flags["dry-run"] then
      output.would(flags, { { action = "retry", target = args[2], id = args[2] } })
      return 0
    end
    local done, err = wf:retry(args[2])
    if not done then return 1, tostring(err) end
    output.emit(flags, { retried = args[2] }, "retrying " .. args[2])
    return 0
  elseif verb == "purge" then
    if not flags.before then return 2, "purge: want --before DURATION (e.g. 168h)" end
    local secs = require("zever.duration").parse(flags.before)
    if not secs or secs < 0 then return 2, "purge: --before wants a duration such as 168h or 7d" end
    if flags["dry-run"] then
      local n, err = wf:purge(secs, { dry_run = true })
      if not n then return 1, tostring(err) end
      output.would(flags, { { action = "purge",
        target = format("%d run(s) that ended more than %s ago", n, flags.before), count = n,
        before_seconds = secs } })
      return 0
    end
    -- Batch after batch (each one transaction or script), until none is left.
    local total = 0
    repeat
      local n, more = wf:purge(secs)
      if not n then return 1, tostring(more) end
      total = total + n
    until more == 0 or n == 0
    output.emit(flags, { purged = total }, format("purged %d ended run(s)", total))
    return 0
  end
end

return {
  name = "workflow",
  summary = "List, start, signal, cancel or retry durable workflow runs",
  usage = USAGE,
  json = true,
  dry_run = { "start", "signal", "cancel", "retry", "purge" },
  flags = {
    cliapp.FLAG,
    { name = "status", arg = "S", summary = "list: only runs in this status" },
    { name = "limit", arg = "N", type = "number", summary = "list: at most N runs" },
    { name = "input", arg = "JSON", summary = "start: the run's input" },
    { name = "id", arg = "ID", summary = "start: the run's id (refused when it exists)" },
    { name = "value", arg = "JSON", summary = "signal: the signal's value" },
    { name = "before", arg = "DURATION", summary = "purge: runs that ended longer ago than this" },
  },
  run = function(args, flags)
    local verb = args[1]
    local known = false
    for _, v in ipairs(VERBS) do if v == verb then known = true end end
    if not known then
      if verb then
        local best = require("zever.text").closest(verb, VERBS)
        return 2, format('unknown workflow command "%s"%s; usage: %s', verb,
          best and format(' (did you mean "%s"?)', best) or "", USAGE)
      end
      return 2, "usage: " .. USAGE
    end
    local target, terr = cliapp.resolve(flags, nil, "workflow")
    if not target then return 2, terr end
    local ok, app = pcall(cliapp.load, target)
    if not ok then return 1, tostring(app) end
    local got, wf = pcall(function() return app.workflow end)
    if not got then return 1, tostring(wf) end
    local cfg = app:config()
    flags.adapter = cfg.workflow and cfg.workflow.adapter
    local code, msg = run_verb(wf, args, flags)
    app:close()
    return code, msg
  end,
}
