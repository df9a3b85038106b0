-- The process's write lock per SQLite file (host/sqlite/writegate.c), which zever.db's SQLite
-- transactions take before BEGIN IMMEDIATE (lua/adapters/db/sqlite.lua, conn:control): worker
-- threads of one process queue on it and each end of a transaction hands it on. Real files,
-- real threads (zever.threads), each thread on its own connection.

local sqlite = require "zever.sqlite"
local db = require "zever.db"
local threads = require "zever.threads"
local process = require "spec.support.process"

local files = require "spec.support.files"
local tmpdb, cleanup = files.tmp_sqlite, files.rm_sqlite

local function read(file)
  local h = assert(io.open(file))
  local s = h:read("*a")
  h:close()
  os.remove(file)
  return s
end

-- A file with table w: rows 1..1000, n = 0, each padded to ~1 KB (20 updates touch ~20 pages).
local function fixture()
  local path = tmpdb()
  local d = assert(db.open("sqlite:" .. path))
  d:exec("CREATE TABLE w (id INTEGER PRIMARY KEY, n INTEGER NOT NULL, pad TEXT)")
  d:transaction(function(tx)
    for i = 1, 1000 do tx:exec("INSERT INTO w (id, n, pad) VALUES (?, 0, ?)", i, string.rep("p", 1000)) end
  end)
  return path, d
end

local function start(path, n, timeout, out)
  return threads.start(1, "spec.fixtures.sqlite_wlock_worker",
    path .. "|" .. n .. "|" .. timeout .. "|" .. out)
end

