-- adapters.breaker.inproc: breakers in process-wide C memory (host/breaker/), shared by every
-- worker thread of one `zever serve` that opens the same adapter name: one worker's failures
-- open the circuit for all of them. Not shared across processes (use redis for that).
--
--   local impl = inproc.new{ name = "default" }
--   impl:open(name, cfg, clock) -> handle | nil, err   (the memory adapter's contract: see
--                                  adapters/breaker/memory.lua; the first open of a name in
--                                  the process fixes its options)
--   impl:close()                   releases this state's references
--   inproc.open(section)        -> impl (the adapter contract)
--
-- allow and record call the core through LuaJIT's FFI (host/breaker/breaker_ffi.h: one C call,
-- no allocation; allow on a closed breaker is one atomic load); clock (specs) is a function
-- returning seconds; without it the core reads CLOCK_MONOTONIC.

local ffi = require "ffi"
local core = require "zever.breaker_core"
local errors = require "zever.errors"

local setmetatable, pairs, tonumber = setmetatable, pairs, tonumber

require "zever.cdef.breaker"

local C = ffi.C
local c_allow, c_record = C.zv_breaker_allow, C.zv_breaker_record
local breaker_ptr = ffi.typeof("zv_breaker_t *")

local M = {}

local H = {}
H.__index = H

-- A fake clock's seconds in nanoseconds, plus one: 0 would tell the core to read its own clock.
local function now_ns(h)
  local clock = h.clock
  return clock and clock() * 1e9 + 1 or 0
end

function H:allow()
  local rc = c_allow(self.ptr, now_ns(self), self.out)
  if rc == 0 then return 0 end
  return rc, tonumber(self.out[0]) / 1e9
end

function H:record(failed, took)
  return c_record(self.ptr, failed and 1 or 0, took and took * 1e9 or 0, now_ns(self))
end

function H:stats()
  local s = self.handle:stats(now_ns(self))
  s.retry_after, s.retry_ns = s.retry_ns / 1e9, nil
  return s
end

function H:reset()
  self.handle:reset()
end

local Inproc = {}
Inproc.__index = Inproc

function Inproc:open(name, cfg, clock)
  local h = self.by_name[name]
  if h then return h end
  local c = { failure_rate = cfg.failure_rate, slow_rate = cfg.slow_rate,
    slow_ns = cfg.slow_call and cfg.slow_call * 1e9 or 0, open_ns = cfg.open_for * 1e9,
    window = cfg.window, min_calls = cfg.min_calls, half_open_calls = cfg.half_open_calls }
  local handle, msg, code
  if self.private then
    handle, msg, code = core.new(c)
  else
    local full = self.name .. ":" .. name
    if #full > core.MAX_NAME then
      return nil, errors.new("breaker", "invalid", "the breaker name is too long (" .. #full ..
        " bytes with the adapter's name; at most " .. core.MAX_NAME .. ")")
    end
    handle, msg, code = core.open(full, c)
  end
  if not handle then return nil, errors.core("breaker", code, msg) end
  h = setmetatable({ handle = handle, ptr = ffi.cast(breaker_ptr, handle:ptr()),
    out = ffi.new("uint64_t[1]"), clock = clock }, H)
  self.by_name[name] = h
  return h
end

function Inproc:stats()
  local n = 0
  for _ in pairs(self.by_name) do n = n + 1 end
  return { breakers = n }
end

function Inproc:close()
  for _, h in pairs(self.by_name) do h.handle:release() end
  self.by_name = {}
  return true
end

-- opts: name (the adapter's name: opens of one name share their breakers), private (true: the
-- breakers are this object's alone, in no registry: the memory adapter).
function M.new(opts)
  opts = opts or {}
  return setmetatable({ name = opts.name or "default", private = opts.private or false,
    by_name = {} }, Inproc)
end

function M.open(section)
  return M.new{ name = section and section.name }
end

return M
