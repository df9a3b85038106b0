-- The outbox battery's conformance suite: every adapter runs it (the db adapter on SQLite and on
-- PostgreSQL).
--
--   require("spec.conformance.outbox")("db (sqlite)", function(opts) return ob, db end)
--
-- new(opts) returns a fresh zever.outbox (front-end) over an empty outbox, with opts (batch,
-- max_attempts, base, cap) passed to outbox.wrap and the fake clock opts.clock (seconds), and
-- the zever.db it lives in (the transactions of the rows write through it).

local queue = require "zever.queue"

return function(name, new)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  describe("outbox conformance: " .. name, function()
    local t
    local function make(opts)
      t = 1000
      opts = opts or {}
      opts.clock = function() return t end
      return new(opts)
    end
    local function collect(list)
      return function(msg)
        list[#list + 1] = msg
        return true
      end
    end

    it("writes a message with the caller's transaction and drops it on rollback", function()
      local ob, db = make()
      local id
      db:transaction(function(tx)
        id = assert(ob:record(tx, { topic = "orders.created", payload = { id = 1 } }))
      end)
      local ok = pcall(db.transaction, db, function(tx)
        ob:record(tx, { topic = "orders.created", payload = { id = 2 } })
        error("roll back")
      end)
      assert.is_false(ok)
      local got = {}
      assert.are.same({ 1, 0 }, { ob:relay(collect(got)) })
      assert.are.equal(1, #got)
      assert.are.equal(id, got[1].id)
      assert.are.equal("orders.created", got[1].topic)
      assert.are.same({ id = 1 }, got[1].payload)
      assert.are.equal(0, got[1].attempts)
      assert.are.same({ 0, 0 }, { ob:relay(collect(got)) })
    end)

    it("relays one key's messages one at a time in record order", function()
      local ob, db = make{ batch = 100 }
      db:transaction(function(tx)
        for i = 1, 3 do assert(ob:record(tx, { topic = "a", payload = i, key = "k1" })) end
        for i = 4, 5 do assert(ob:record(tx, { topic = "a", payload = i, key = "k2" })) end
        assert(ob:record(tx, { topic = "a", payload = 6 }))
        assert(ob:record(tx, { topic = "a", payload = 7 }))
      end)
      local rounds = {}
      for r = 1, 4 do
        local got = {}
        ob:relay(collect(got))
        rounds[r] = {}
        for i, m in ipairs(got) do rounds[r][i] = m.payload end
      end
      assert.are.same({ { 1, 4, 6, 7 }, { 2, 5 }, { 3 }, {} }, rounds)
    end)

    it("retries a failed message after a backoff, holding its key's later ones back", function()
      local ob, db = make{ base = 10, cap = 100 }
      db:transaction(function(tx)
        assert(ob:record(tx, { topic = "a", payload = 1, key = "k" }))
        assert(ob:record(tx, { topic = "a", payload = 2, key = "k" }))
      end)
      local calls = 0
      assert.are.same({ 0, 1 }, { ob:relay(function() calls = calls + 1; return nil, "down" end) })
      local got = {}
      assert.are.same({ 0, 0 }, { ob:relay(collect(got)) })   -- 1 waits, 2 waits behind it
      t = t + 10.01                                             -- past any jittered first delay
      assert.are.same({ 1, 0 }, { ob:relay(collect(got)) })
      assert.are.equal(1, got[1].payload)
      assert.are.equal(1, got[1].attempts)
      assert.are.same({ 1, 0 }, { ob:relay(collect(got)) })
      assert.are.equal(2, got[2].payload)
      assert.are.equal(1, calls)
    end)

    it("buries a message after max_attempts, lists it as dead, and requeues it", function()
      local ob, db = make{ max_attempts = 2, base = 1, cap = 1 }
      local id = assert(ob:record(db, { topic = "a", payload = "x", key = "k" }))
      assert(ob:record(db, { topic = "a", payload = "after", key = "k" }))
      local function boom() error("sink failure") end
      assert.are.same({ 0, 1 }, { ob:relay(boom) })
      t = t + 2
      assert.are.same({ 0, 1 }, { ob:relay(boom) })
      local dead = assert(ob:dead())
      assert.are.equal(1, #dead)
      assert.are.equal(id, dead[1].id)
      assert.are.equal(2, dead[1].attempts)
      assert.matches("sink failure", dead[1].last_error)
      -- A dead message no longer holds its key back.
      local got = {}
      assert.are.same({ 1, 0 }, { ob:relay(collect(got)) })
      assert.are.equal("after", got[1].payload)
      local st = assert(ob:status())
      assert.are.same({ 0, 1, 1 }, { st.pending, st.delivered, st.dead })
      assert.are.equal(1, ob:requeue(id))
      assert.are.same({ 1, 0 }, { ob:relay(collect(got)) })
      assert.are.equal("x", got[2].payload)
      assert.are.equal(0, #assert(ob:dead()))
      assert.are.equal(0, ob:requeue("all"))
    end)

    it("leases a claimed batch: a second relay gets none until the lease ends", function()
      local ob, db = make{ batch = 10 }
      for i = 1, 3 do assert(ob:record(db, { topic = "a", payload = i })) end
      local first = assert(ob.impl:claim(10, 30))
      assert.are.equal(3, #first)
      assert.are.equal(0, #assert(ob.impl:claim(10, 30)))
      t = t + 31   -- the first relay died without settling
      local got = {}
      assert.are.same({ 3, 0 }, { ob:relay(collect(got)) })
    end)

    it("reports the oldest pending message's age and fails check when stalled", function()
      local ob, db = make()
      assert.is_true(ob:check(60))
      assert(ob:record(db, { topic = "a", payload = 1 }))
      t = t + 61
      local ok, err = ob:check(60)
      assert.is_nil(ok)
      assert.are.equal("stalled", err.code)
      assert.is_true(assert(ob:status()).oldest_pending_age >= 61)
      ob:relay(function() return true end)
      assert.is_true(ob:check(60))
    end)

    it("purges delivered messages older than a cutoff", function()
      local ob, db = make()
      assert(ob:record(db, { topic = "a", payload = 1 }))
      ob:relay(function() return true end)
      t = t + 100
      assert(ob:record(db, { topic = "a", payload = 2 }))
      ob:relay(function() return true end)
      assert.are.equal(1, ob:purge(50))
      assert.are.equal(1, assert(ob:status()).delivered)
    end)

    it("relays to a queue with the outbox id for deduplication", function()
      local ob, db = make()
      local q = queue.new()
      local id = assert(ob:record(db, { topic = "emails", payload = { to = "a@b" } }))
      assert.are.same({ 1, 0 }, { ob:relay(require("zever.outbox").to_queue(q)) })
      local m = assert(q:pop("emails"))
      assert.are.same({ outbox_id = id, payload = { to = "a@b" } }, m.payload)
      q:close()
    end)

    it("raises on misuse and returns closed after close", function()
      local ob, db = make()
      assert.has_error(function() ob:record(db, { payload = 1 }) end,
        "outbox:record: msg.topic must be a non-empty string")
      assert.has_error(function() ob:record(nil, { topic = "a" }) end,
        "outbox:record: tx must be a zever.db transaction (or database)")
      assert.has_error(function() ob:relay(nil) end, "outbox:relay: sink must be a function")
      local ok, err = ob:record(db, { topic = "a", payload = function() end })
      assert.is_nil(ok)
      assert.are.equal("invalid", err.code)
      assert.is_true(ob:close())
      assert.are.equal("closed", select(2, ob:record(db, { topic = "a" })).code)
      assert.are.equal("closed", select(2, ob:relay(print)).code)
      assert.are.equal("closed", select(2, ob:status()).code)
    end)
  end)
end
