-- zever.breaker: circuit breakers (the resilience battery): stop calling an upstream that
-- keeps failing or answering slowly, give it time, then let a few trial calls decide.
--
--   local breakers = breaker.new()                       -- memory: one table per worker
--   local cb = breakers:get("payments", { failure_rate = 0.5, slow_rate = 1, slow_call = 2,
--                                         window = 20, min_calls = 10, open_for = 30,
--                                         half_open_calls = 3 })
--   local ok, a, b = cb:call(fn, ...)   -> true, fn's results | nil, err
--   cb:allow() -> true | nil, err ; cb:record(ok[, seconds])   the guard by hand
--   cb:state() -> "closed" | "open" | "half_open" ;  cb:stats() -> { state, calls, failures,
--                                                    slow, rejected, opened }
--   cb:reset()                            back to closed with an empty window
--
-- States (Resilience4j's, which the Go framework follows): CLOSED counts the outcomes of the
-- last `window` calls; once it holds at least min_calls and the share of failures reaches
-- failure_rate, or the share of calls slower than slow_call seconds (when set) reaches slow_rate,
-- it turns
-- OPEN. OPEN refuses every call at once (err.code "open", err.retry_after in seconds) for
-- open_for seconds, then turns HALF_OPEN: up to half_open_calls trial calls go through (others
-- are refused); when all of them succeed (and are not slow) it is CLOSED again with an empty
-- window, and the first failing one sends it back to OPEN.
--
-- call(fn, ...) runs fn in protected mode: an error raised by fn, or a result of nil, err (the
-- framework's expected failure), counts as a failure; the raise is re-raised after counting,
-- the nil, err returned. Time comes from opts.clock (a function returning seconds; specs) or the
-- monotonic clock. Breakers are named: get(name) returns the same breaker for a name (its
-- options are those of the first get). The state machine lives in the adapter: memory keeps
-- C breakers private to one Lua state (one worker of `zever serve`: each worker trips on what
-- it saw itself), inproc the same breakers shared by every worker thread (host/breaker/),
-- redis on a server shared by processes (cb:stats().errors counts the calls it could not reach).

local ffi = require "ffi"
local battery = require "zever.battery"

local type, error, pcall, select, setmetatable, tonumber = type, error, pcall, select,
  setmetatable, tonumber

require "zever.cdef.libc"

-- The monotonic clock through the FFI: a guard reads it twice per call, and the classic
-- binding's sys.now would keep the caller's loop from being compiled.
local C = ffi.C
local ts = ffi.new("struct timespec")
local function monotonic()
  C.clock_gettime(1, ts)   -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end


local M = {}

local Breakers = battery.define("breaker", "the breakers are closed")
M.error = Breakers.error

local CLOSED_ERR = Breakers.CLOSED

local CB = {}
CB.__index = CB

-- The adapter's handle speaks numbers (see adapters/breaker/memory.lua); users see names.
local STATE = { [0] = "closed", [1] = "open", [2] = "half_open" }

function CB:allow()
  if self.owner.closed then return nil, CLOSED_ERR end
  local rc, retry = self.h:allow()
  if rc == 0 then return true end
  if rc == 1 then
    return nil, Breakers.error("open", "the circuit '" .. self.name .. "' is open",
      { retry_after = retry })
  end
  return nil, Breakers.error("open", "the circuit '" .. self.name .. "' is half open and its "
    .. "trial calls are taken", { retry_after = 0 })
end

-- Records one call's outcome: ok (boolean) and how long it took (seconds, optional).
function CB:record(ok, seconds)
  self.h:record(not ok, seconds)
end

local function finish(self, t0, ok, a, ...)
  local took = t0 and self.clock() - t0 or nil
  if not ok then
    self.h:record(true, took)
    error(a, 0)
  end
  self.h:record(a == nil and select("#", ...) > 0, took)
  return a, ...
end

function CB:call(fn, ...)
  if type(fn) ~= "function" then error("breaker:call: fn must be a function", 2) end
  local ok, err = self:allow()
  if not ok then return nil, err end
  -- The clock is read only when slow calls count (a read costs as much as the whole guard).
  return finish(self, self.slow_call and self.clock() or false, pcall(fn, ...))
end

function CB:state()
  return STATE[self.h:stats().state]
end

function CB:stats()
  local s = self.h:stats()
  return { state = STATE[s.state], calls = s.calls, failures = s.failures, slow = s.slow,
    rejected = s.rejected, opened = s.opened, errors = s.errors }
end

function CB:reset()
  self.h:reset()
end

local function rate(v, default, what)
  if v == nil then return default end
  if type(v) ~= "number" or not (v > 0 and v <= 1) then
    error("breakers:get: " .. what .. " must be a number in (0, 1]", 3)
  end
  return v
end

function Breakers:get(name, opts)
  battery.string(name, "breakers:get", "name")
  battery.opt_table(opts, "breakers:get", "opts")
  if self.closed then return nil, CLOSED_ERR end
  local cb = self.by_name[name]
  if cb then return cb end
  opts = opts or {}
  local d = self.defaults
  local cfg = {
    failure_rate = rate(opts.failure_rate, d.failure_rate, "failure_rate"),
    slow_rate = rate(opts.slow_rate, d.slow_rate, "slow_rate"),
    slow_call = battery.seconds(opts.slow_call, d.slow_call, "breakers:get", "slow_call") or false,
    window = battery.count(opts.window, d.window, "breakers:get", "window", 1),
    min_calls = battery.count(opts.min_calls, d.min_calls, "breakers:get", "min_calls", 1),
    open_for = battery.seconds(opts.open_for, d.open_for, "breakers:get", "open_for", false, true),
    half_open_calls = battery.count(opts.half_open_calls, d.half_open_calls, "breakers:get",
      "half_open_calls", 1),
  }
  if cfg.slow_call == 0 then cfg.slow_call = false end
  local h, err = self.impl:open(name, cfg, self.fake_clock)
  if not h then return nil, err end
  cb = setmetatable({ name = name, owner = self, h = h, clock = self.clock,
    slow_call = cfg.slow_call }, CB)
  self.by_name[name] = cb
  return cb
end

-- opts: clock, and the defaults of get's options: failure_rate (0.5), slow_rate (1),
-- slow_call (none: slow calls are not counted; 0 too), window (20), min_calls (10), open_for
-- (30 s), half_open_calls (3).
function M.wrap(impl, opts)
  opts = opts or {}
  if opts.clock ~= nil and type(opts.clock) ~= "function" then
    error("breaker.wrap: clock must be a function", 2)
  end
  return battery.object(Breakers, impl, {
    clock = opts.clock or monotonic, fake_clock = opts.clock, by_name = {},
    defaults = {
      failure_rate = opts.failure_rate or 0.5, slow_rate = opts.slow_rate or 1,
      slow_call = opts.slow_call ~= 0 and opts.slow_call or nil, window = opts.window or 20,
      min_calls = opts.min_calls or 10, open_for = opts.open_for or 30,
      half_open_calls = opts.half_open_calls or 3,
    },
  })
end

function M.new(opts)
  return battery.default(M.wrap, "adapters.breaker.memory", "breaker.new", opts)
end

return M
