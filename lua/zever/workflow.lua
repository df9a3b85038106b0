-- zever.workflow: durable multi-step runs (docs/workflow.md), on the jobs battery and a store
-- (adapters.workflow.memory, adapters.workflow.db): a run survives a worker killed between
-- steps, each step's result is recorded once, waits for signals and timers cost no worker.
--
--   local wf = workflow.new{ jobs = app.jobs }               -- memory store; db: store = impl
--   wf:define("order", function(ctx, input)
--     local charge = ctx:step("charge", function(key) return pay(input, key) end)
--     local ok = ctx:wait("approved", 3600)                  -- a signal, or nil after 1 h
--     ctx:sleep(60)                                          -- a durable timer
--     ctx:set_state({ stage = "shipping" })                  -- what query("state") returns
--     return ctx:step("ship", function() return ship(input) end)
--   end, { compensate = { charge = function(result, input) refund(result) end }, attempts = 5 })
--   wf:start(name, input[, id])  -> id | nil, err ("conflict": the id exists; "not_found")
--   wf:signal(id, name, value)   -> true | nil, err ("not_found", "completed")
--   wf:query(id[, "state"|"status"|"output"]) -> value | nil, err
--   wf:cancel(id)                -> true | nil, err      compensations run in reverse order
--   wf:retry(id)                 -> true | nil, err      a stuck run goes on from its last step
--   wf:status(id)                -> { id, name, status, attempts, error, output, steps }
--   wf:list([status][, limit])   -> runs
--
-- How a run executes: a job "zever.workflow" (args { id }) replays the workflow function from
-- the top in a coroutine of the worker. ctx:step(name, fn) returns the recorded result when the
-- step ran before, else runs fn(key) (key: "<run id>/<step name>", an idempotency key to pass to
-- the outside world) and records what it returned (JSON) before going on. ctx:wait and
-- ctx:sleep record their outcome the same way; when they must wait, the job ends ("waiting")
-- and is dispatched again by signal() or by a delayed job at the timer's due time. So the code
-- between steps must be deterministic (replayed), and a step's effect happens once unless the
-- worker dies inside the step itself, between its effect and the record (the key is for that).
--
-- Statuses: pending, running, waiting, completed, compensating, failed, stuck, cancelling,
-- cancelled. A step that raises fails the attempt: the run is retried from its last recorded
-- step after a backoff (attempts: 3, base 1 s doubling), then fails; a failed or cancelled run
-- runs the compensations of its recorded steps, last first, each once (recorded as
-- "compensate:<step>"; status "compensating" meanwhile, so a compensation that raises is
-- finished by the job's retry). ctx:step(name, fn, { retry = false }) fails the run at its first
-- failure; ctx:step(name, fn, { pivot = true }) commits the run once recorded: no compensation
-- any more, and a run out of attempts is "stuck" until wf:retry (the saga pattern: zever.saga).
-- A store records a step's result and the run's step list in one call (record_step).
-- Follows the Go framework's workflow battery: start(name, input, id) with a duplicate id
-- refused, signal/query/cancel by run id, "completed" for a run that ended, a pending-signal
-- bound (100), query "state".

local battery = require "zever.battery"
local errors = require "zever.errors"
local json = require "zever.json"
local sys = require "zever.sys"

local type, error, tostring, pcall, setmetatable, getmetatable, format, floor, min =
  type, error, tostring, pcall, setmetatable, getmetatable, string.format, math.floor, math.min
local encode, decode = json.encode, json.decode

local M = {}

M.JOB = "zever.workflow"
M.MAX_PENDING_SIGNALS = 100

local Workflow = battery.define("workflow", "the workflows are closed")
M.error = Workflow.error
local CLOSED = Workflow.CLOSED

local ENDED = { completed = true, failed = true, cancelled = true }
M.ENDED = ENDED
M.RETENTION = 7 * 86400

-- The sentinel a suspending ctx call raises: the job ends the attempt without failing.
local SUSPEND = setmetatable({}, { __tostring = function() return "workflow: suspended" end })
-- What a step with retry = false raises when it fails (the run fails now): a zever error with
-- code "step_failed" whose text is the step's own failure, as is.
local function fatal(out)
  return errors.new("workflow", "step_failed", tostring(out), { cause = out, as_is = true })
end
local function is_fatal(out)
  return errors.is(out, "step_failed") and out.battery == "workflow"
end

local function wall() return sys.wall() end

local function dec(s)
  if s == nil then return nil end
  return decode(s)
end

-- --- the context a run's function sees ------------------------------------------------------

local Ctx = {}
Ctx.__index = Ctx

-- The run's state column: what query("state") gives, the recorded steps in order, and whether
-- a pivot step was recorded (committed: no compensation any more).
local function state_text(ctx)
  return encode({ state = ctx.state, order = ctx.order, committed = ctx.committed or nil })
end

-- opts: retry = false (a failure fails the run at once: no further attempt, compensations run),
-- pivot = true (once recorded, the run is committed: a later failure is retried forward and a
-- run out of attempts is "stuck" rather than compensated; wf:retry resumes it).
function Ctx:step(name, fn, opts)
  if type(name) ~= "string" or name == "" then error("ctx:step: name must be a string", 2) end
  if type(fn) ~= "function" then error("ctx:step: fn must be a function", 2) end
  if opts ~= nil and type(opts) ~= "table" then error("ctx:step: opts must be a table", 2) end
  if self.seen[name] then error("ctx:step: step \"" .. name .. "\" runs twice in one run", 2) end
  self.seen[name] = true
  local key = "step:" .. name
  local done = self.steps[key]
  if done ~= nil then return dec(done).v end
  local v
  if opts and opts.retry == false and not self.committed then
    local ok, out = pcall(fn, self.id .. "/" .. name)
    if not ok then error(fatal(out), 0) end
    v = out
  else
    v = fn(self.id .. "/" .. name)
  end
  local text = encode({ v = v })
  local n, committed = #self.order, self.committed
  self.order[n + 1] = name
  if opts and opts.pivot then self.committed = true end
  -- One store call records the result and the run's step list together (one script on redis,
  -- one transaction on a database): a worker killed in between cannot leave one without the other.
  if not self.wf.impl:record_step(self.id, key, text, { state = state_text(self),
      updated_at = self.wf.now() }) then
    self.order[n + 1], self.committed = nil, committed
    text = self.wf.impl:steps(self.id)[key] -- another worker recorded it first: theirs stands
  end
  self.steps[key] = text
  return dec(text).v
