-- zever.jobs: the front-end of the jobs battery: the registry of job handlers, argument checks,
-- dispatch, the retry backoff and the dead-letter hook. `zever worker` (zever.worker) runs them.
--
--   app.jobs:register(name, fn[, { attempts = 3, backoff = { base = "10s", cap = "10m",
--                                   jitter = true }, queue = "default", timeout = "30s" }]) -> jobs
--   app.jobs:dispatch(name[, args[, { delay = s | "5m", queue = "q" }]]) -> id | nil, err
--   app.jobs:dispatch_batch(name, { args, ... }[, opts]) -> { id, ... } | nil, err
--   app.jobs:on_dead_letter(function(record) ... end)                    -> jobs
--   app.jobs:failed([{ limit = n }])   -> { record, ... } (oldest first) | nil, err
--   app.jobs:retry(id | "all")         -> n dispatched again | nil, err
--   app.jobs:forget(id | "all")        -> n removed | nil, err
--   app.jobs:handler(name)             -> the registered entry or nil
--   jobs.backoff(attempt, base, cap, jitter[, random]) -> seconds before retry number `attempt`
--
-- fn(args, job) runs in a coroutine (it may wait: zever.sleep, I/O); job is { id, name, queue,
-- attempt }. A raise or a timeout is a failure: the job comes back after backoff(attempt) until
-- `attempts` tries were made, then it is dead-lettered: a failed_jobs record { id, queue, name,
-- args, error, attempts, failed_at } in the app's database plus the on_dead_letter hook.
-- Args are JSON (a table, a string, a number, a boolean or nil), so the handler gets a copy.
-- Durations are seconds or anything zever.duration reads ("5s", "1h30m", "PT30S").
--
-- jobs.wrap(impl, defaults) puts this front-end (zever.battery: the closed guard, close, stats)
-- over an adapter object (adapters.jobs.queue); jobs.wrap_config(impl, section) does it with
-- the config's jobs section (the registry's way):
--   impl:enqueue(topic, payload_string, delay) -> id | nil, err
--   impl:claim(topic) -> msg | nil[, err];  impl:complete(msg); impl:again(msg, delay);
--   impl:release(msg);  impl:bury(msg, record) -> id | nil, err;  impl:failed(limit) -> rows;
--   impl:retry(id | nil, prefix) -> n;  impl:forget(id | nil) -> n;  impl:close()    (nil: all)
-- A job on queue q is a message on topic "jobs:" .. q whose payload is the JSON text
-- {"name": ..., "args": ...}. This module must not touch the queue or the database itself.

local battery = require "zever.battery"
local json = require "zever.json"
local duration = require "zever.duration"

local type, error, pcall, tostring, format = type, error, pcall, tostring, string.format
local random, floor = math.random, math.floor
local encode = json.encode

local M = {}

M.PREFIX = "jobs:"

local Jobs = battery.define("jobs", "the jobs battery is closed")
M.error = Jobs.error

local CLOSED = Jobs.CLOSED

-- Seconds from a number or a duration string; raises (blaming level) when it is neither.
local function seconds(v, what, level)
  if type(v) == "number" then
    if v ~= v or v < 0 or v == math.huge then
      error(format("jobs: %s must be >= 0 seconds", what), level + 1)
    end
    return v
  end
  if type(v) == "string" then
    local s, err = duration.parse(v)
    if not s then error(format("jobs: %s: %s", what, tostring(err)), level + 1) end
    if s < 0 then error(format("jobs: %s must not be negative", what), level + 1) end
    return s
  end
  error(format("jobs: %s must be seconds or a duration string", what), level + 1)
end
M.seconds = seconds

local function check_queue(q, level)
  if type(q) ~= "string" or q == "" or #q > 200 or q:find("[%s,]") then
    error("jobs: a queue name is a non-empty string without spaces or commas", level + 1)
  end
  return q
end

