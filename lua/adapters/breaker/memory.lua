-- adapters.breaker.memory: breakers kept in one Lua state (one worker of `zever serve`): each
-- worker trips on what it saw itself. The state machine is zever.breaker's contract (see its
-- header); host/breaker/breaker.c is the same machine in C for the inproc adapter, and the
-- conformance suite (spec/conformance/breaker.lua) holds both to it.
--
--   impl:open(name, cfg, clock) -> handle     cfg: failure_rate, slow_rate, slow_call (seconds
--                                             or false), window, min_calls, open_for,
--                                             half_open_calls (checked by the front-end);
--                                             clock: a function returning seconds
--   handle:allow()              -> 0 (go) | 1, retry_after (open) | 2 (half open, trials taken)
--   handle:record(failed, took) -> state (0 closed, 1 open, 2 half open); took in seconds or nil
--   handle:stats()              -> { state, calls, failures, slow, rejected, opened, retry_after }
--   handle:reset()              closed, with an empty window
--   impl:stats() -> { breakers } ;  impl:close() ;  memory.open(section) -> impl

local setmetatable, pairs = setmetatable, pairs
local monotonic = require("zever.sys").now   -- read only while open or half open

local M = {}

local CLOSED, OPEN, HALF = 0, 1, 2

local H = {}
H.__index = H

local function reset_window(h)
  local outcomes = h.outcomes
  for i = 1, h.window do outcomes[i] = 0 end
  h.pos, h.calls, h.failures, h.slow = 0, 0, 0, 0
end

local function trip(h, now)
  h.st = OPEN
  h.until_t = now + h.open_for
  h.opened = h.opened + 1
  h.trials, h.trial_ok = 0, 0
end

-- Outcomes: 0 none, 1 ok, 2 failed, 3 slow, 4 failed and slow (bit-free arithmetic).
local function push(h, failed, slow)
  local pos = h.pos % h.window + 1
  h.pos = pos
  local old = h.outcomes[pos]
  if old ~= 0 then
    h.calls = h.calls - 1
    if old == 2 or old == 4 then h.failures = h.failures - 1 end
    if old == 3 or old == 4 then h.slow = h.slow - 1 end
  end
  h.outcomes[pos] = failed and (slow and 4 or 2) or (slow and 3 or 1)
  h.calls = h.calls + 1
  if failed then h.failures = h.failures + 1 end
  if slow then h.slow = h.slow + 1 end
end

function H:allow()
  local st = self.st
  if st == CLOSED then return 0 end
  if st == OPEN then
    local now = self.clock()
    if now < self.until_t then
      self.rejected = self.rejected + 1
      return 1, self.until_t - now
    end
    self.st = HALF
    self.trials, self.trial_ok = 0, 0
  end
  if self.trials >= self.half_open_calls then
    self.rejected = self.rejected + 1
    return 2, 0
  end
  self.trials = self.trials + 1
  return 0
end

function H:record(failed, took)
  local slow_call = self.slow_call
  local slow = slow_call and took and took >= slow_call or false
  local st = self.st
  if st == HALF then
    if failed or slow then
      trip(self, self.clock())
    else
      self.trial_ok = self.trial_ok + 1
      if self.trial_ok >= self.half_open_calls then
        self.st = CLOSED
        reset_window(self)
      end
    end
  elseif st == CLOSED then
    push(self, failed, slow)
    local calls = self.calls
    if calls >= self.min_calls and (self.failures >= self.failure_rate * calls
        or self.slow >= self.slow_rate * calls) then
      trip(self, self.clock())
    end
  end
  return self.st
end

function H:stats()
  local st, retry = self.st, 0
  if st == OPEN then
    local now = self.clock()
    if now >= self.until_t then st = HALF else retry = self.until_t - now end
  end
  return { state = st, calls = self.calls, failures = self.failures, slow = self.slow,
    rejected = self.rejected, opened = self.opened, retry_after = retry }
end

function H:reset()
  self.st = CLOSED
  self.trials, self.trial_ok = 0, 0
  reset_window(self)
end

local Memory = {}
Memory.__index = Memory

function Memory:open(name, cfg, clock)
  local h = self.by_name[name]
  if h then return h end
  h = setmetatable({ clock = clock or monotonic, st = CLOSED, failure_rate = cfg.failure_rate,
    slow_rate = cfg.slow_rate, slow_call = cfg.slow_call, window = cfg.window,
    min_calls = cfg.min_calls, open_for = cfg.open_for, half_open_calls = cfg.half_open_calls,
    outcomes = {}, pos = 0, calls = 0, failures = 0, slow = 0, until_t = 0, rejected = 0,
    opened = 0, trials = 0, trial_ok = 0 }, H)
  reset_window(h)
  self.by_name[name] = h
  return h
end

function Memory:stats()
  local n = 0
  for _ in pairs(self.by_name) do n = n + 1 end
  return { breakers = n }
end

function Memory:close()
  self.by_name = {}
  return true
end

function M.new()
  return setmetatable({ by_name = {} }, Memory)
end

function M.open()
  return M.new()
end

return M
