-- bench/jobs_callgrind.lua: fixed-count loops of an idle worker's poll on the memory queue
-- (WorkerEmptyPoll of bench/jobs_lua_bench.lua), for instruction counts that load cannot move.
-- The count of a poll is the slope between two runs, so start-up and trace compilation cancel
-- out:
--
--   for n in 200000 600000; do
--     valgrind --tool=callgrind --callgrind-out-file=cg.$n bin/zever run bench/jobs_callgrind.lua $n
--   done   # Ir per poll = (Ir(600000) - Ir(200000)) / 400000
--
-- `... jobs_callgrind.lua N other` polls with one message waiting in another topic of the same
-- queue (the empty queue's shortcut in zv_queue_pop does not apply: lock, hash, topic lookup).
--
-- With JITV=1 it prints LuaJIT's trace log (jit.v) instead of counting: whether the loop is
-- compiled, and what aborts a trace.

local n = tonumber(arg[1] or "200000")
if os.getenv("JITV") then require("jit.v").start() end
local jobs = require "zever.jobs"
local worker = require "zever.worker"
local queue = require "zever.queue"
local jq = require "adapters.jobs.queue"

local q = queue.new{ name = "cg:jobs" }
if arg[2] == "other" then assert(q:push("jobs:elsewhere", "waiting")) end
local w = worker.new(jobs.wrap(jq.new(q), {}), { poll_max = 1 })
local sink = 0
for _ = 1, n do sink = sink + w:poll() end
assert(sink > 0)
