-- The outbox relay inside `zever worker` and the `zever outbox` command, end to end: a fresh
-- SQLite file per spec shared by this process (which records messages) and the zever processes
-- (the worker relays them to the db queue; the command reports, requeues, relays, purges).
local process = require "spec.support.process"
local files = require "spec.support.files"
local sys = require "zever.sys"
local zdb = require "zever.db"
local outbox = require "zever.outbox"
local json = require "zever.json"

local quote, wait_for, alive = process.quote, process.wait_for, process.alive

describe("the outbox relay", function()
  local path, db, ob, dir, pids

  local function env(extra)
    return "DB_DSN=" .. quote("sqlite:" .. path) .. " QUEUE_ADAPTER=db QUEUE_POLL_MAX=20ms " ..
      "LOG_LEVEL=error " .. (extra or "")
  end

  local function zever_outbox(...)
    local parts = { env(), quote(sys.exe()), "outbox" }
    for i = 1, select("#", ...) do parts[#parts + 1] = quote((select(i, ...))) end
    parts[#parts + 1] = "--app"
    parts[#parts + 1] = quote(dir)
    return process.run(table.concat(parts, " "))
  end

  local function queued()
    local ok, rows = pcall(db.query, db, "SELECT count(*) AS n FROM queue_messages")
    return ok and rows and rows[1].n or 0
  end

  before_each(function()
    path = os.tmpname()
    os.remove(path)
    db = assert(zdb.open("sqlite:" .. path))
    ob = outbox.new(db)
    dir = files.tmpdir({ ["app.lua"] = 'local zever = require "zever"\nreturn zever.app()\n' },
      "zever-outbox")
    pids = {}
  end)

  after_each(function()
    for _, pid in ipairs(pids) do
      if alive(pid) then os.execute("kill -KILL " .. pid) end
    end
    ob:close()
    db:close()
    for _, suffix in ipairs({ "", "-wal", "-shm" }) do os.remove(path .. suffix) end
    files.rm_rf(dir)
  end)

  it("runs in zever worker with outbox.relay and publishes every message to the queue", function()
    for i = 1, 5 do
      assert(db:transaction(function(tx)
        return ob:record(tx, { topic = "orders.created", payload = { n = i }, key = "c:1" })
      end))
    end
    local log = os.tmpname()
    local p = io.popen(env("OUTBOX_RELAY=true OUTBOX_RELAY_INTERVAL=50ms") .. " exec " ..
      quote(sys.exe()) .. " worker " .. quote(dir) .. " >" .. log .. " 2>&1 & echo $!")
    local pid = tonumber(p:read("*l"))
    p:close()
    pids[#pids + 1] = pid
    local ok = wait_for(function() return assert(ob:status()).delivered == 5 end, 20)
    local text = files.text(log)
    assert(ok, "the relay did not deliver: " .. text)
    assert.matches("outbox relay to queue", text)
    assert.equals(5, queued())
    -- a message recorded while the worker runs goes out too
    assert(ob:record(db, { topic = "orders.created", payload = { n = 6 } }))
    assert(wait_for(function() return assert(ob:status()).delivered == 6 end, 20))
    os.execute("kill -TERM " .. pid)
    assert(wait_for(function() return not alive(pid) end, 10))
    os.remove(log)
    local r = zever_outbox("status", "--json")
    assert.equals(0, r.code, r.stderr)
    local st = json.decode(r.stdout)
    assert.same({ 0, 6, 0 }, { st.pending, st.delivered, st.dead })
  end)

  it("lists and requeues dead messages, relays on demand and purges", function()
    assert(ob:record(db, { topic = "t", payload = { a = 1 } }))
    assert(ob:record(db, { topic = "t", payload = { a = 2 } }))
    -- both die: a sink that refuses, one attempt allowed
    assert.same({ 0, 2 }, { ob:relay(function() return false end, { max_attempts = 1 }) })
    local r = zever_outbox("dlq", "list", "--json")
    assert.equals(0, r.code, r.stderr)
    local dead = json.decode(r.stdout)
    assert.equals(2, #dead)
    r = zever_outbox("dlq", "requeue", "--id", tostring(dead[1].id))
    assert.equals(0, r.code, r.stderr)
    assert.matches("requeued 1", r.stdout)
    r = zever_outbox("relay")
    assert.equals(0, r.code, r.stderr)
    assert.matches("relayed 1, failed 0", r.stdout)
    assert.equals(1, queued())
    r = zever_outbox("dlq", "requeue", "--all")
    assert.matches("requeued 1", r.stdout)
    r = zever_outbox("relay", "--once")
    assert.matches("relayed 1", r.stdout)
    r = zever_outbox("status")
    assert.matches("pending 0, delivered 2, dead 0", r.stdout)
    r = zever_outbox("purge", "--before", "0s")
    assert.equals(0, r.code, r.stderr)
    assert.matches("purged 2", r.stdout)
    r = zever_outbox("purge")
    assert.equals(2, r.code)
    r = zever_outbox("stauts")
    assert.equals(2, r.code)
    assert.matches('did you mean "status"', r.stderr .. r.stdout)
  end)
end)
