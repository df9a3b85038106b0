-- zever.scheduler: the front-end of the scheduler battery: cron and every() entries, their next
-- fire times, and the tick that dispatches due slots through app.jobs, once per slot across all
-- processes (the lock adapter decides who wins a slot).
--
--   app.scheduler:cron(spec, job[, args])       -> scheduler   spec: 5 fields or @hourly-style
--   app.scheduler:every(duration, job[, args])  -> scheduler   "30s", "5m", 90 (seconds, >= 1)
--   app.scheduler:list([now])   -> { { kind, spec, job, args, next }, ... } in registration order
--   app.scheduler:tick([now])   -> how many slots this process won and dispatched
--   app.scheduler:start(opts)   starts a loop timer that ticks (zever worker calls it)
--   app.scheduler:stop()        stops it;   app.scheduler:close()
--   scheduler.new(lock, { jobs = fn -> app.jobs, log = fn(level, msg, fields), clock = fn,
--                         horizon = seconds, tick = seconds })
--
-- Slots. A cron entry's slots are the minutes its spec matches (UTC); an every(d) entry's slots
-- are the multiples of d seconds since the Unix epoch, so every process computes the same slot
-- times without talking to the others. A slot at time s is due once the wall clock reaches s.
-- The tick dispatches `app.jobs:dispatch(job, args)` for a due slot only after
-- lock:acquire(entry.key .. "@" .. s) returned true: with a shared lock (the db adapter on one
-- database) one process wins each slot.
--
-- Missed slots are skipped, never replayed: a worker starts from its own start time (it does
-- not fire a backlog of the time it was down), and a tick that comes late (a long blocking job,
-- a suspended machine) fires only the latest due slot of each entry and logs how many it
-- skipped. The job itself runs in `zever worker`, with the jobs battery's retries. This module
-- must not know the lock's storage (the adapters do) nor run job handlers (zever.worker does).

local battery = require "zever.battery"
local cron = require "zever.cron"
local duration = require "zever.duration"
local sys = require "zever.sys"

local type, error, tostring, pcall, ipairs, format, floor = type, error, tostring, pcall, ipairs,
  string.format, math.floor

local M = {}

local S = battery.define("scheduler", "the scheduler is closed")
M.error = S.error

-- The wall clock in seconds (CLOCK_REALTIME): slots are wall-clock times shared by processes.
local wall = sys.wall

local function check_job(job, args, what)
  if type(job) ~= "string" or job == "" then
    error(format("scheduler:%s: job must be a non-empty string (a job name)", what), 3)
  end
  local t = type(args)
  if t ~= "nil" and t ~= "table" and t ~= "string" and t ~= "number" and t ~= "boolean" then
    error(format("scheduler:%s: args must be JSON (a table, string, number, boolean or nil)",
      what), 3)
  end
end

