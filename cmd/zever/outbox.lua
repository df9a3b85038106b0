-- zever outbox status|relay|dlq list|dlq requeue|purge: the app's transactional outbox
-- (app.outbox, docs/outbox.md) from the command line. The app (--app PATH or -C DIR, default .;
-- zever.cli.app) is loaded for its configuration, as `zever worker` loads it.
--
--   status [--json]                 pending, delivered, dead, the oldest pending message's age
--   relay [--once]                  publishes due messages now (to outbox.relay_sink), batch
--                                   after batch until a batch is not full (--once: one batch)
--   dlq list [--json] [--limit N]   the dead messages
--   dlq requeue --id N | --all      dead messages back to pending, due now
--   purge --before DURATION         deletes delivered messages older than that ("168h")
--
-- Every verb takes --json (one JSON document); relay, dlq requeue and purge take --dry-run
-- (what they would do; nothing is published, requeued or deleted).

local json = require "zever.json"
local cliapp = require "zever.cli.app"
local output = require "zever.cli.output"

local format = string.format

local USAGE = "zever outbox status [--json] | relay [--once] | dlq list [--json] | " ..
  "dlq requeue --id N|--all | purge --before 168h [--app PATH]"

local VERBS = { "status", "relay", "dlq", "purge" }

local function one_line(s, max)
  s = tostring(s or ""):gsub("%s+", " ")
  if #s > max then s = s:sub(1, max - 3) .. "..." end
  return s
end

local function usage_error(verb)
  if verb then
    local best = require("zever.text").closest(verb, VERBS)
    return 2, format('unknown outbox command "%s"%s; usage: %s', verb,
      best and format(' (did you mean "%s"?)', best) or "", USAGE)
  end
  return 2, "usage: " .. USAGE
end

local function run_verb(app, ob, args, flags)
  local verb = args[1]
  if verb == "status" then
    local st, err = ob:status()
    if not st then return 1, tostring(err) end
    output.emit(flags, st, format("pending %d, delivered %d, dead %d, oldest pending %ds", st.pending,
      st.delivered, st.dead, math.floor(st.oldest_pending_age or 0)))
    return 0
  elseif verb == "relay" and flags["dry-run"] then
    local st, err = ob:status()
    if not st then return 1, tostring(err) end
    local n = flags.once and math.min(st.pending, ob.batch) or st.pending
    output.would(flags, { { action = "relay", target = format("%d pending message(s) to %s", n,
      app:config().outbox.relay_sink), count = n } })
    return 0
  elseif verb == "relay" then
    local outbox = require "zever.outbox"
    local cfg = app:config()
    local sink = outbox.sink_for(app, cfg.outbox.relay_sink)
    local total, failed = 0, 0
    repeat
      local n, f = ob:relay(sink)
      if not n then return 1, tostring(f) end
      total, failed = total + n, failed + f
    until flags.once or n + f < ob.batch
    output.emit(flags, { relayed = total, failed = failed }, format("relayed %d, failed %d", total, failed))
    return failed > 0 and 1 or 0
  elseif verb == "dlq" then
    local sub = args[2]
    if sub == "list" then
      local rows, err = ob:dead(flags.limit)
      if not rows then return 1, tostring(err) end
      if flags.json then print(json.encode(json.array(rows))) return 0 end
      if #rows == 0 then print("no dead messages") return 0 end
      print(format("%-8s %-24s %-16s %-8s %s", "ID", "TOPIC", "KEY", "ATTEMPTS", "ERROR"))
      for _, r in ipairs(rows) do
        print(format("%-8d %-24s %-16s %-8d %s", r.id, one_line(r.topic, 24),
          one_line(r.key, 16), r.attempts or 0, one_line(r.last_error or r.error, 60)))
      end
      return 0
    elseif sub == "requeue" then
      local id = flags.all and "all" or tonumber(flags.id)
      if flags.all and flags.id then return 2, "dlq requeue: give --id or --all, not both" end
      if not id or (id ~= "all" and (id < 1 or id % 1 ~= 0)) then
        return 2, "dlq requeue: want --id N or --all"
      end
      if flags["dry-run"] then
        local rows, err = ob:dead(1000000)
        if not rows then return 1, tostring(err) end
        local actions = {}
        for _, r in ipairs(rows) do
          if id == "all" or r.id == id then
            actions[#actions + 1] = { action = "requeue", target = format("%d (%s)", r.id, r.topic),
              id = r.id }
          end
        end
        if #actions == 0 and id ~= "all" then return 1, format("dlq requeue: no dead message %d", id) end
        output.would(flags, actions)
        return 0
      end
      local n, err = ob:requeue(id)
      if not n then return 1, tostring(err) end
      if n == 0 and id ~= "all" then return 1, format("dlq requeue: no dead message %d", id) end
      output.emit(flags, { requeued = n }, format("requeued %d message(s)", n))
      return 0
    end
    return 2, "usage: zever outbox dlq list | dlq requeue --id N|--all"
  elseif verb == "purge" then
    if not flags.before then return 2, "purge: want --before DURATION (e.g. 168h)" end
    local secs = require("zever.duration").parse(flags.before)
    if not secs then return 2, "purge: --before wants a duration such as 168h or 7d" end
    if flags["dry-run"] then
      output.would(flags, { { action = "purge",
        target = format("delivered messages older than %s", flags.before),
        before_seconds = secs } })
      return 0
    end
    local n, err = ob:purge(secs)
    if not n then return 1, tostring(err) end
    output.emit(flags, { purged = n }, format("purged %d delivered message(s)", n))
    return 0
  end
  return usage_error(verb)
end

return {
  name = "outbox",
  summary = "Show, relay, requeue or purge the transactional outbox",
  usage = USAGE,
  flags = {
    cliapp.FLAG,
    { name = "once", summary = "relay: one batch only" },
    { name = "all", summary = "dlq requeue: every dead message" },
    { name = "id", arg = "N", summary = "dlq requeue: this message" },
    { name = "limit", arg = "N", type = "number", summary = "dlq list: at most N rows" },
    { name = "before", arg = "DURATION", summary = "purge: delivered messages older than this" },
  },
  json = { "status", "relay", "dlq", "purge" },
  dry_run = { "relay", "dlq", "purge" },
  run = function(args, flags)
    local verb = args[1]
    local known = false
    for _, v in ipairs(VERBS) do if v == verb then known = true end end
    if not known then return usage_error(verb) end
    local target, terr = cliapp.resolve(flags, nil, "outbox")
    if not target then return 2, terr end
    local ok, app = pcall(cliapp.load, target)
    if not ok then return 1, tostring(app) end
    local got, ob = pcall(function() return app.outbox end)
    if not got then return 1, tostring(ob) end
    local code, msg = run_verb(app, ob, args, flags)
    app:close()
    return code, msg
  end,
}