end

-- Waits for the next signal called name; returns its value, or nil after timeout seconds.
function Ctx:wait(name, timeout)
  if type(name) ~= "string" then error("ctx:wait: name must be a string", 2) end
  self.nwait = self.nwait + 1
  local key = "wait:" .. self.nwait .. ":" .. name
  local done = self.steps[key]
  if done ~= nil then
    local rec = dec(done)
    if rec.timeout then return nil end
    return rec.v
  end
  -- The first signal of that name not taken by an earlier wait.
  for _, s in ipairs(self.signals) do
    if s.name == name and not self.taken[s.seq] then
      self.taken[s.seq] = true
      local text = encode({ v = dec(s.value), seq = s.seq })
      self.wf.impl:put_step(self.id, key, text)
      self.steps[key] = text
      return dec(s.value)
    end
  end
  local tkey = "wait_until:" .. self.nwait
  local due = self.steps[tkey] and dec(self.steps[tkey]).v
  if timeout then
    if not due then
      due = self.wf.now() + timeout
      self.wf.impl:put_step(self.id, tkey, encode({ v = due }))
      self.steps[tkey] = encode({ v = due })
    end
    if self.wf.now() >= due then
      local text = encode({ timeout = true })
      self.wf.impl:put_step(self.id, key, text)
      self.steps[key] = text
      return nil
    end
  end
  self.wake_at = due
  error(SUSPEND, 0)
end

