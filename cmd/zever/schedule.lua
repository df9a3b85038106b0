-- zever schedule list [app] [--json]: the app's schedules (what its app file registered on
-- app.scheduler) with each entry's next run time, in UTC. It loads the app as `zever worker`
-- does and fires nothing. The app: the positional app.lua or folder, --app PATH, or -C DIR.

local json = require "zever.json"
local cliapp = require "zever.cli.app"

local format = string.format

local USAGE = "zever schedule list [app.lua | dir] [--json]"

local function when(t)
  if t == math.huge then return "never" end
  return os.date("!%Y-%m-%dT%H:%M:%SZ", math.floor(t))
end

return {
  name = "schedule",
  json = { "list" },
  dry_run = false,
  summary = "List the app's schedules and their next run times",
  usage = USAGE,
  flags = {
    cliapp.FLAG,
    { name = "json", summary = "print a JSON array" },
  },
  run = function(args, flags)
    if args[1] ~= "list" then
      return 2, args[1] and format('unknown subcommand "%s" (want: list)', args[1])
        or "want a subcommand: list"
    end
    if args[3] then return 2, "one app only; usage: " .. USAGE end
    local target, terr = cliapp.resolve(flags, args[2], "schedule")
    if not target then return 2, terr end
    local ok, app = pcall(cliapp.load, target)
    if not ok then return 1, tostring(app) end
    local sch = app:container():resolved("scheduler")
    local rows = sch and sch:list() or {}
    if flags.json then
      local out = {}
      for i, r in ipairs(rows) do
        out[i] = { kind = r.kind, spec = r.spec, job = r.job, args = r.args,
          next = r.next ~= math.huge and r.next or json.null, next_utc = when(r.next) }
      end
      print(#out == 0 and "[]" or json.encode(out))
    elseif #rows == 0 then
      print("no schedules")
    else
      print(format("%-6s %-20s %-24s %s", "KIND", "SPEC", "JOB", "NEXT RUN (UTC)"))
      for _, r in ipairs(rows) do
        print(format("%-6s %-20s %-24s %s", r.kind, r.spec, r.job, when(r.next)))
      end
    end
    app:close()
    return 0
  end,
}