-- The delay before retry number `attempt` (1 = after the first failure): base * 2^(attempt-1),
-- at most cap; with jitter, a uniform value in [d/2, d] (so retries of a burst spread out but
-- never come sooner than half the schedule). random is math.random unless given (specs).
function M.backoff(attempt, base, cap, jitter, rand)
  local d = base * 2 ^ (attempt - 1)
  if d > cap then d = cap end
  if jitter then d = d / 2 + (rand or random)() * d / 2 end
  return d
end

function Jobs:register(name, fn, opts)
  if type(name) ~= "string" or name == "" then
    error("jobs:register: name must be a non-empty string", 2)
  end
  if type(fn) ~= "function" then error("jobs:register: fn must be a function(args, job)", 2) end
  battery.opt_table(opts, "jobs:register", "opts")
  opts = opts or {}
  local d = self.defaults
  local attempts = opts.attempts or d.attempts
  if type(attempts) ~= "number" or attempts < 1 or attempts % 1 ~= 0 then
    error("jobs:register: attempts must be an integer >= 1", 2)
  end
  local b = opts.backoff or {}
  if type(b) ~= "table" then error("jobs:register: backoff must be a table", 2) end
  local base = b.base ~= nil and seconds(b.base, "backoff.base", 2) or d.base
  local cap = b.cap ~= nil and seconds(b.cap, "backoff.cap", 2) or math.max(d.cap, base)
  if cap < base then error("jobs:register: backoff.cap must be >= backoff.base", 2) end
  local jitter = d.jitter
  if b.jitter ~= nil then jitter = b.jitter and true or false end
  local timeout = opts.timeout ~= nil and seconds(opts.timeout, "timeout", 2) or d.timeout
  if timeout <= 0 then error("jobs:register: timeout must be > 0", 2) end
  local q = opts.queue ~= nil and check_queue(opts.queue, 2) or d.queue
  self.registry[name] = { name = name, fn = fn, attempts = attempts, base = base, cap = cap,
    jitter = jitter, timeout = timeout, queue = q, topic = M.PREFIX .. q }
  return self
end

function Jobs:handler(name)
  return self.registry[name]
end

local ARGS = { table = true, string = true, number = true, boolean = true, ["nil"] = true }