-- A durable timer: the run goes on seconds from the first time it got here.
function Ctx:sleep(seconds)
  if type(seconds) ~= "number" or seconds < 0 then error("ctx:sleep: seconds must be >= 0", 2) end
  self.nsleep = self.nsleep + 1
  local key = "sleep:" .. self.nsleep
  local due = self.steps[key] and dec(self.steps[key]).v
  if not due then
    due = self.wf.now() + seconds
    self.wf.impl:put_step(self.id, key, encode({ v = due }))
    self.steps[key] = encode({ v = due })
  end
  if self.wf.now() >= due then return end
  self.wake_at = due
  error(SUSPEND, 0)
end

function Ctx:set_state(v)
  self.state = v
  self.wf.impl:update(self.id, { state = state_text(self), updated_at = self.wf.now() })
end

-- --- running a run (the job) ----------------------------------------------------------------

local function backoff(attempts)
  return min(2 ^ (attempts - 1), 300)
end

local function dispatch(self, id, delay)
  local ok, err = self.jobs:dispatch(M.JOB, { id = id }, delay and delay > 0 and
    { delay = delay } or nil)
  if not ok then return nil, err end
  return true
end

-- Runs the compensations of the recorded steps, last first, each once (recorded as
-- "compensate:<step>"); a committed run (past a pivot) has none. A compensation that raises
-- raises: the run stays "compensating"/"cancelling" and the job's retry goes on from there.
local function compensate(self, run, def)
  local st = dec(run.state) or {}
  if st.committed then return end
  local order = st.order or {}
  local steps = self.impl:steps(run.id)
  local input = dec(run.input)
  for i = #order, 1, -1 do
    local name = order[i]
    local fn = def.compensate and def.compensate[name]
    local key = "compensate:" .. name
    if fn and steps[key] == nil then
      fn(dec(steps["step:" .. name]).v, input, run.id .. "/" .. key)
      self.impl:put_step(run.id, key, encode({ v = true }))
    end
  end
end