describe("the SQLite write lock of the process (writegate.c)", function()
  it("counts takes, waits, hand-overs, timeouts and refusals", function()
    local s = sqlite.writelock()
    for _, k in ipairs { "takes", "waits", "handoffs", "timeouts", "refused", "waiting" } do
      assert.are.equal("number", type(s[k]), k)
    end
  end)

  it("lets two threads' transactions all commit, and the WAL still restarts", function()
    local path, d = fixture()
    local before = sqlite.writelock()
    local o1, o2 = os.tmpname(), os.tmpname()
    local t1, t2 = start(path, 300, 30000, o1), start(path, 300, 30000, o2)
    t1:join()
    t2:join()
    assert.are.equal("done 300", read(o1))
    assert.are.equal("done 300", read(o2))
    assert.are.equal(2 * 300 * 20, d:first("SELECT sum(n) AS s FROM w").s)
    local after = sqlite.writelock()
    assert.is_true(after.takes - before.takes >= 600)
    assert.are.equal(before.timeouts, after.timeouts)
    assert.are.equal(0, after.waiting)
    -- 600 commits of ~20 pages: ~12,000 WAL frames if the WAL never restarted (a writer that
    -- began while the other thread still checkpointed); with the checkpoint inside the lock it
    -- restarts after each 1,000-page checkpoint.
    local page = d:first("PRAGMA page_size").page_size
    local h = assert(io.open(path .. "-wal", "rb"))
    local size = h:seek("end")
    h:close()
    assert.is_true(size < 3000 * (page + 24), "WAL of " .. size .. " bytes")
    d:close()
    cleanup(path)
  end)

  for _, ending in ipairs { "commit", "rollback", "empty commit" } do
    it("hands the lock to a waiting thread at a " .. ending .. ", without SQLite's busy wait", function()
      local path, d = fixture()
      local out = os.tmpname()
      local before, _, wakes = sqlite.writelock(), sqlite.gate()
      local t
      local ok, err = pcall(d.transaction, d, function(tx)
        if ending ~= "empty commit" then tx:exec("UPDATE w SET n = 100 WHERE id = 1") end
        t = start(path, 1, 30000, out)
        assert.is_true(process.wait_for(function() return sqlite.writelock().waiting >= 1 end, 30))
        if ending == "rollback" then error("roll it back", 0) end
      end)
      if ending == "rollback" then assert.are.equal("roll it back", err) else assert.is_true(ok) end
      t:join()
      assert.are.equal("done 1", read(out))
      local after, _, wakes_after = sqlite.writelock(), sqlite.gate()
      assert.are.equal(1, after.handoffs - before.handoffs)
      assert.are.equal(1, after.waits - before.waits)
      assert.are.equal(wakes, wakes_after) -- the worker never waited in SQLite's busy handler
      assert.are.equal(ending == "commit" and 100 or 0, d:first("SELECT n FROM w WHERE id = 1").n)
      assert.are.equal(20, d:first("SELECT sum(n) AS s FROM w WHERE id <> 1").s
        + (ending == "commit" and 0 or d:first("SELECT n FROM w WHERE id = 1").n))
      d:close()
      cleanup(path)
    end)
  end

  it("keeps busy_timeout: a thread that waits longer gives up with busy", function()
    local path, d = fixture()
    local out = os.tmpname()
    local before = sqlite.writelock()
    d:transaction(function(tx)
      tx:exec("UPDATE w SET n = 7 WHERE id = 1")
      local t = start(path, 1, 50, out) -- 50 ms, while this transaction stays open
      t:join()
    end)
    local text = read(out)
    assert.matches("^error busy database is locked", text)
    assert.are.equal(1, sqlite.writelock().timeouts - before.timeouts)
    assert.are.equal(7, d:first("SELECT sum(n) AS s FROM w").s) -- the worker wrote nothing
    d:transaction(function(tx) tx:exec("UPDATE w SET n = 8 WHERE id = 1") end) -- free again
    d:close()
    cleanup(path)
  end)

  it("answers busy at once to a second connection of the holder's own thread", function()
    local path, d = fixture()
    local d2 = assert(db.open("sqlite:" .. path)) -- busy_timeout 5000: waiting would show
    local before = sqlite.writelock()
    d:transaction(function(tx)
      tx:exec("UPDATE w SET n = 1 WHERE id = 1")
      local ok, err = pcall(d2.transaction, d2, function(tx2) tx2:exec("UPDATE w SET n = 2 WHERE id = 2") end)
      assert.is_false(ok)
      assert.is_true(db.is_error(err))
      assert.are.equal("busy", err.code)
      assert.matches("another transaction of this thread", err.message)
    end)
    local after = sqlite.writelock()
    assert.are.equal(1, after.refused - before.refused)
    assert.are.equal(before.timeouts, after.timeouts)
    d2:transaction(function(tx2) tx2:exec("UPDATE w SET n = 2 WHERE id = 2") end)
    assert.are.equal(3, d:first("SELECT sum(n) AS s FROM w").s)
    d2:close()
    d:close()
    cleanup(path)
  end)

  it("gives the lock on when the holding connection closes mid-transaction", function()
    local path, d = fixture()
    d:close()
    local adapter = require "adapters.db.sqlite"
    local c = assert(adapter.open(path))
    local out = os.tmpname()
    local before = sqlite.writelock()
    assert.is_true(c:control("BEGIN IMMEDIATE"))
    assert(c:exec("UPDATE w SET n = 50 WHERE id = 1"))
    local t = start(path, 1, 30000, out)
    assert.is_true(process.wait_for(function() return sqlite.writelock().waiting >= 1 end, 30))
    c:close() -- rolls the transaction back and hands the lock to the worker
    t:join()
    assert.are.equal("done 1", read(out))
    assert.are.equal(1, sqlite.writelock().handoffs - before.handoffs)
    local d2 = assert(db.open("sqlite:" .. path))
    assert.are.equal(0, d2:first("SELECT n FROM w WHERE id = 1").n)
    assert.are.equal(20, d2:first("SELECT sum(n) AS s FROM w").s)
    d2:close()
    cleanup(path)
  end)

  it("leaves memory databases to SQLite alone (no file, no lock)", function()
    local d = assert(db.open("sqlite::memory:"))
    local before = sqlite.writelock()
    d:exec("CREATE TABLE m (v INTEGER)")
    d:transaction(function(tx) tx:exec("INSERT INTO m (v) VALUES (1)") end)
    assert.are.equal(before.takes, sqlite.writelock().takes)
    assert.are.equal(1, d:first("SELECT count(*) AS c FROM m").c)
    d:close()
  end)
end)

describe("the SQLite write lock held across a Redis call #redis", function()
  local srv = require("spec.support.redis_server").fixture()

  it("keeps the lock over a Redis round trip inside db:transaction, then hands it on", function()
    local redis = require "zever.redis"
    local c = assert(redis.connect(srv.url))
    local key = srv:prefix("wlock") .. "n"
    local path, d = fixture()
    local out = os.tmpname()
    local before = sqlite.writelock()
    local t
    d:transaction(function(tx)
      t = start(path, 1, 30000, out)
      assert.is_true(process.wait_for(function() return sqlite.writelock().waiting >= 1 end, 30))
      c:call("SET", key, "41")
      local n = tonumber(c:call("INCR", key)) -- the reply decides the write
      tx:exec("UPDATE w SET n = ? WHERE id = 1", n)
      assert.are.equal(1, sqlite.writelock().waiting) -- still queued: the lock is held
    end)
    t:join()
    assert.are.equal("done 1", read(out))
    assert.are.equal(1, sqlite.writelock().handoffs - before.handoffs)
    assert.are.equal(42, d:first("SELECT n FROM w WHERE id = 1").n)
    c:close()
    d:close()
    cleanup(path)
  end)
end)
