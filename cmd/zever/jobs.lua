-- zever jobs failed|retry|forget: the dead letters of the app's jobs (the failed_jobs table of
-- its database). `failed` prints a table (or --json), `retry <id>|--all` dispatches failed jobs
-- again (attempts start over) and removes their records, `forget <id>|--all` removes records.
-- The app (--app PATH or -C DIR, default .; zever.cli.app) is loaded for its configuration,
-- as `zever worker` loads it. --dry-run lists the records retry/forget would take; a bulk
-- retry on a terminal retries them one by one under the progress bar (zever.cli.progress).

local json = require "zever.json"
local sys = require "zever.sys"
local cliapp = require "zever.cli.app"
local output = require "zever.cli.output"
local progress = require "zever.cli.progress"

local format = string.format

local USAGE = "zever jobs failed [--json] | retry <id>|--all | forget <id>|--all [--dry-run] [--app PATH]"

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
    { name = "all", summary = "retry/forget: every failed job" },
    { name = "limit", arg = "N", type = "number", summary = "failed: at most N rows" },
  },
  json = { "failed", "retry", "forget" },
  dry_run = { "retry", "forget" },
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
        print(json.encode(json.array(out)))
      else
        print_table(rows)
      end
    elseif flags["dry-run"] or (id == "all" and verb == "retry" and sys.isatty(2)) then
      -- The records retry/forget would take: listed (--dry-run), or retried one by one under
      -- the progress bar (a bulk retry on a terminal).
      local rows, err = jobs:failed()
      if not rows then
        app:close()
        return 1, tostring(err)
      end
      local picked = {}
      for _, r in ipairs(rows) do
        if id == "all" or r.id == id then picked[#picked + 1] = r end
      end
      if #picked == 0 and id ~= "all" then
        code, msg = 1, format("%s: no failed job with id %d", verb, id)
      elseif flags["dry-run"] then
        local actions = {}
        for i, r in ipairs(picked) do
          actions[i] = { action = verb, target = format("%d (%s on %s)", r.id, r.name, r.queue),
            id = r.id, name = r.name, queue = r.queue }
        end
        output.would(flags, actions)
      else
        local bar, n = progress.new("jobs retry", #picked), 0
        for _, r in ipairs(picked) do
          local k, rerr = jobs:retry(r.id)
          if not k then
            code, msg = 1, tostring(rerr)
            break
          end
          n = n + k
          bar:step(r.name)
        end
        bar:finish()
        if code == 0 then
          output.emit(flags, { retried = n }, format("retried %d job(s)", n))
        end
      end
    else
      local n, err = jobs[verb](jobs, id)
      if not n then
        code, msg = 1, tostring(err)
      elseif n == 0 and id ~= "all" then
        code, msg = 1, format("%s: no failed job with id %d", verb, id)
      else
        local key = verb == "retry" and "retried" or "forgot"
        output.emit(flags, { [key] = n }, format("%s %d job(s)", key, n))
      end
    end
    app:close()
    return code, msg
  end,
}