-- The retention of a run: its own (start's opts.retention), else its workflow's (define's),
-- else the battery's (workflow.retention); 0 keeps it until purged.
local function retention_of(self, run, def)
  return run.retention or (def and def.retention) or self.retention
end

-- Ends the run (status completed, failed or cancelled): fields plus the time it ended and,
-- with a retention, when the sweep may delete it.
local function finish(self, run, def, status, fields)
  local t = self.now()
  fields = fields or {}
  fields.status, fields.updated_at, fields.ended_at = status, t, t
  local keep = retention_of(self, run, def)
  if keep > 0 then fields.expire_at = t + keep end
  self.impl:update(run.id, fields)
  return status
end

-- Fails the run: "compensating" while its compensations run (a worker killed meanwhile leaves
-- it so, and the job's next attempt finishes them), then "failed".
local function fail(self, run, def, fields)
  local id = run.id
  fields.status, fields.updated_at = "compensating", self.now()
  self.impl:update(id, fields)
  self.counters.failed = self.counters.failed + 1
  compensate(self, self.impl:get(id), def)
  return finish(self, run, def, "failed")
end

-- One attempt at a run: replay the function; the outcome goes to the store.
local function execute(self, id)
  local run = self.impl:get(id)
  if not run or ENDED[run.status] or run.status == "stuck" then return "ended" end
  local def = self.defs[run.name]
  if not def then error("workflow: no workflow named \"" .. run.name .. "\" is defined", 0) end
  if run.status == "compensating" then
    compensate(self, run, def)
    return finish(self, run, def, "failed")
  end
  if run.status == "cancelling" then
    compensate(self, run, def)
    return finish(self, run, def, "cancelled")
  end
  local st = dec(run.state) or {}
  local ctx = setmetatable({ wf = self, id = id, steps = self.impl:steps(id),
    signals = self.impl:signals(id), taken = {}, seen = {}, order = st.order or {},
    state = st.state, committed = st.committed, nwait = 0, nsleep = 0 }, Ctx)
  -- Signals already taken by recorded waits are not offered again.
  for k, v in pairs(ctx.steps) do
    if k:match("^wait:") then
      local seq = dec(v).seq
      if seq then ctx.taken[seq] = true end
    end
  end
  self.impl:update(id, { status = "running", updated_at = self.now() })
  local ok, out = pcall(def.fn, ctx, dec(run.input))
  if ok then
    self.counters.completed = self.counters.completed + 1
    return finish(self, run, def, "completed", { output = encode({ v = out }) })
  end
  if out == SUSPEND then
    local cur = self.impl:get(id)
    if cur and cur.status == "cancelling" then return execute(self, id) end
    self.impl:update(id, { status = "waiting", wake_at = ctx.wake_at or self.impl.null,
      updated_at = self.now() })
    if ctx.wake_at then dispatch(self, id, ctx.wake_at - self.now()) end
    return "waiting"
  end
  local attempts = (run.attempts or 0) + 1
  local msg = tostring(out):sub(1, 500)
  if is_fatal(out) then return fail(self, run, def, { attempts = attempts, error = msg }) end
  if attempts < def.attempts then
    self.impl:update(id, { status = "pending", attempts = attempts, error = msg,
      updated_at = self.now() })
    dispatch(self, id, def.base * backoff(attempts))
    return "retry"
  end
  if ctx.committed then
    -- Past a pivot there is no going back: the run waits for wf:retry (a fixed fault, a person).
    self.impl:update(id, { status = "stuck", attempts = attempts, error = msg, updated_at = self.now() })
    self.counters.stuck = self.counters.stuck + 1
    return "stuck"
  end
  return fail(self, run, def, { attempts = attempts, error = msg })
end
M.execute = execute

-- --- the front-end -----------------------------------------------------------------------------

function Workflow:define(name, fn, opts)
  battery.string(name, "workflow:define", "name")
  if type(fn) ~= "function" then error("workflow:define: fn must be a function", 2) end
  battery.opt_table(opts, "workflow:define", "opts")
  opts = opts or {}
  if opts.compensate ~= nil and type(opts.compensate) ~= "table" then
    error("workflow:define: opts.compensate must be a table of functions by step name", 2)
  end
  self.defs[name] = { fn = fn, compensate = opts.compensate,
    attempts = battery.count(opts.attempts, 3, "workflow:define", "attempts", 1),
    base = opts.base or 1,
    retention = battery.seconds(opts.retention, nil, "workflow:define", "retention", false, true) }
  return self
end

-- opts: retention (seconds this run is kept once it ended; 0 until purged).
function Workflow:start(name, input, id, opts)
  battery.string(name, "workflow:start", "name")
  if id ~= nil then battery.string(id, "workflow:start", "id") end
  battery.opt_table(opts, "workflow:start", "opts")
  local keep = opts and battery.seconds(opts.retention, nil, "workflow:start", "retention", false,
    true)
  if self.closed then return nil, CLOSED end
  if not self.defs[name] then
    return nil, Workflow.error("not_found", "no workflow named \"" .. name .. "\" is defined")
  end
  local okj, text = pcall(encode, input)
  if not okj then return nil, Workflow.error("invalid", "the input is not a JSON value") end
  if id == nil then
    self.seq = self.seq + 1
    id = format("%s-%s%d", name, self.prefix, self.seq)
  end
  if not self.impl:create(id, name, text, self.now(), keep) then
    return nil, Workflow.error("conflict", "a run with id \"" .. id .. "\" exists")
  end
  self.counters.started = self.counters.started + 1
  local ok, err = dispatch(self, id)
  if not ok then return nil, err end
  return id
end

function Workflow:signal(id, name, value)
  battery.string(id, "workflow:signal", "id")
  battery.string(name, "workflow:signal", "name")
  if self.closed then return nil, CLOSED end
  local run = self.impl:get(id)
  if not run then return nil, Workflow.error("not_found", "no run \"" .. id .. "\"") end
  if ENDED[run.status] or run.status == "cancelling" then
    return nil, Workflow.error("completed", "the run \"" .. id .. "\" has ended (" .. run.status .. ")")
  end
  if #self.impl:signals(id) >= M.MAX_PENDING_SIGNALS then
    return nil, Workflow.error("full", "the run \"" .. id .. "\" holds too many signals")
  end
  local okj, text = pcall(encode, value)
  if not okj then return nil, Workflow.error("invalid", "the value is not a JSON value") end
  self.impl:add_signal(id, name, text)
  return dispatch(self, id)
end

function Workflow:query(id, what)
  battery.string(id, "workflow:query", "id")
  what = what or "state"
  if self.closed then return nil, CLOSED end
  local run = self.impl:get(id)
  if not run then return nil, Workflow.error("not_found", "no run \"" .. id .. "\"") end
  if what == "state" then return (dec(run.state) or {}).state end
  if what == "status" then return run.status end
  if what == "output" then return run.output and dec(run.output).v end
  return nil, Workflow.error("invalid", "unknown query \"" .. tostring(what) ..
    "\" (state, status or output)")
end

function Workflow:cancel(id)
  battery.string(id, "workflow:cancel", "id")
  if self.closed then return nil, CLOSED end
  local run = self.impl:get(id)
  if not run then return nil, Workflow.error("not_found", "no run \"" .. id .. "\"") end
  if ENDED[run.status] then
    return nil, Workflow.error("completed", "the run \"" .. id .. "\" has ended (" .. run.status .. ")")
  end
  self.impl:update(id, { status = "cancelling", updated_at = self.now() })
  return dispatch(self, id)
end

-- A stuck run (out of attempts past a pivot) runs again from where it stopped, with its
-- attempts counted from zero.
function Workflow:retry(id)
  battery.string(id, "workflow:retry", "id")
  if self.closed then return nil, CLOSED end
  local run = self.impl:get(id)
  if not run then return nil, Workflow.error("not_found", "no run \"" .. id .. "\"") end
  if run.status ~= "stuck" then
    return nil, Workflow.error("invalid", "the run \"" .. id .. "\" is " .. run.status ..
      ", not stuck")
  end
  self.impl:update(id, { status = "pending", attempts = 0, updated_at = self.now() })
  return dispatch(self, id)
end

function Workflow:status(id)
  battery.string(id, "workflow:status", "id")
  if self.closed then return nil, CLOSED end
  local run = self.impl:get(id)
  if not run then return nil, Workflow.error("not_found", "no run \"" .. id .. "\"") end
  local st = dec(run.state) or {}
  -- The steps whose compensation ran (read only for a run that compensates or did).
  local compensated = {}
  if run.status == "compensating" or run.status == "failed" or run.status == "cancelling" or
      run.status == "cancelled" then
    local steps = self.impl:steps(id)
    for _, name in ipairs(st.order or {}) do
      if steps["compensate:" .. name] then compensated[#compensated + 1] = name end
    end
  end
  return { id = run.id, name = run.name, status = run.status, attempts = run.attempts,
    error = run.error, output = run.output and dec(run.output).v, steps = st.order or {},
    compensated = compensated, committed = st.committed or false,
    created_at = run.created_at, updated_at = run.updated_at, ended_at = run.ended_at,
    expire_at = run.expire_at }
end

function Workflow:list(status, limit)
  if self.closed then return nil, CLOSED end
  return self.impl:list(status, battery.count(limit, 100, "workflow:list", "limit", 1))
end

-- Deletes at most limit (default sweep_batch) ended runs whose retention has passed, with
-- their steps and signals; returns how many it deleted and how many more are due now.
function Workflow:sweep(limit)
  limit = battery.count(limit, self.sweep_batch, "workflow:sweep", "limit", 1)
  if self.closed then return nil, CLOSED end
  local n, more = self.impl:sweep("expire_at", self.now(), limit)
  self.counters.swept = self.counters.swept + n
  return n, more
end

-- Deletes ended runs (completed, failed, cancelled) that ended more than before seconds ago,
-- whatever their retention, at most opts.limit (default sweep_batch) per call; returns how many
-- it deleted and how many more there are. opts.dry_run: deletes nothing, returns the count.
function Workflow:purge(before, opts)
  before = battery.seconds(before, nil, "workflow:purge", "before", false, true)
  if before == nil then error("workflow:purge: before must be a number of seconds >= 0", 2) end
  battery.opt_table(opts, "workflow:purge", "opts")
  opts = opts or {}
  local limit = battery.count(opts.limit, self.sweep_batch, "workflow:purge", "limit", 1)
  if self.closed then return nil, CLOSED end
  local cutoff = self.now() - before
  if opts.dry_run then
    local n = self.impl:count_ended("ended_at", cutoff)
    return n, n
  end
  return self.impl:sweep("ended_at", cutoff, limit)
end

-- opts: jobs (a zever.jobs: the job is registered on it), clock (a function returning seconds:
-- every time the battery reads, timers and expiry included; the wall clock by default),
-- retention (seconds an ended run is kept, default 7 days; 0 until purged), sweep_batch (runs
-- per sweep, 100).
function M.wrap(impl, opts)
  opts = opts or {}
  if opts.clock ~= nil and type(opts.clock) ~= "function" then
    error("workflow.wrap: clock must be a function", 2)
  end
  local wf = battery.object(Workflow, impl, { jobs = opts.jobs, defs = {}, seq = 0,
    now = opts.clock or wall,
    retention = battery.seconds(opts.retention, M.RETENTION, "workflow.wrap", "retention", false,
      true),
    sweep_batch = battery.count(opts.sweep_batch, 100, "workflow.wrap", "sweep_batch", 1),
    prefix = format("%d-%d-", floor(wall() * 1000) % 100000000, sys.getpid()),
    counters = { started = 0, completed = 0, failed = 0, stuck = 0, swept = 0 } })
  if opts.jobs then
    -- A run's attempts are the workflow's (backoff, compensations); the job's own retries are
    -- for a worker that died mid-run (its lease ends and the job runs again) or a store outage.
    opts.jobs:register(M.JOB, function(args) return execute(wf, args.id) end, { attempts = 25 })
  end
  return wf
end

function M.wrap_config(impl, section, ctx)
  local jobs, err = ctx:get("jobs")
  if not jobs then return nil, err end
  return M.wrap(impl, { jobs = jobs, retention = section and section.retention,
    sweep_batch = section and section.sweep_batch })
end

-- The periodic sweep `zever worker` runs: wf:sweep() at once, then every interval seconds, one
-- loop turn (1 ms) later while a full batch leaves more due (each batch in a coroutine of the pool: a store
-- call yields). opts: interval (60), batch (runs per batch: wf's sweep_batch), log (fn(level,
-- msg, fields)), timer (fn(callback) -> a
-- timer with start(seconds), stop(), close(); loop.timer by default: specs pass their own and
-- fire it). r:start() / r:stop([on_done]) (on_done once the batch in flight settled) / r:close();
-- r.stats = { sweeps, deleted, errors }. The pacing is zever.sched.periodic's.
function M.sweeper(wf, opts)
  if type(wf) ~= "table" or getmetatable(wf) ~= Workflow then
    error("workflow.sweeper: want the workflows (app.workflow)", 2)
  end
  battery.opt_table(opts, "workflow.sweeper", "opts")
  opts = opts or {}
  local interval = battery.seconds(opts.interval, 60, "workflow.sweeper", "interval", true, true)
  local batch = battery.count(opts.batch, nil, "workflow.sweeper", "batch", 1)
  local log = opts.log or function() end
  local stats = { sweeps = 0, deleted = 0, errors = 0 }
  local function failed(err)
    stats.errors = stats.errors + 1
    log("error", "workflow sweep failed", { error = tostring(err) })
  end
  local r = require("zever.sched").periodic(function()
    local n, more = wf:sweep(batch)
    if n == nil then
      failed(more)
      return false
    end
    stats.sweeps, stats.deleted = stats.sweeps + 1, stats.deleted + n
    return more > 0 and n > 0
  end, interval, { timer = opts.timer, on_error = failed })
  r.stats = stats
  return r
end

-- workflow.new{ jobs = app.jobs[, db = app.db] }: the db store when db is given, else memory.
function M.new(opts)
  opts = opts or {}
  local impl = opts.db and require("adapters.workflow.db").new(opts.db, opts) or
    require("adapters.workflow.memory").new()
  return M.wrap(impl, opts)
end

return M
