-- adapters.scheduler.redis (#redis): the one-run-per-slot lock against a real redis-server on a
-- free loopback port: two clients, two schedulers and two processes race for the same slots and
-- exactly one wins each; the key lives `horizon`; a server that is down is code unavailable.

local scheduler = require "zever.scheduler"
local rlock = require "adapters.scheduler.redis"
local redis = require "zever.redis"
local process = require "spec.support.process"
local sys = require "zever.sys"
local redis_server = require "spec.support.redis_server"

local T0 = 1798761600            -- 2027-01-01T00:00:00Z

local function fake_jobs()
  local sent = {}
  return { sent = sent, dispatch = function(_, name, args)
    sent[#sent + 1] = { name = name, args = args }
    return #sent
  end }
end

-- A child process: acquires slots 1..n through its own shared client, prints the ones it won.
local CHILD = [[
local rlock = require "adapters.scheduler.redis"
local url, prefix, n = arg[1], arg[2], tonumber(arg[3])
local lock = assert(rlock.new{ url = url, prefix = prefix })
local won = {}
for slot = 1, n do
  local ok, err = lock:acquire("job@" .. slot, slot, 60)
  assert(ok ~= nil, tostring(err))
  if ok then won[#won + 1] = slot end
end
lock:close()
io.write(table.concat(won, "\n"), "\n")
]]

describe("adapters.scheduler.redis #redis", function()
  local srv = redis_server.fixture()

  it("lets the first of two clients take a slot and gives the second false", function()
    local c1 = assert(redis.connect(srv.url))
    local c2 = assert(redis.connect(srv.url))
    local prefix = srv:prefix("two")
    local l1 = assert(rlock.new{ client = c1, prefix = prefix })
    local l2 = assert(rlock.new{ client = c2, prefix = prefix })
    assert.is_true(l1:acquire("ping@" .. T0, T0, 3600))
    assert.is_false(l2:acquire("ping@" .. T0, T0, 3600))
    assert.is_true(l2:acquire("ping@" .. (T0 + 60), T0 + 60, 3600))
    assert.is_false(l1:acquire("ping@" .. (T0 + 60), T0 + 60, 3600))
    l1:close()
    l2:close()
    c1:close()
    c2:close()
  end)

  it("keeps a slot's key for the horizon", function()
    local raw = assert(redis.connect(srv.url, { sync = true }))
    local prefix = srv:prefix("ttl")
    local l = assert(rlock.new{ url = srv.url, prefix = prefix })
    assert.is_true(l:acquire("ping@1", 1, 600))
    local pttl = raw:call("PTTL", prefix .. "ping@1")
    assert.is_true(pttl > 599000 and pttl <= 600000)
    l:close()
    raw:close()
  end)

  it("fires each slot once when two schedulers tick over two clients", function()
    local now = T0 + 0.5
    local clock = function() return now end
    local prefix = srv:prefix("sched")
    local c1 = assert(redis.connect(srv.url))
    local c2 = assert(redis.connect(srv.url))
    local ja, jb = fake_jobs(), fake_jobs()
    local a = scheduler.new(assert(rlock.new{ client = c1, prefix = prefix }),
      { jobs = function() return ja end, clock = clock })
    local b = scheduler.new(assert(rlock.new{ client = c2, prefix = prefix }),
      { jobs = function() return jb end, clock = clock })
    a:every("1s", "ping")
    b:every("1s", "ping")
    a:tick()
    b:tick()
    for i = 1, 6 do
      now = T0 + i
      if i % 2 == 0 then a:tick(); b:tick() else b:tick(); a:tick() end
    end
    assert.are.equal(6, #ja.sent + #jb.sent)
    assert.are.equal(3, #ja.sent)              -- whoever ticked first won its slot
    a:close()
    b:close()
    c1:close()
    c2:close()
  end)

  it("gives each slot to exactly one of two processes", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write(CHILD)
    f:close()
    local out1, out2 = os.tmpname(), os.tmpname()
    local prefix, n = srv:prefix("procs"), 2000
    local cmd = function(out)
      return table.concat({ process.quote(sys.exe()), "run", process.quote(script),
        process.quote(srv.url), process.quote(prefix), tostring(n), ">", process.quote(out) }, " ")
    end
    -- Both run at once; the exit code is the first failure's.
    local r = process.run(cmd(out1) .. " & p=$!; " .. cmd(out2) .. "; b=$?; wait $p; a=$?; "
      .. "exit $((a | b))")
    assert.are.equal(0, r.code, r.stderr)
    local seen, total = {}, 0
    for _, path in ipairs({ out1, out2 }) do
      local h = assert(io.open(path))
      for line in h:read("*a"):gmatch("%d+") do
        assert.is_nil(seen[line], "slot " .. line .. " won twice")
        seen[line] = true
        total = total + 1
      end
      h:close()
      os.remove(path)
    end
    os.remove(script)
    assert.are.equal(n, total)
  end)

  it("returns code unavailable while the server is down and wins again after a restart", function()
    local c = assert(redis.connect(srv.url, { backoff_min = 0.02, backoff_max = 0.2 }))
    local l = assert(rlock.new{ client = c, prefix = srv:prefix("down") })
    assert.is_true(l:acquire("ping@1", 1, 60))
    srv:kill()
    local ok, err = l:acquire("ping@2", 2, 60)
    assert.is_nil(ok)
    assert.are.equal("unavailable", err.code)
    assert(srv:restart())
    local won
    for _ = 1, 500 do
      won = l:acquire("ping@2", 2, 60)
      if won ~= nil then break end
      require("zever.sched").sleep(0.01)
    end
    assert.is_true(won)
    l:close()
    c:close()
  end)

  it("returns code closed after close", function()
    local l = assert(rlock.new{ url = srv.url })
    l:close()
    local ok, err = l:acquire("ping@1", 1, 60)
    assert.is_nil(ok)
    assert.are.equal("closed", err.code)
  end)

  it("resolves app.scheduler with the redis lock from the config", function()
    local config = require "zever.config"
    local container = require "zever.container"
    local cfg = assert(config.load{ dir = "/nonexistent-zever-dir", env = {
      SCHEDULER_ADAPTER = "redis", SCHEDULER_URL = srv.url } })
    local ctr = container.new(cfg)
    local s = assert(ctr:get("scheduler"))
    local key = srv:prefix("container") .. "@1"
    assert.is_true(s.lock:acquire(key, 1, 60))
    assert.is_false(s.lock:acquire(key, 1, 60))
    local raw = assert(redis.connect(srv.url, { sync = true }))
    assert.are.equal("1", raw:call("GET", rlock.PREFIX .. key))
    raw:close()
    assert.is_true(ctr:close())
  end)
end)
