-- zever.resilience: retries with jittered backoff, bulkheads and timeouts, to compose with each
-- other and with zever.breaker around any call (the resilience battery's other half).
--
--   local resilience = require "zever.resilience"
--   resilience.retry(fn, opts, ...)    -> fn(...)'s results | nil, err (the last failure)
--       opts: attempts (3), base (0.05 s), cap (2 s), jitter ("full" | "none"),
--             retry_if(err) -> boolean (default: every failure), sleep (zever.sched.sleep),
--             random (math.random; specs inject both)
--   local bh = resilience.bulkhead{ max = 10, queue = 0, wait = 0, name = "payments" }
--   bh:call(fn, ...)                   -> fn(...)'s results | nil, err (code "full")
--   bh:stats()                         -> { active, waiting, rejected }
--   resilience.timeout(seconds, fn, ...) -> fn(...)'s results | nil, err (code "timeout")
--
-- A failure is what zever.breaker counts: fn raises, or returns nil, err. retry runs fn up to
-- `attempts` times, sleeping between tries min(cap, base * 2^(n-1)), times a uniform random
-- number in [0, 1) with full jitter (AWS's "full jitter": retries of many callers spread out
-- instead of arriving together); it returns the last nil, err, or raises the last error raised.
--
-- A bulkhead lets at most `max` calls run at once; a call over that waits, when `queue` > 0 and
-- fewer than `queue` calls wait already, up to `wait` seconds (0: as long as it takes), for a
-- running call to end (first come, first served), and is refused with code "full" otherwise.
-- It is per Lua state (one worker of `zever serve`).
--
-- timeout runs fn in a coroutine of its own and waits for it up to `seconds`; past that it
-- returns nil, err (code "timeout") and fn goes on running to its end, its results dropped
-- (Lua cannot cancel a coroutine from outside: give fn its own timeouts where it waits on
-- I/O, as the HTTP client and the database adapters have). A raise in fn is raised again.
--
-- Composition, outermost first: retry, then the breaker, then the bulkhead, then the timeout:
--
--   resilience.retry(function()
--     return cb:call(bh.call, bh, resilience.timeout, 2, fetch, url)
--   end, { attempts = 3, retry_if = function(err) return err.code ~= "open" end })

local errors = require "zever.errors"
local sched = require "zever.sched"
local loop = require "zever.loop"

local type, error, pcall, select, setmetatable, unpack, min, random =
  type, error, pcall, select, setmetatable, unpack, math.min, math.random

local M = {}

local function fail(code, message, fields)
  return errors.new("resilience", code, message, fields)
end

local function opt_number(v, default, what, fname)
  if v == nil then return default end
  if type(v) ~= "number" or v ~= v or v < 0 then
    error(fname .. ": " .. what .. " must be a number >= 0", 3)
  end
  return v
end

-- The outcome of pcall(fn, ...) as retry sees it: ok (no failure), and the packed results.
local function pack(ok, ...)
  return ok, { n = select("#", ...), ... }
end

function M.retry(fn, opts, ...)
  if type(fn) ~= "function" then error("resilience.retry: fn must be a function", 2) end
  if opts ~= nil and type(opts) ~= "table" then
    error("resilience.retry: opts must be a table", 2)
  end
  opts = opts or {}
  local attempts = opts.attempts or 3
  if type(attempts) ~= "number" or attempts < 1 or attempts % 1 ~= 0 then
    error("resilience.retry: attempts must be a whole number >= 1", 2)
  end
  local base = opt_number(opts.base, 0.05, "base", "resilience.retry")
  local cap = opt_number(opts.cap, 2, "cap", "resilience.retry")
  local jitter = opts.jitter or "full"
  if jitter ~= "full" and jitter ~= "none" then
    error('resilience.retry: jitter must be "full" or "none"', 2)
  end
  local retry_if, sleep, rnd = opts.retry_if, opts.sleep or sched.sleep, opts.random or random
  for n = 1, attempts do
    local ok, r = pack(pcall(fn, ...))
    local failed_value = ok and r[1] == nil and r.n > 1
    if ok and not failed_value then return unpack(r, 1, r.n) end
    local err = ok and r[2] or r[1]
    if n == attempts or (retry_if and not retry_if(err)) then
      if not ok then error(err, 0) end
      return unpack(r, 1, r.n)
    end
    local delay = min(cap, base * 2 ^ (n - 1))
    if jitter == "full" then delay = delay * rnd() end
    if delay > 0 then sleep(delay) end
  end
end

local Bulkhead = {}
Bulkhead.__index = Bulkhead

-- Wakes the first waiter still waiting, handing it the slot of the call that ended.
local function hand_over(self)
  local q = self.waiters
  while self.head <= self.tail do
    local w = q[self.head]
    q[self.head] = nil
    self.head = self.head + 1
    if not w.done then
      w.done = true
      if w.timer then w.timer:stop() end
      self.waiting = self.waiting - 1
      sched.complete(w.token, true)
      return true
    end
  end
  return false
end

local function leave(self, ok, ...)
  if not hand_over(self) then self.active = self.active - 1 end
  if not ok then error((...), 0) end
  return ...
end

function Bulkhead:call(fn, ...)
  if type(fn) ~= "function" then error("bulkhead:call: fn must be a function", 2) end
  if self.active >= self.max then
    if self.waiting >= self.queue then
      self.rejected = self.rejected + 1
      return nil, fail("full", "the bulkhead '" .. self.name .. "' is full (" .. self.max ..
        " calls running)")
    end
    local w = { token = sched.token(), done = false }
    self.tail = self.tail + 1
    self.waiters[self.tail] = w
    self.waiting = self.waiting + 1
    if self.wait > 0 then
      w.timer = loop.after(self.wait, function()
        if w.done then return end
        w.done = true
        self.waiting = self.waiting - 1
        sched.complete(w.token, false)
      end)
    end
    if not sched.await(w.token) then
      self.rejected = self.rejected + 1
      return nil, fail("full", "the bulkhead '" .. self.name .. "' stayed full for " ..
        self.wait .. " s")
    end
    -- The call that ended handed its slot over: active is unchanged.
  else
    self.active = self.active + 1
  end
  return leave(self, pcall(fn, ...))
end

function Bulkhead:stats()
  return { active = self.active, waiting = self.waiting, rejected = self.rejected }
end

function M.bulkhead(opts)
  if type(opts) ~= "table" then error("resilience.bulkhead: expects an options table", 2) end
  local max = opts.max
  if type(max) ~= "number" or max < 1 or max % 1 ~= 0 then
    error("resilience.bulkhead: max must be a whole number >= 1", 2)
  end
  local queue = opts.queue or 0
  if type(queue) ~= "number" or queue < 0 or queue % 1 ~= 0 then
    error("resilience.bulkhead: queue must be a whole number >= 0", 2)
  end
  local name = opts.name or "bulkhead"
  if type(name) ~= "string" then error("resilience.bulkhead: name must be a string", 2) end
  return setmetatable({ name = name, max = max, queue = queue,
    wait = opt_number(opts.wait, 0, "wait", "resilience.bulkhead"), active = 0, waiting = 0,
    rejected = 0, waiters = {}, head = 1, tail = 0 }, Bulkhead)
end

function M.timeout(seconds, fn, ...)
  if type(seconds) ~= "number" or seconds ~= seconds or seconds <= 0 then
    error("resilience.timeout: seconds must be a number > 0", 2)
  end
  if type(fn) ~= "function" then error("resilience.timeout: fn must be a function", 2) end
  local st = { done = false, token = false, r = false }
  local args = { n = select("#", ...), ... }
  sched.spawn(function()
    local ok, r = pack(pcall(fn, unpack(args, 1, args.n)))
    if st.done then return end
    st.done, st.ok, st.r = true, ok, r
    if st.token then
      st.timer:stop()
      sched.complete(st.token, true)
    end
  end)
  if not st.done then
    -- fn waits: the first of its end and the timer completes the token.
    st.token = sched.token()
    st.timer = loop.after(seconds, function()
      if st.done then return end
      st.done = true
      sched.complete(st.token, false)
    end)
    if not sched.await(st.token) then
      return nil, fail("timeout", "the call did not finish within " .. seconds .. " s")
    end
  end
  if not st.ok then error(st.r[1], 0) end
  return unpack(st.r, 1, st.r.n)
end

return M
