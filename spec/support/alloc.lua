-- spec.support.alloc: how much a piece of code allocates once LuaJIT has settled, for the
-- hot-path specs that say "allocates nothing".
--
--   local kib, rounds = alloc.settled(fn, { below = 1 [, rounds = 8] })
--
-- Runs fn() in up to `rounds` rounds with the collector stopped and measures what each round
-- grew the heap by (collectgarbage "count", in KiB). The first round is warm-up and never
-- counts. It returns the least growth of the later rounds and how many rounds ran, stopping
-- early at the first round below `below`.
--
-- Why the least and not the last: compiling a trace allocates GC objects (the trace, its
-- constants), and when that happens depends on everything the process ran before (hot
-- counters, a trace flush once the machine-code area fills up in a long suite). One such
-- compile in a measured round is not the code under test allocating. Code that does allocate
-- per call allocates in every round, so the least of several rounds still shows it: a spec
-- that runs 200 calls and asks for less than 1 KiB fails on one 16-byte object per call.

local M = {}

function M.settled(fn, opts)
  local below = assert(opts and opts.below, "alloc.settled: opts.below (KiB) is required")
  local rounds = opts.rounds or 8
  assert(rounds >= 2, "alloc.settled: at least 2 rounds (the first is warm-up)")
  local least
  for round = 1, rounds do
    collectgarbage()
    collectgarbage("stop")
    local k0 = collectgarbage("count")
    local ok, err = pcall(fn, round)
    local grown = collectgarbage("count") - k0
    collectgarbage("restart")
    if not ok then error(err, 0) end
    if round > 1 then
      if not least or grown < least then least = grown end
      if least < below then return least, round end
    end
  end
  return least, rounds
end

return M
