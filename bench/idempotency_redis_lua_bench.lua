-- idempotency_redis_lua_bench.lua: what begin and complete cost through zever.idempotency on
-- the redis adapter (a local redis-server, one EVALSHA each) and, for comparison, on the db
-- adapter (a SQLite file in WAL mode):
--
--   IdemRedisBeginReserve      begin of a new key (the reservation script)
--   IdemRedisBeginReplay       begin of a completed key (the same script, read-only path)
--   IdemRedisBeginComplete     begin + complete of a new key (per pair)
--   IdemRedisBeginCompleteCo   the same pair in a coroutine spawned per op (what a handler pays)
--   IdemDbBeginReserve, IdemDbBeginReplay, IdemDbBeginComplete    the db adapter
--   RedisGetBaseline, RedisEvalshaBaseline   a GET and an EVALSHA of "return 1" on the same
--                              client in the same run: the round trip the scripts build on
--
-- complete alone is BeginComplete minus BeginReserve. The redis client is the worker's shared
-- async one; outside a coroutine a call runs the loop until its reply.
--
-- Run: bin/zever run bench/idempotency_redis_lua_bench.lua [filter]  (starts its own redis-server)

local harness = require "bench.harness"
local idempotency = require "zever.idempotency"
local ridem = require "adapters.idempotency.redis"
local idb = require "adapters.idempotency.db"
local zdb = require "zever.db"
local sched = require "zever.sched"
local loop = require "zever.loop"
local redis_server = require "spec.support.redis_server"

local srv = assert(redis_server.start())
local bench = harness.new(arg and arg[1], { seconds = 0.3 })
local path = os.tmpname()

local function scenarios(prefix, store)
  local n = 0
  bench(prefix .. "BeginReserve", function()
    n = n + 1
    store:begin("r" .. n, { fingerprint = "fp" })
  end)
  local r = assert(store:begin("hit", { fingerprint = "fp" }))
  assert(store:complete("hit", { status = 200, body = "ok" }, r.token))
  bench(prefix .. "BeginReplay", function() store:begin("hit", { fingerprint = "fp" }) end)
  local result = { status = 201, body = "created" }
  local function pair()
    n = n + 1
    local key = "p" .. n
    local got = store:begin(key, { fingerprint = "fp" })
    store:complete(key, result, got.token)
  end
  bench(prefix .. "BeginComplete", pair)
  return pair
end

local ok, err = pcall(function()
  local store = idempotency.wrap(assert(ridem.new{ url = srv.url, prefix = "bench:" }))
  local client = store.impl.client
  bench("RedisGetBaseline", function() client:call("GET", "bench:none") end)
  local noop = client:script("return 1")
  bench("RedisEvalshaBaseline", function() noop:call({}, {}) end)
  local pair = scenarios("IdemRedis", store)
  local done
  local function co() pair(); done = true end
  bench("IdemRedisBeginCompleteCo", function()
    done = false
    sched.spawn(co)
    while not done do loop.run("once") end
  end)
  store:close()

  local db = assert(zdb.open("sqlite:" .. path))
  local dstore = idempotency.wrap(idb.new(db))
  scenarios("IdemDb", dstore)
  dstore:close()
  db:close()
end)
srv:stop()
for _, suffix in ipairs({ "", "-wal", "-shm" }) do os.remove(path .. suffix) end
if not ok then error(err, 0) end
