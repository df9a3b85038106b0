-- zever.outbox with the db adapter on a real SQLite file: the conformance suite (fake clock),
-- then a relay killed by SIGKILL in the middle of a batch and started again: every message's
-- effect happens exactly once (the consumer deduplicates by outbox id), none is lost.

local zdb = require "zever.db"
local outbox = require "zever.outbox"
local odb = require "adapters.outbox.db"
local sys = require "zever.sys"
local process = require "spec.support.process"

local files = {}
local function tmpdb()
  local path = os.tmpname()
  files[#files + 1] = path
  return assert(zdb.open("sqlite:" .. path)), path
end

describe("adapters.outbox.db", function()
  teardown(function()
    for _, path in ipairs(files) do
      os.remove(path)
      os.remove(path .. "-wal")
      os.remove(path .. "-shm")
    end
  end)

  local n = 0
  require("spec.conformance.outbox")("db (sqlite)", function(opts)
    local db = tmpdb()
    n = n + 1
    return outbox.wrap(odb.new(db, { table = "conf_" .. n, clock = opts.clock }), opts), db
  end)

  it("has each effect exactly once after a relay is killed mid-batch and restarted", function()
    local db, path = tmpdb()
    local ob = outbox.new(db)
    db:transaction(function(tx)
      for i = 1, 200 do assert(ob:record(tx, { topic = "effects", payload = i })) end
    end)
    local script = "spec/fixtures/outbox_relay.lua"
    local marker = path .. ".started"
    files[#files + 1] = marker
    -- The first relay applies effects slowly and signals when it is inside a batch.
    local cmd = process.quote(sys.exe()) .. " run " .. script .. " " .. process.quote(path)
      .. " 0.005 " .. process.quote(marker) .. " >/dev/null 2>&1 & echo $!"
    local pid = tonumber(process.run(cmd).stdout:match("(%d+)"))
    local deadline = sys.now() + 30
    process.wait_for(function()
      local f = io.open(marker)
      if f then f:close() end
      return f ~= nil
    end, 30)
    -- Let it apply a few effects of its batch, then kill it without warning.
    local effects = 0
    while effects < 5 and sys.now() < deadline do
      local row = db:first("SELECT count(*) AS n FROM effects")
      effects = row and row.n or 0
      if effects < 5 then process.sleep(0.01) end
    end
    assert.is_true(os.execute("kill -KILL " .. pid) == 0)
    assert.is_true(process.wait_for(function() return not process.alive(pid) end, 10))
    local mid = assert(ob:status())
    assert.is_true(mid.pending > 0, "the kill came after the relay had finished")
    -- The restarted relay waits for the dead one's lease (2 s), then relays the rest.
    local r = process.zever("run", script, path, "0", "")
    assert.are.equal(0, r.code, r.stderr)
    local st = assert(ob:status())
    assert.are.same({ 0, 200, 0 }, { st.pending, st.delivered, st.dead })
    assert.are.equal(200, db:first("SELECT count(*) AS n FROM effects").n)
    assert.are.equal(200, db:first("SELECT count(DISTINCT outbox_id) AS n FROM effects").n)
    -- The killed batch's messages that were applied but not settled were relayed twice; the
    -- consumer's deduplication absorbed the second delivery.
    assert.is_true(db:first("SELECT sum(deliveries) AS n FROM effects").n > 200)
  end)
end)

describe("app.outbox", function()
  it("is the db adapter on the app's database, with the outbox section's options", function()
    local path = os.tmpname()
    local cfg = assert(require("zever.config").load{ env = { DB_DSN = "sqlite:" .. path,
      OUTBOX_BATCH = "7", OUTBOX_MAX_ATTEMPTS = "3" } })
    local c = require("zever.container").new(cfg)
    local ob = assert(c:get("outbox"))
    assert.are.equal(7, ob.batch)
    assert.are.equal(3, ob.max_attempts)
    local db = assert(c:get("db"))
    assert(ob:record(db, { topic = "t", payload = 1 }))
    assert.are.equal(1, assert(ob:status()).pending)
    c:close()
    os.remove(path)
    os.remove(path .. "-wal")
    os.remove(path .. "-shm")
  end)
end)