local function add(self, entry)
  if self.closed then error("scheduler: closed", 3) end
  local list = self.entries
  entry.key = format("%s|%s|%s", entry.job, entry.kind, entry.spec)
  for _, e in ipairs(list) do
    if e.key == entry.key then
      error(format("scheduler: %s %q for job %q is registered twice", entry.kind, entry.spec,
        entry.job), 3)
    end
  end
  list[#list + 1] = entry
  if self.timer then entry.next_at = entry.next_after(self.clock()) end
  return self
end

function S:cron(spec, job, args)
  if type(spec) ~= "string" then error("scheduler:cron: spec must be a string", 2) end
  check_job(job, args, "cron")
  local sched, err = cron.parse(spec)
  if not sched then error(format("scheduler:cron: %q: %s", spec, err), 2) end
  local text = spec:gsub("^%s+", ""):gsub("%s+$", ""):gsub("%s+", " ")
  return add(self, { kind = "cron", spec = text, job = job, args = args,
    next_after = function(t)
      local n = sched:next(t)
      return n or math.huge
    end })
end

function S:every(d, job, args)
  local secs
  if type(d) == "number" then
    secs = d
  elseif type(d) == "string" then
    local s, err = duration.parse(d)
    if not s then error(format("scheduler:every: %s", tostring(err)), 2) end
    secs = s
  else
    error("scheduler:every: duration must be seconds or a duration string", 2)
  end
  if secs ~= secs or secs < 1 or secs % 1 ~= 0 then
    error("scheduler:every: the interval must be a whole number of seconds >= 1", 2)
  end
  check_job(job, args, "every")
  local spec = type(d) == "string" and d or format("%ds", secs)
  return add(self, { kind = "every", spec = spec, job = job, args = args, interval = secs,
    next_after = function(t) return (floor(t / secs) + 1) * secs end })
end

-- Entries with their next fire time after now (the wall clock unless given).
function S:list(now)
  now = now or self.clock()
  local out = require("zever.json").array() -- [] when nothing is scheduled
  for i, e in ipairs(self.entries) do
    out[i] = { kind = e.kind, spec = e.spec, job = e.job, args = e.args,
      next = e.next_at or e.next_after(now) }
  end
  return out
end

local function log(self, level, msg, fields)
  if self.log then pcall(self.log, level, msg, fields) end
end

-- Fires the due slots at `now`: for each entry whose next slot has come, counts the slots it
-- missed, tries to win the latest one through the lock and dispatches the job if it won.
-- Returns how many jobs were dispatched. An entry seen for the first time starts after now.
function S:tick(now)
  now = now or self.clock()
  local fired = 0
  for _, e in ipairs(self.entries) do
    local at = e.next_at
    if not at then
      e.next_at = e.next_after(now)
    elseif now >= at then
      -- The latest due slot, and how many earlier ones this process slept through.
      local slot, skipped = at, 0
      local n = e.next_after(slot)
      while n <= now do
        slot, skipped = n, skipped + 1
        if skipped > 100000 then   -- a very long suspension: jump, do not walk every slot
          slot = e.kind == "every" and floor(now / e.interval) * e.interval or slot
          break
        end
        n = e.next_after(slot)
      end
      e.next_at = e.next_after(slot)
      if skipped > 0 then
        log(self, "warn", "scheduler: skipped missed slots", { job = e.job, spec = e.spec,
          skipped = skipped })
      end
      local won, err = self.lock:acquire(format("%s@%d", e.key, slot), slot, self.horizon)
      if won then
        local jobs, jerr = self.jobs()
        local id, derr
        if jobs then id, derr = jobs:dispatch(e.job, e.args) end
        if id then
          fired = fired + 1
          self.counters.fired = self.counters.fired + 1
        else
          log(self, "error", "scheduler: dispatch failed", { job = e.job, slot = slot,
            error = tostring(derr or jerr) })
        end
      elseif err then
        log(self, "error", "scheduler: lock failed", { job = e.job, slot = slot,
          error = tostring(err) })
      else
        self.counters.lost = self.counters.lost + 1
      end
    end
  end
  return fired
end

-- Starts ticking on this thread's loop: every opts.tick seconds (default: the config's
-- scheduler.tick). Entries start from now: slots before the start are never fired.
function S:start(opts)
  if self.timer then error("scheduler:start: already started", 2) end
  opts = opts or {}
  if opts.log then self.log = opts.log end
  local now = self.clock()
  for _, e in ipairs(self.entries) do e.next_at = e.next_after(now) end
  local loop = require "zever.loop"
  local sched = require "zever.sched"
  local busy = false
  -- A tick may wait (a Redis lock, a queue push): it runs in a coroutine; one at a time.
  local function run()
    local ok, err = pcall(self.tick, self)
    busy = false
    if not ok then log(self, "error", "scheduler: tick failed", { error = tostring(err) }) end
  end
  self.timer = loop.every(opts.tick or self.tick_every, function()
    if busy then return end
    busy = true
    sched.spawn(run)
  end)
  return self
end

function S:stop()
  if self.timer then
    self.timer:stop()
    self.timer = nil
  end
end

-- Stops ticking, then closes the lock (zever.battery's idempotent close); always true.
local close = S.close
function S:close()
  self:stop()
  close(self)
  return true
end

-- lock: { acquire = function(self, key, slot, horizon) -> true | false | nil, err, close }.
function M.new(lock, opts)
  if type(lock) ~= "table" or type(lock.acquire) ~= "function" then
    error("scheduler.new: expects a lock adapter with acquire(key, slot, horizon)", 2)
  end
  opts = opts or {}
  local jobs = opts.jobs or function() return nil, M.error("unavailable", "no jobs battery") end
  if type(jobs) ~= "function" then error("scheduler.new: jobs must be a function", 2) end
  return battery.object(S, lock, {
    lock = lock, jobs = jobs, log = opts.log, clock = opts.clock or wall,
    horizon = opts.horizon or 86400, tick_every = opts.tick or 0.1,
    entries = {}, counters = { fired = 0, lost = 0 }, timer = nil,
  })
end

-- The container's factory, with the lock made by an adapter: section is the scheduler config.
function M.open(section, ctx, lock)
  if section.timezone ~= "UTC" then
    return nil, M.error("invalid", 'scheduler: timezone "' .. tostring(section.timezone)
      .. '" is not supported in this version (only UTC)')
  end
  return M.new(lock, {
    jobs = function() return ctx:get("jobs") end,
    horizon = section.horizon, tick = section.tick,
  })
end

-- The registry's wrap: lock is what a scheduler adapter's open returned.
function M.wrap_config(lock, section, ctx)
  return M.open(section, ctx, lock)
end

return M
