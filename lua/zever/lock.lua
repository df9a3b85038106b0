-- zever.lock: the front-end of the lock battery: leases on a key, exclusive across worker
-- threads (memory), processes and machines (db, redis, postgres), with fencing tokens.
--
--   local locks = lock.new()                       -- a memory lock table (adapters.lock.memory)
--   locks:try_acquire(key, ttl)         -> lease | nil, err   err.code "busy" when held
--   locks:acquire(key, ttl[, timeout])  -> lease | nil, err   waits up to timeout seconds
--                                                             (default 10); "timeout"
--   locks:holder(key)                   -> fence, ttl_left | false     who holds it now
--   lease:extend([ttl])                 -> true | nil, err   "not_held" once lost
--   lease:unlock()                      -> true | nil, err   "not_held": never steals
--   lease.key, lease.fence, lease.ttl   the key, the fencing token, the lease's length
--   locks:close()                       -> true; every later call returns nil, err ("closed")
--
-- A lease ends when its holder unlocks it or when ttl seconds pass without an extend: a holder
-- that crashes blocks nobody for longer than ttl. The fence is a whole number that grows with
-- every lease granted on a key (memory, redis and postgres: on every key of the table): a
-- resource that remembers the largest fence it saw refuses a write carrying a smaller one, so a
-- holder whose lease ran out while it was paused cannot overwrite the work of the next one
-- (Kleppmann's fencing token). extend and unlock are honest: after the lease expired, or
-- another holder took the key, they return "not_held" and change nothing.
--
-- acquire waits on the one wait primitive (zever.sched): it tries, then sleeps with jittered
-- exponential backoff (1 ms doubling up to max_wait, 50 ms) until it gets the lease or the
-- timeout passes. In a coroutine (a request, a job, zever.sched.spawn) it yields; outside one it
-- runs the loop. The timeout is measured on the monotonic clock even when the adapter has a
-- fake one (specs).
--
-- Keys are strings of at most 1024 bytes: a longer key is an expected failure ("invalid"),
-- since keys often come from requests; a key that is not a string or a ttl that is not a
-- positive number raises. lock.wrap(impl) puts this front-end over an adapter object:
--   impl:acquire(key, ttl)        -> fence, token | false (held) | nil, err
--   impl:extend(key, token, ttl)  -> true | false (not held) | nil, err
--   impl:unlock(key, token)       -> true | false (not held) | nil, err
--   impl:holder(key)              -> fence, ttl_left | false | nil, err
--   impl:close()
-- This module holds no state of its own and must not know any adapter but new()'s default.

local battery = require "zever.battery"
local sched = require "zever.sched"
local sys = require "zever.sys"

local error, setmetatable, random, min = error, setmetatable, math.random, math.min
local check_string, seconds = battery.string, battery.seconds
local now, sleep = sys.now, sched.sleep

local M = {}

M.MAX_KEY = 1024

local Locks = battery.define("lock", "the lock table is closed")
M.error = Locks.error

local CLOSED = Locks.CLOSED
local TOO_LONG = Locks.error("invalid", "the key is longer than 1024 bytes")
local BUSY = Locks.error("busy", "the key is locked by another holder")
local TIMEOUT = Locks.error("timeout", "the key stayed locked for the whole timeout")
local NOT_HELD = Locks.error("not_held", "the lease expired or another holder took the key")

local Lease = {}
Lease.__index = Lease

local function take(self, key, ttl)
  local fence, token = self.impl:acquire(key, ttl)
  if fence == nil then return nil, token end
  if fence == false then
    self.counters.refused = self.counters.refused + 1
    return nil, BUSY
  end
  self.counters.granted = self.counters.granted + 1
  return setmetatable({ key = key, fence = fence, token = token, ttl = ttl, locks = self }, Lease)
end

function Locks:try_acquire(key, ttl)
  check_string(key, "lock:try_acquire", "key")
  ttl = seconds(ttl, nil, "lock:try_acquire", "ttl", true, true)
  if ttl == nil then error("lock:try_acquire: ttl must be a positive number of seconds", 2) end
  if self.closed then return nil, CLOSED end
  if #key > 1024 then return nil, TOO_LONG end
  return take(self, key, ttl)
end

function Locks:acquire(key, ttl, timeout)
  check_string(key, "lock:acquire", "key")
  ttl = seconds(ttl, nil, "lock:acquire", "ttl", true, true)
  if ttl == nil then error("lock:acquire: ttl must be a positive number of seconds", 2) end
  timeout = seconds(timeout, self.timeout, "lock:acquire", "timeout", false, true)
  if self.closed then return nil, CLOSED end
  if #key > 1024 then return nil, TOO_LONG end
  local deadline = now() + timeout
  local wait = 0.001
  while true do
    local lease, err = take(self, key, ttl)
    if lease or err ~= BUSY then return lease, err end
    local left = deadline - now()
    if left <= 0 then return nil, TIMEOUT end
    -- Full jitter over the upper half: contenders that lost together do not retry together.
    sleep(min(wait * (0.5 + random() * 0.5), left))
    if self.closed then return nil, CLOSED end
    wait = min(wait * 2, self.max_wait)
  end
end

function Locks:holder(key)
  check_string(key, "lock:holder", "key")
  if self.closed then return nil, CLOSED end
  if #key > 1024 then return nil, TOO_LONG end
  return self.impl:holder(key)
end

local function settle(ok, err)
  if ok == nil then return nil, err end
  if ok == false then return nil, NOT_HELD end
  return true
end

function Lease:extend(ttl)
  ttl = seconds(ttl, self.ttl, "lease:extend", "ttl", true, true)
  local locks = self.locks
  if locks.closed then return nil, CLOSED end
  local ok, err = settle(locks.impl:extend(self.key, self.token, ttl))
  if ok then self.ttl = ttl end
  return ok, err
end

function Lease:unlock()
  local locks = self.locks
  if locks.closed then return nil, CLOSED end
  return settle(locks.impl:unlock(self.key, self.token))
end

-- opts: timeout (acquire's default wait, 10 s), max_wait (the backoff's cap, 0.05 s).
function M.wrap(impl, opts)
  opts = opts or {}
  return battery.object(Locks, impl, {
    timeout = seconds(opts.timeout, 10, "lock.wrap", "timeout", false, true),
    max_wait = seconds(opts.max_wait, 0.05, "lock.wrap", "max_wait", true, true),
    counters = { granted = 0, refused = 0 },
  })
end

-- A memory lock table: opts as adapters.lock.memory.new, plus wrap's.
function M.new(opts)
  return battery.default(M.wrap, "adapters.lock.memory", "lock.new", opts)
end

return M
