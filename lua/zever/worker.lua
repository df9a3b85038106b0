-- zever.worker: the loop of `zever worker`: claims jobs from the queues, runs their handlers in
-- coroutines, settles each one (done, retry later, dead letter) and drains on shutdown.
--
--   local w = worker.new(app.jobs, { queues = { "default" }, concurrency = 1, poll_max = 1,
--                                    log = function(level, msg, fields) end })
--   w:start()                  the poller coroutine and its two timers, on this loop
--   w:drain(seconds, on_done)  stop claiming; running jobs get `seconds` to finish, the rest are
--                              released (requeued at once) for another worker; then on_done()
--   w:poll()                   -> the delay before the next poll (0 after a claim): one step of
--                                 the poller without waiting (the empty-poll benchmark)
--   w.stats                    { claimed, done, retried, dead, released, timeouts, wakes,
--                                notified }
--
--   poller (one coroutine)                     wake timer (loop.timer, re-armed, never reallocated)
--   +-> claim from queues in order --job--> spawn(run, job) -- handler may wait (zever.sleep)
--   |     | nothing: delay 0, 1, 2, 4 ms ... poll_max
--   +-- wait: arm the wake timer for exactly the delay and yield; with every slot busy, wait
--       with no timer: a job that finishes (or a drain) arms it for 0 to resume the poller.
--
--   guard timer (loop.timer): armed for the nearest job deadline; when it fires it fails the
--   jobs whose timeout passed and re-arms itself for the next deadline (or stays off).
--
-- Why two re-armable timers: an idle worker sleeps its whole backoff delay (at poll_max, one
-- wake-up per poll_max seconds, instead of a 1 ms ticker's ~1000 wake-ups a second), and
-- arming a loop.timer allocates nothing, so an idle poll stays allocation-free. A handler that
-- waits is interrupted at its timeout (the job fails; the abandoned coroutine's result is
-- ignored when it wakes); a handler that never waits cannot be interrupted and is judged by what
-- it returns. The end of a drain (releasing what still runs) happens in the poller coroutine,
-- so an adapter that waits on I/O (Redis) may do so. The worker must not know the queue's
-- storage (zever.jobs' adapter does).
--
-- Woken instead of polling: when the jobs adapter can subscribe (impl:subscribe(topics, fn):
-- the db queue on PostgreSQL, LISTEN/NOTIFY), an empty poll asks impl:next_due(topics) when a
-- message may next become claimable without a notification (a delayed message, an expiring
-- lease) and sleeps until then, or listen_max seconds (default 30: a safety net for a
-- notification lost while the listen connection reconnects) when nothing waits; a
-- notification for one of its topics wakes it at once. An idle worker then sends no query. A
-- notification that arrives while the poller is querying sets self.notified, and the poller
-- polls again instead of sleeping (none is lost between the empty claim and the wait).

local loop = require "zever.loop"
local sched = require "zever.sched"
local json = require "zever.json"
local sys = require "zever.sys"
local jobs_mod = require "zever.jobs"

local type, error, tostring, pcall, xpcall, pairs, ipairs, setmetatable, format = type, error,
  tostring, pcall, xpcall, pairs, ipairs, setmetatable, string.format
local traceback, decode, encode = debug.traceback, json.decode, json.encode
local yield, running = coroutine.yield, coroutine.running
local spawn, wake = sched.spawn, sched.wake
local backoff = jobs_mod.backoff

local M = {}

local LOOP_CLOCK = { now = loop.now, timer = loop.timer }

local W = {}
W.__index = W

local function log(w, level, msg, fields)
  if w.log then pcall(w.log, level, msg, fields) end
end

-- One step of the poller: claims at most one job (queues in priority order) and spawns it.
-- Returns the delay before the next poll: 0 after a claim; after k empty polls in a row
-- 0, 1 ms, 2 ms, 4 ms, ... at most poll_max.
function W:poll()
  local impl, topics = self.impl, self.topics
  self.notified = false
  for i = 1, #topics do
    local msg, err = impl:claim(topics[i])
    if msg then
      self.idle = 0
      self.stats.claimed = self.stats.claimed + 1
      spawn(self.run_job, self, msg)
      return 0
    elseif err then
      log(self, "error", "worker: claim failed", { queue = topics[i], error = tostring(err) })
      break
    end
  end
  if self.sub then return self:listen_delay() end
  local k = self.idle
  self.idle = k + 1
  if k == 0 then return 0 end
  local d = 0.001 * 2 ^ (k - 1)
  if d >= self.poll_max then
    self.idle = k   -- stays at the cap (and 2^k stays small)
    return self.poll_max
  end
  return d
end

-- After an empty poll with a subscription: the delay until impl:next_due (at least 1 ms, at most
-- listen_max), or 0 when a notification came meanwhile.
function W:listen_delay()
  local due, err = self.impl:next_due(self.topics)
  if err then
    log(self, "error", "worker: next_due failed", { error = tostring(err) })
    return self.poll_max
  end
  if self.notified then return 0 end
  local d = due and due - sys.wall() or self.listen_max
  if d < 0.001 then return 0.001 end
  if d > self.listen_max then return self.listen_max end
  return d
end

-- A notification from the subscription: wakes the poller when it sleeps (not when every slot
-- is busy: a finishing job wakes it then), or marks that it must poll again.
local function on_notify(self, topic)
  if not self.topic_set[topic] then return end
  self.stats.notified = self.stats.notified + 1
  self.notified = true
  if self.waiting and not self.slot_wait and self.timer then self.timer:start(0) end
end

-- The poller waits here: until `delay` seconds passed (nil: until a slot frees up), or a drain.
local function wait(self, delay)
  self.waiting = running()
  self.slot_wait = delay == nil
  if delay then self.timer:start(delay) end
  yield()
end

-- Resumes the poller from the loop (never from inside another coroutine): arms the wake timer
-- for 0 when the poller waits for a slot, or always when force is true (a drain).
local function nudge(self, force)
  if self.waiting and (force or self.slot_wait) then self.timer:start(0) end
end

-- The end of a drain: wait for running jobs up to the deadline, release the rest, close up.
local function finish_drain(self)
  while self.nrunning > 0 do
    local left = self.drain_deadline - self.now()
    if left <= 0 then break end
    wait(self, left)
  end
  -- release may wait (Redis); a timeout settled meanwhile only removes slots, which is safe.
  for slot in pairs(self.slots) do
    if not slot.settled then
      self.slots[slot] = nil
      slot.settled = true
      self.nrunning = self.nrunning - 1
      self.impl:release(slot.msg)
      self.stats.released = self.stats.released + 1
      log(self, "warn", "job released at shutdown", { job = slot.name, id = slot.msg.id })
    end
  end
  self.timer:close()
  self.guard:close()
  self.timer, self.guard, self.guard_at = nil, nil, nil
  if self.sub then
    self.sub:close()
    self.sub = nil
  end
  self.draining = false
  self.poller = nil
  local done = self.on_drained
  self.on_drained = nil
  if done then done() end
end

local function poller(self)
  local now = self.now
  local slice = now()
  while not self.stopping do
    if self.nrunning >= self.concurrency then
      wait(self, nil)
    else
      local d = self:poll()
      if self.stopping then
        -- A drain began while the poll waited on I/O (its nudge found no sleeper): no sleep.
        break
      elseif d > 0 then
        wait(self, d)
        slice = now()
      elseif now() - slice > 0.02 then
        -- A long backlog of jobs that never wait must still let the loop see signals and timers.
        wait(self, 0)
        slice = now()
      end
    end
  end
  finish_drain(self)
end

-- Settles a failed job: retry after the backoff, or dead letter when attempts are used up.
local function failed(self, slot, err)
  local msg, entry = slot.msg, slot.entry
  local attempt = msg.attempt
  if entry and attempt < entry.attempts then
    local delay = backoff(attempt, entry.base, entry.cap, entry.jitter, self.random)
    self.impl:again(msg, delay)
    self.stats.retried = self.stats.retried + 1
    log(self, "warn", "job failed, retrying", { job = slot.name, id = msg.id, attempt = attempt,
      retry_in = delay, error = err })
    return
  end
  local record = { queue = slot.queue, name = slot.name, args = slot.args,
    args_json = slot.args_json or "null", error = err, attempts = attempt,
    failed_at = sys.wall() }
  local id, berr = self.impl:bury(msg, record)
  if not id then
    -- Nothing was recorded: leave the message to its lease, so it comes back rather than vanish.
    log(self, "error", "job dead letter failed", { job = slot.name, error = tostring(berr) })
    return
  end
  record.id, record.args_json = id, nil
  self.stats.dead = self.stats.dead + 1
  log(self, "error", "job dead-lettered", { job = slot.name, id = id, attempts = attempt,
    error = err })
  local hook = self.jobs.dead_letter_hook
  if hook then
    local ok, herr = xpcall(hook, traceback, record)
    if not ok then log(self, "error", "on_dead_letter failed", { error = tostring(herr) }) end
  end
end

local function finish(self, slot)
  slot.settled = true
  self.slots[slot] = nil
  self.nrunning = self.nrunning - 1
  if self.draining then
    if self.nrunning == 0 then nudge(self, true) end
  elseif self.nrunning < self.concurrency then
    nudge(self, false)
  end
end

-- Arms the guard timer for deadline when it is sooner than the one armed (or none is).
local function guard_for(self, deadline)
  local guard = self.guard
  if not guard then return end
  local at = self.guard_at
  if at and at <= deadline then return end
  self.guard_at = deadline
  guard:start(deadline - self.now())
end

-- Runs one job in its own (pooled) coroutine.
function M.run_job(self, msg)
  local slot = { msg = msg, settled = false }
  self.slots[slot] = true
  self.nrunning = self.nrunning + 1
  local ok, rec = pcall(decode, msg.payload)
  local name = ok and type(rec) == "table" and rec.name
  if type(name) ~= "string" then
    slot.name, slot.queue, slot.args_json = "?", msg.topic:sub(#jobs_mod.PREFIX + 1), "null"
    finish(self, slot)
    return failed(self, slot, "malformed job payload")
  end
  slot.name, slot.args = name, rec.args
  slot.queue = msg.topic:sub(#jobs_mod.PREFIX + 1)
  local entry = self.jobs.registry[name]
  if not entry then
    slot.args_json = encode(rec.args)
    finish(self, slot)
    return failed(self, slot, format('unknown job "%s" (not registered in this app)', name))
  end
  slot.entry = entry
  slot.deadline = self.now() + entry.timeout
  guard_for(self, slot.deadline)
  local job = { id = msg.id, name = name, queue = slot.queue, attempt = msg.attempt }
  -- opts.observe (zever.trace.job_observer_for): a span and job metrics around the handler.
  local observed = self.observe and self.observe(job, rec)
  local fok, err = xpcall(entry.fn, traceback, rec.args, job)
  if observed then observed(fok, err) end
  if slot.settled then return end   -- timed out or released by a drain meanwhile
  finish(self, slot)
  if fok then
    self.impl:complete(msg)
    self.stats.done = self.stats.done + 1
  else
    slot.args_json = encode(rec.args)
    failed(self, slot, tostring(err))
  end
end

-- The guard timer: fails the jobs past their timeout, then re-arms for the nearest deadline.
local function on_guard(self)
  self.guard_at = nil
  local t = self.now()
  local next_at
  for slot in pairs(self.slots) do
    local deadline = slot.deadline
    if deadline and not slot.settled then
      if t >= deadline then
        finish(self, slot)
        self.stats.timeouts = self.stats.timeouts + 1
        slot.args_json = encode(slot.args)
        -- In a coroutine of its own: the dead-letter hook may wait.
        spawn(failed, self, slot, format("timeout: the job ran longer than %gs", slot.entry.timeout))
      elseif not next_at or deadline < next_at then
        next_at = deadline
      end
    end
  end
  if next_at then guard_for(self, next_at) end
end

-- The wake timer: resumes the poller.
local function on_wake(self)
  self.stats.wakes = self.stats.wakes + 1
  local co = self.waiting
  if co then
    self.waiting = nil
    wake(co)
  end
end

function W:start()
  if self.timer or self.poller then error("worker:start: already started", 2) end
  self.timer = self.clock.timer(self.on_wake)
  self.guard = self.clock.timer(self.on_guard)
  self.stopping, self.draining = false, false
  if type(self.impl.subscribe) == "function" then
    local sub, err = self.impl:subscribe(self.topics, self.on_notify)
    if err then log(self, "warn", "worker: cannot subscribe, polling", { error = tostring(err) }) end
    self.sub = sub
  end
  -- The poller runs until it first waits; it clears self.poller when it ends, maybe before
  -- spawn returns.
  self.poller = true
  local co = spawn(poller, self)
  if self.poller then self.poller = co end
  return self
end

function W:drain(seconds, on_done)
  if type(seconds) ~= "number" or seconds < 0 then
    error("worker:drain: seconds must be a number >= 0", 2)
  end
  self.stopping = true
  self.on_drained = on_done
  self.drain_deadline = self.now() + seconds
  if not self.poller then
    if on_done then on_done() end
    return
  end
  self.draining = true
  nudge(self, true)
end

local function list(v, what)
  if type(v) == "string" then v = { v } end
  if type(v) ~= "table" or #v == 0 then error("worker: " .. what .. " must be a non-empty list", 3) end
  return v
end

-- jobs: a zever.jobs (app.jobs). opts: queues (default: the jobs' default queue), concurrency
-- (default 1), poll_max (seconds, default 1), listen_max (seconds, default 30: the longest sleep
-- of a subscribed worker), log (function(level, msg, fields)), random (specs),
-- clock (specs): { now = function() -> seconds, timer = function(fn) -> timer } in place of the
-- loop's (loop.now, loop.timer: a timer has start(s), stop(), close()), so a spec moves time
-- itself and fires the timers the worker armed, instead of waiting on the wall clock.
function M.new(jobs, opts)
  if type(jobs) ~= "table" or type(jobs.registry) ~= "table" then
    error("worker.new: expects a zever.jobs (app.jobs)", 2)
  end
  opts = opts or {}
  local queues = list(opts.queues or { jobs.defaults.queue }, "queues")
  local topics = {}
  for i, q in ipairs(queues) do
    if type(q) ~= "string" or q == "" then error("worker: queue names must be strings", 2) end
    topics[i] = jobs_mod.PREFIX .. q
  end
  local c = opts.concurrency or 1
  if type(c) ~= "number" or c < 1 or c % 1 ~= 0 then
    error("worker: concurrency must be an integer >= 1", 2)
  end
  local pm = opts.poll_max or 1
  if type(pm) ~= "number" or pm < 0.001 then error("worker: poll_max must be >= 0.001 s", 2) end
  local lm = opts.listen_max or 30
  if type(lm) ~= "number" or lm < 0.001 then error("worker: listen_max must be >= 0.001 s", 2) end
  local topic_set = {}
  for _, t in ipairs(topics) do topic_set[t] = true end
  local clock = opts.clock or LOOP_CLOCK
  if type(clock) ~= "table" or type(clock.now) ~= "function" or type(clock.timer) ~= "function" then
    error("worker: clock must be a table with now and timer functions", 2)
  end
  local self = setmetatable({
    jobs = jobs, impl = jobs.impl, topics = topics, queues = queues, concurrency = c,
    poll_max = pm, listen_max = lm, topic_set = topic_set, sub = nil, notified = false,
    log = opts.log, random = opts.random, clock = clock, now = clock.now,
    idle = 0, nrunning = 0, slots = {}, stopping = false, draining = false,
    waiting = nil, slot_wait = false, poller = nil, timer = nil, guard = nil, guard_at = nil,
    stats = { claimed = 0, done = 0, retried = 0, dead = 0, released = 0, timeouts = 0,
      wakes = 0, notified = 0 },
    run_job = M.run_job, observe = opts.observe,
  }, W)
  self.on_wake = function() on_wake(self) end
  self.on_notify = function(topic) on_notify(self, topic) end
  self.on_guard = function() on_guard(self) end
  return self
end

return M
