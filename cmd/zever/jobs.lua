-- zever jobs failed|retry|forget: the dead letters of the app's jobs (the failed_jobs table of
-- its database). `failed` prints a table (or --json), `retry <id>|--all` dispatches failed jobs
-- again (attempts start over) and removes their records, `forget <id>|--all` removes records.
-- The app (--app PATH or -C DIR, default .; zever.cli.app) is loaded for its configuration,
-- as `zever worker` loads it.

local json = require "zever.json"
local cliapp = require "zever.cli.app"

local format = string.format

local USAGE = "zever jobs failed [--json] | retry <id>|--all | forget <id>|--all [--app PATH]"

-- The error's message on one line (its traceback left to --json). A long one keeps its end,
-- where the message is: the start is the file's path, whose length depends on the checkout.
local function one_line(s, max)
  s = tostring(s):match("^[^\n]*"):gsub("%s+", " ")
  if #s > max then s = "..." .. s:sub(-(max - 3)) end
  return s
end

local function print_table(rows)
  if #rows == 0 then
    print("no failed jobs")
    return
  end
  print(format("%-6s %-12s %-20s %-8s %-20s %s", "ID", "QUEUE", "JOB", "ATTEMPTS", "FAILED AT",
    "ERROR"))
  for _, r in ipairs(rows) do
    print(format("%-6d %-12s %-20s %-8d %-20s %s", r.id, r.queue, r.name, r.attempts,
      os.date("!%Y-%m-%dT%H:%M:%SZ", math.floor(r.failed_at)), one_line(r.error, 60)))
  end
end

local function job_target(args, flags, verb)
  if flags.all then
    if args[2] then return nil, verb .. ": give an id or --all, not both" end
    return "all"
  end
  local id = tonumber(args[2])
  if not id or id < 1 or id % 1 ~= 0 then return nil, verb .. ": want a failed job id or --all" end
  return id
end

return {
  name = "jobs",
  summary = "List, retry or forget failed jobs",
  usage = USAGE,
  flags = {
    cliapp.FLAG,
    { name = "json", summary = "failed: print JSON" },
    { name = "all", summary = "retry/forget: every failed job" },
    { name = "limit", arg = "N", type = "number", summary = "failed: at most N rows" },
  },
  run = function(args, flags)
    local verb = args[1]
    if verb ~= "failed" and verb ~= "retry" and verb ~= "forget" then
      if verb then
        local best = require("zever.text").closest(verb, { "failed", "retry", "forget" })
        return 2, format('unknown jobs command "%s"%s; usage: %s', verb,
          best and format(' (did you mean "%s"?)', best) or "", USAGE)
      end
      return 2, "usage: " .. USAGE
    end
    local id, uerr
    if verb ~= "failed" then
      id, uerr = job_target(args, flags, verb)
      if not id then return 2, uerr end
    end
    local target, terr = cliapp.resolve(flags, nil, "jobs")
    if not target then return 2, terr end
    local ok, app = pcall(cliapp.load, target)
    if not ok then return 1, tostring(app) end
    local got, jobs = pcall(function() return app.jobs end)
    if not got then return 1, tostring(jobs) end
    local code, msg = 0, nil
    if verb == "failed" then
      local rows, err = jobs:failed(flags.limit and { limit = flags.limit } or nil)
      if not rows then
        code, msg = 1, tostring(err)
      elseif flags.json then
        local out = {}
        for i, r in ipairs(rows) do
          out[i] = { id = r.id, queue = r.queue, name = r.name, args = r.args, error = r.error,
            attempts = r.attempts, failed_at = r.failed_at }
        end
        print(#out == 0 and "[]" or json.encode(out))
      else
        print_table(rows)
      end
    else
      local n, err = jobs[verb](jobs, id)
      if not n then
        code, msg = 1, tostring(err)
      elseif n == 0 and id ~= "all" then
        code, msg = 1, format("%s: no failed job with id %d", verb, id)
      else
        print(format("%s %d job(s)", verb == "retry" and "retried" or "forgot", n))
      end
    end
    app:close()
    return code, msg
  end,
}
