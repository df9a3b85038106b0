-- coord_lua_bench.lua: what a handler pays for the coordination batteries from Lua (issue #22):
-- a memory lock try_acquire + unlock through zever.lock (host/lock/ through the FFI), and an
-- in-process eventbus publish to 10 subscribers, delivery included: publishes in batches of
-- 100, each batch followed by the loop turn that runs the 10 handlers of each message.
--
--   BenchmarkLockLuaTryUnlock          N  x ns/op  y B/op
--   BenchmarkEventbusPublish10Drain    N  x ns/op  y B/op    (per message: 10 deliveries)
--
-- Run: bin/zever run bench/coord_lua_bench.lua [filter]   (or make bench BENCH=coord)

local harness = require("bench.harness").new(arg and arg[1], { seconds = 0.2 })
local bench = harness.loop

local lock = require "zever.lock"
local eventbus = require "zever.eventbus"
local sched = require "zever.sched"

local locks = lock.new{ name = "bench:coord" }

bench("LockLuaTryUnlock", function(n)
  local sink = 0
  for _ = 1, n do
    local lease = locks:try_acquire("job:1", 30)
    sink = sink + lease.fence
    lease:unlock()
  end
  return sink
end)

local function bus_with(subscribers, impl)
  local bus = impl and eventbus.wrap(impl, { max_pending = 1e9 })
    or eventbus.new{ max_pending = 1e9 }
  local count = 0
  for _ = 1, subscribers do
    bus:subscribe("orders.created", function() count = count + 1 end)
  end
  return bus, function() return count end
end

-- Publish in batches of 100, each followed by the loop turn that runs the 10 handlers.
local function publish_drain(n, bus, count)
  local msg = { id = 1 }
  local done = 0
  while done < n do
    local k = math.min(100, n - done)
    for _ = 1, k do bus:publish("orders.created", msg) end
    done = done + k
    sched.sleep(0)
  end
  assert(count() == n * 10, "not every message was delivered")
  bus:close()
end

bench("EventbusPublish10Drain", function(n)
  publish_drain(n, bus_with(10))
end)

-- The same through the inproc adapter (host/bus/): each message is JSON-encoded, copied into
-- the C hub once, drained from this worker's mailbox and decoded before the 10 handlers run.
bench("EventbusPublish10DrainInproc", function(n)
  publish_drain(n, bus_with(10, require("adapters.eventbus.inproc").new{ name = "bench",
    max_pending = 1e6 }))
end)

-- A closed breaker's guard around a call that does nothing (issue #22's target: <= 50 ns of
-- overhead): cb:call(fn) against fn() alone, on the real monotonic clock; and the same with
-- slow calls counted (two clock reads per call).
local breaker = require "zever.breaker"
local cb = breaker.new():get("bench", { window = 100, min_calls = 100 })
local function upstream(x) return x end

bench("BreakerCallClosed", function(n)
  local sink = 0
  for i = 1, n do sink = sink + cb:call(upstream, i) end
  return sink
end)

local cb_slow = breaker.new():get("bench-slow", { window = 100, min_calls = 100, slow_call = 5 })
bench("BreakerCallClosedSlowCounted", function(n)
  local sink = 0
  for i = 1, n do sink = sink + cb_slow:call(upstream, i) end
  return sink
end)

-- The same guard on the inproc adapter: the state in C memory shared by the worker threads
-- (host/breaker/), allow and record through the FFI.
local cb_inproc = breaker.wrap(require("adapters.breaker.inproc").new{ name = "bench" })
  :get("bench", { window = 100, min_calls = 100 })
bench("BreakerCallClosedInproc", function(n)
  local sink = 0
  for i = 1, n do sink = sink + cb_inproc:call(upstream, i) end
  return sink
end)

bench("BreakerBareCall", function(n)
  local sink = 0
  for i = 1, n do sink = sink + upstream(i) end
  return sink
end)
