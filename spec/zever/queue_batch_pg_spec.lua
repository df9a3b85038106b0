-- queue:push_batch and jobs:dispatch_batch: on the db queue all or none, in one round trip on
-- PostgreSQL (#pg: a real PostgreSQL 15 from spec/support/pg_server; the round trips counted
-- by the binding, pg.round_trips), one transaction on SQLite, and one push after the other on
-- the memory adapter.

local pg_server = require "spec.support.pg_server"
local dbq = require "adapters.queue.db"
local zdb = require "zever.db"
local pg = require "zever.pg"
local queue = require "zever.queue"
local jobs = require "zever.jobs"
local jq = require "adapters.jobs.queue"
local fs = require "spec.support.files"
local unique = fs.unique_ident

-- refuse(db, t): makes table t refuse a payload of 20 bytes or more.
local function suite(name, open_db, tag, refuse)
  describe("queue:push_batch and jobs:dispatch_batch on " .. name .. (tag or ""), function()
    local db
    setup(function() db = open_db() end)
    teardown(function() if db then pcall(db.close, db) end end)

    it("pushes every payload, ids in order, and pops them in that order", function()
      local q = queue.wrap(dbq.new(db, { table = unique("pb") }), { visibility_timeout = 30 })
      local list = {}
      for i = 1, 150 do list[i] = { i = i } end -- more than one INSERT's 64 rows
      local ids = assert(q:push_batch("t", list))
      assert.are.equal(150, #ids)
      for i = 2, 150 do assert.is_true(ids[i] > ids[i - 1]) end
      assert.are.equal(150, q:len("t"))
      for i = 1, 150 do
        local m = assert(q:pop("t"))
        assert.are.equal(i, m.payload.i)
        assert.are.equal(ids[i], m.id)
        assert(q:ack(m))
      end
      assert.are.same({}, assert(q:push_batch("t", {})))
      q:close()
    end)

    it("all or none: a payload the table refuses leaves nothing behind", function()
      local t = unique("pbfail")
      local impl = dbq.new(db, { table = t })
      local q = queue.wrap(impl, { visibility_timeout = 30 })
      assert(q:push("t", "warm")) -- creates the table
      refuse(db, t)
      local list = {}
      for i = 1, 100 do list[i] = i == 90 and string.rep("x", 40) or "ok" end
      local ids, err = q:push_batch("t", list)
      assert.is_nil(ids)
      assert.are.equal("queue", err.battery)
      assert.are.equal(1, q:len("t"))
      q:close()
    end)

    it("refuses bad payloads before anything is sent", function()
      local q = queue.wrap(dbq.new(db, { table = unique("pbbad") }), { visibility_timeout = 30 })
      assert.has_error(function() q:push_batch("t", { "a", function() end }) end,
        "queue:push_batch: payload 2 must be a string, number, boolean or table")
      assert.has_error(function() q:push_batch("t", "nope") end, "queue:push_batch: payloads must be a list")
      assert.are.equal(0, q:len("t"))
      q:close()
    end)

    it("jobs:dispatch_batch dispatches one job per args through the queue's push_batch", function()
      local q = queue.wrap(dbq.new(db, { table = unique("jb") }), { visibility_timeout = 30 })
      local j = jobs.wrap(jq.new(q, { db = db, table = unique("jbf") }),
        { attempts = 3, base = 0.01, cap = 0.1, jitter = false, timeout = 5 })
      local seen = {}
      j:register("add", function(args) seen[#seen + 1] = args.k end)
      local list = {}
      for i = 1, 70 do list[i] = { k = i } end
      local ids = assert(j:dispatch_batch("add", list))
      assert.are.equal(70, #ids)
      assert.has_error(function() j:dispatch_batch("nope", { {} }) end)
      assert.has_error(function() j:dispatch_batch("add", "x") end, "jobs:dispatch_batch: expects a list of args")
      assert.are.equal(70, q:len("jobs:default"))
      q:close()
    end)
  end)
end

suite("postgres", function()
  local dsn = pg_server.shared():database("qbatch")
  local d = assert(zdb.open(dsn))
  local close = d.close
  d.close = function(self) close(self) pg_server.shared():drop(dsn) end
  return d
end, " #pg", function(db, t)
  db:exec('ALTER TABLE "' .. t .. '" ADD CONSTRAINT short CHECK (length(payload) < 20)')
end)

suite("sqlite", function() return assert(zdb.open("sqlite::memory:")) end, nil, function(db, t)
  db:exec('CREATE TRIGGER "' .. t .. '_short" BEFORE INSERT ON "' .. t .. '" WHEN '
    .. "length(NEW.payload) >= 20 BEGIN SELECT RAISE(ABORT, 'too long'); END")
end)

describe("queue:push_batch round trips on postgres #pg", function()
  local fx = pg_server.fixture("qbatchrt")
  local db
  setup(function() db = assert(zdb.open(fx.dsn)) end)
  teardown(function() pcall(db.close, db) end)

  it("200 pushes are one round trip (after the table exists and the INSERTs are prepared)", function()
    local q = queue.wrap(dbq.new(db, { table = unique("rt") }), { visibility_timeout = 30 })
    local list = {}
    for i = 1, 200 do list[i] = "p" .. i end
    assert(q:push_batch("t", list)) -- creates the table, prepares the 64- and 8-row INSERTs
    local before = pg.round_trips()
    assert(q:push_batch("t", list))
    assert.are.equal(1, pg.round_trips() - before)
    before = pg.round_trips()
    for i = 1, 20 do assert(q:push("t", list[i])) end -- one statement each from a plain caller
    assert.are.equal(20, pg.round_trips() - before)
    assert.are.equal(420, q:len("t"))
    q:close()
  end)
end)

describe("queue:push_batch on memory (one push after the other)", function()
  it("pushes each and returns the ids", function()
    local q = queue.new()
    local ids = assert(q:push_batch("t", { "a", "b", "c" }))
    assert.are.equal(3, #ids)
    assert.are.equal("a", assert(q:pop("t")).payload)
    q:close()
  end)
end)