function Jobs:dispatch(name, args, opts)
  if type(name) ~= "string" or name == "" then
    error("jobs:dispatch: name must be a non-empty string", 2)
  end
  if not ARGS[type(args)] then error("jobs:dispatch: args must be JSON (a table or a scalar)", 2) end
  local delay, q = 0, nil
  if opts ~= nil then
    if type(opts) ~= "table" then error("jobs:dispatch: opts must be a table", 2) end
    if opts.delay ~= nil then delay = seconds(opts.delay, "delay", 2) end
    if opts.queue ~= nil then q = check_queue(opts.queue, 2) end
  end
  -- Once the app registered jobs in this process, a name it did not register is a typo: fail
  -- here, naming the closest registered job, not in a worker that dead-letters it later.
  if self.registry[name] == nil and next(self.registry) ~= nil then
    local names = {}
    for n in pairs(self.registry) do names[#names + 1] = n end
    table.sort(names)
    local best = require("zever.text").closest(name, names)
    error(format('jobs:dispatch: no job named "%s" is registered%s', name,
      best and format('; did you mean "%s"?', best) or format(" (registered: %s)",
      table.concat(names, ", "))), 2)
  end
  -- The dispatching span's traceparent rides along (zever.trace), when tracing is loaded.
  local trace = package.loaded["zever.trace"]
  local ok, payload = pcall(encode, { name = name, args = args,
    traceparent = trace and trace.context() or nil })
  if not ok then error("jobs:dispatch: args are not JSON-encodable: " .. tostring(payload), 2) end
  if self.closed then return nil, CLOSED end
  local topic
  if q then
    topic = M.PREFIX .. q
  else
    local entry = self.registry[name]
    topic = entry and entry.topic or self.default_topic
  end
  return self.impl:enqueue(topic, payload, delay)
end

-- jobs:dispatch_batch(name, { args, ... }[, opts]) -> { id, ... } | nil, err: one job per args
-- of the list (opts as dispatch's, for all). With the db queue all or none, in one round trip
-- on PostgreSQL (queue:push_batch); elsewhere one dispatch after the other.
function Jobs:dispatch_batch(name, list, opts)
  if type(list) ~= "table" then error("jobs:dispatch_batch: expects a list of args", 2) end
  local impl = self.impl
  if not impl.enqueue_batch or #list == 0 then
    local ids = {}
    for i = 1, #list do
      local id, err = self:dispatch(name, list[i], opts)
      if not id then return nil, err end
      ids[i] = id
    end
    return ids
  end
  -- The checks and the topic of dispatch, through dispatch itself with a capturing impl.
  local payloads, topic, delay = {}, nil, nil
  self.impl = { enqueue = function(_, t, payload, d)
    topic, delay = t, d
    payloads[#payloads + 1] = payload
    return true
  end }
  local ok, err = pcall(function()
    for i = 1, #list do self:dispatch(name, list[i], opts) end
  end)
  self.impl = impl
  if not ok then error(err, 2) end
  if self.closed then return nil, CLOSED end
  return impl:enqueue_batch(topic, payloads, delay)
end

function Jobs:on_dead_letter(fn)
  if type(fn) ~= "function" then error("jobs:on_dead_letter: expects a function(record)", 2) end
  self.dead_letter_hook = fn
  return self
end

function Jobs:failed(opts)
  battery.opt_table(opts, "jobs:failed", "opts")
  local limit = opts and opts.limit
  if limit ~= nil and (type(limit) ~= "number" or limit < 1) then
    error("jobs:failed: limit must be a number >= 1", 2)
  end
  if self.closed then return nil, CLOSED end
  return self.impl:failed(limit and floor(limit) or nil)
end

local function target(id, what)
  if id == "all" then return nil end
  if type(id) ~= "number" or id < 1 or id % 1 ~= 0 then
    error("jobs:" .. what .. ": expects a failed job id or \"all\"", 3)
  end
  return id
end

-- Dispatches failed jobs again (attempts start over) and removes their records; with the db
-- queue both happen in one transaction. Returns how many were dispatched.
function Jobs:retry(id)
  id = target(id, "retry")
  if self.closed then return nil, CLOSED end
  return self.impl:retry(id, M.PREFIX)
end

function Jobs:forget(id)
  id = target(id, "forget")
  if self.closed then return nil, CLOSED end
  return self.impl:forget(id)
end

-- defaults: { queue, attempts, base, cap, jitter, timeout } (seconds; the config's jobs section
-- after conversion by the adapter).
function M.wrap(impl, defaults)
  if type(impl) ~= "table" then error("jobs.wrap: expects an adapter object", 2) end
  defaults = defaults or {}
  local d = {
    queue = check_queue(defaults.queue or "default", 2),
    attempts = defaults.attempts or 3,
    base = defaults.base or 10,
    cap = defaults.cap or 600,
    jitter = defaults.jitter ~= false,
    timeout = defaults.timeout or 30,
  }
  if d.cap < d.base then d.cap = d.base end
  return battery.object(Jobs, impl, { defaults = d, registry = {},
    default_topic = M.PREFIX .. d.queue, dead_letter_hook = nil })
end

-- The registry's wrap: section is the config's jobs section; a timeout of 0 means the queue's
-- visibility timeout.
function M.wrap_config(impl, section)
  local q = impl.queue
  return M.wrap(impl, {
    queue = section.queue, attempts = section.attempts, base = section.backoff_base,
    cap = section.backoff_cap, jitter = section.backoff_jitter,
    timeout = (section.timeout and section.timeout > 0) and section.timeout
      or (q and q.visibility or 30),
  })
end

M.Jobs = Jobs
return M
