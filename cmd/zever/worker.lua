-- zever worker [app] [--queues a,b] [--concurrency N] [--drain SECONDS]: runs the app's jobs.
-- It loads the same app file as `zever serve` (the file registers its jobs on app.jobs) and
-- claims from the same queue (the db queue: one SQLite file shared by both processes). The
-- first SIGTERM/SIGINT drains (no new claims, running jobs get --drain seconds, unfinished ones
-- are requeued) and exits 0; a second one exits at once with 1. SIGHUP drains the same way,
-- then the process runs its command line again (zever.server.reexec), so the configuration and
-- the app are read anew. zever.worker does the work.
-- The app: the positional app.lua or folder, --app PATH, or -C DIR (zever.cli.app). Flags
-- override the configuration (jobs.queue, jobs.concurrency, jobs.drain), which overrides the
-- defaults.

local loop = require "zever.loop"
local cliapp = require "zever.cli.app"

local format = string.format

local function logger(app)
  local ok, log = pcall(function() return app.log end)
  if not ok then
    return function(level, msg, fields)
      io.stderr:write("zever: ", level, ": ", msg, " ", require("zever.json").encode(fields or {}),
        "\n")
    end
  end
  return function(level, msg, fields) log[level](log, msg, fields) end
end

return {
  name = "worker",
  json = false,
  dry_run = false,
  why = "a worker that runs until stopped",
  summary = "Run the app's background jobs",
  usage = "zever worker [app.lua | dir] [--queues a,b] [--concurrency N] [--drain SECONDS]",
  flags = {
    cliapp.FLAG,
    { name = "queues", arg = "A,B", type = "list",
      summary = "queues to work, in priority order (default: jobs.queue)" },
    { name = "concurrency", arg = "N", type = "number",
      summary = "jobs run at once (default: jobs.concurrency)" },
    { name = "drain", arg = "SECONDS", type = "number",
      summary = "how long running jobs may finish after SIGTERM (default: jobs.drain)" },
  },
  run = function(args, flags)
    if flags.concurrency and (flags.concurrency < 1 or flags.concurrency % 1 ~= 0) then
      return 2, "--concurrency wants a positive integer"
    end
    if flags.drain and flags.drain < 0 then return 2, "--drain wants seconds >= 0" end
    if args[2] then return 2, "one app only; usage: zever worker [app.lua | dir] [flags]" end
    local target, terr = cliapp.resolve(flags, args[1], "worker")
    if not target then return 2, terr end
    local ok, app, path = pcall(cliapp.load, target)
    if not ok then return 1, tostring(app) end
    local got, jobs = pcall(function() return app.jobs end)
    if not got then return 1, tostring(jobs) end
    local cfg = app:config()
    local queues = flags.queues or { jobs.defaults.queue }
    local concurrency = flags.concurrency or cfg.jobs.concurrency
    local drain = flags.drain or cfg.jobs.drain
    local w = require("zever.worker").new(jobs, { queues = queues, concurrency = concurrency,
      poll_max = cfg.queue.poll_max, log = logger(app),
      observe = require("zever.trace").job_observer_for(app) })
    -- The app's schedules (app.scheduler resolved by the app file) tick on this loop too.
    local sch = app:container():resolved("scheduler")
    if sch and #sch.entries == 0 then sch = nil end
    -- The outbox relay (docs/outbox.md): on with outbox.relay, or when the app file used
    -- app.outbox (so its records get published); it publishes to app.queue or app.eventbus.
    local relay
    if cfg.outbox.relay or app:container():resolved("outbox") then
      local outbox = require "zever.outbox"
      relay = outbox.relayer(app.outbox, outbox.sink_for(app, cfg.outbox.relay_sink),
        { interval = cfg.outbox.relay_interval, log = logger(app) })
    end
    -- Ended workflow runs past their retention are deleted in bounded batches (workflow.sweep_*)
    -- when the app file used app.workflow.
    local wf_sweep
    if app:container():resolved("workflow") then
      wf_sweep = require("zever.workflow").sweeper(app.workflow,
        { interval = cfg.workflow.sweep_interval, log = logger(app) })
    end
    local signals = 0
    local function on_signal(name)
      signals = signals + 1
      if signals > 1 then
        io.stderr:write("zever: second ", name, ", exiting now\n")
        os.exit(1)
      end
      io.stderr:write(format("zever: %s, draining (up to %gs)\n", name, drain))
      if sch then sch:stop() end
      if relay then relay:stop() end
      if wf_sweep then wf_sweep:stop() end
      w:drain(drain, function() loop.stop() end)
    end
    local term, int = loop.signal("SIGTERM", on_signal), loop.signal("SIGINT", on_signal)
    local reload = false
    local hup = loop.signal("SIGHUP", function()
      if signals > 0 then return end
      reload = true
      on_signal("SIGHUP")
    end)
    w:start()
    if sch then sch:start{ log = logger(app) } end
    if relay then
      relay:start()
      io.stderr:write(format("zever: outbox relay to %s every %gs when idle\n",
        cfg.outbox.relay_sink, cfg.outbox.relay_interval))
    end
    if wf_sweep then wf_sweep:start() end
    io.stderr:write(format("zever: worker for %s on queues %s (concurrency %d)\n", path,
      table.concat(queues, ","), concurrency))
    loop.run()
    term:stop()
    int:stop()
    hup:stop()
    local s = w.stats
    io.stderr:write(format("zever: worker stopped: %d done, %d retried, %d dead, %d released\n",
      s.done, s.retried, s.dead, s.released))
    local closed, errs = app:close()
    if not closed then io.stderr:write("zever: closing the app: ", tostring(errs), "\n") end
    if reload then
      io.stderr:write("zever: SIGHUP: starting again with the configuration and app as they are\n")
      cliapp.restore_dir()   -- the command line's -C DIR is relative to where it started
      local _, err = require("zever.server").reexec()
      return 1, "SIGHUP: cannot start again: " .. tostring(err)
    end
    return 0
  end,
}
