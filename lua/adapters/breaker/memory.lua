-- adapters.breaker.memory: breakers of one Lua state (one worker of `zever serve`): each worker
-- trips on what it saw itself. They are the inproc adapter's C breakers (host/breaker/), made
-- private: in no registry, so no other state or adapter object shares them. One state machine,
-- in C, serves both (the redis adapter runs the same one in its scripts).
--
--   impl:open(name, cfg, clock) -> handle   cfg: failure_rate, slow_rate, slow_call (seconds
--                                           or false), window, min_calls, open_for,
--                                           half_open_calls (checked by the front-end);
--                                           clock: a function returning seconds (specs)
--   handle:allow()              -> 0 (go) | 1, retry_after (open) | 2, 0 (half open, trials taken)
--   handle:record(failed, took) -> state (0 closed, 1 open, 2 half open); took in seconds or nil
--   handle:stats()              -> { state, calls, failures, slow, rejected, opened, retry_after }
--   handle:reset()              closed, with an empty window
--   impl:stats() -> { breakers } ;  impl:close() ;  memory.open(section) -> impl

local inproc = require "adapters.breaker.inproc"

local M = {}

function M.new()
  return inproc.new{ private = true }
end

function M.open()
  return M.new()
end

return M
