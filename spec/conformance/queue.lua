-- The queue battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.queue")("memory", function(opts) return queue end)
--
-- new(opts) returns a fresh, empty zever.queue (front-end) over the adapter with the fake clock
-- opts.clock (a function returning seconds) and opts.visibility_timeout. Time moves only when a
-- row moves the fake clock: no sleeps.

return function(name, new)
  -- The runner gives each spec file its own busted environment: use the caller's.
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  describe("queue conformance: " .. name, function()
    local t
    local function clock() return t end
    local function make(vt)
      t = 1000
      return new{ clock = clock, visibility_timeout = vt or 30 }
    end

    -- { name, payload }: what pop returns equals what push took.
    local payloads = {
      { "a string", "hello" },
      { "an empty string", "" },
      { "a string with zero bytes", "a\0b\0" },
      { "a string over the stack buffer", ("x"):rep(5000) },
      { "an integer", 42 },
      { "a float", -1.5 },
      { "true", true },
      { "false", false },
      { "a table", { a = 1, list = { 1, 2, 3 }, nested = { s = "x" } } },
    }
    for _, row in ipairs(payloads) do
      it("returns " .. row[1] .. " as it was pushed", function()
        local q = make()
        assert.is_number(q:push("t", row[2]))
        local m = q:pop("t")
        assert.are.same(row[2], m.payload)
        q:close()
      end)
    end

    it("pops the messages of a topic in push order", function()
      local q = make()
      for i = 1, 20 do q:push("order", i) end
      for i = 1, 20 do
        local m = q:pop("order")
        assert.are.equal(i, m.payload)
        assert.is_true(q:ack(m))
      end
      assert.is_nil(q:pop("order"))
      q:close()
    end)

    it("keeps topics apart", function()
      local q = make()
      q:push("a", "for a")
      q:push("b", "for b")
      assert.are.equal("for b", q:pop("b").payload)
      assert.are.equal("for a", q:pop("a").payload)
      assert.is_nil(q:pop("a"))
      assert.is_nil(q:pop("b"))
      q:close()
    end)

    it("returns a message with id, topic, payload, attempt 1, headers and enqueued_at", function()
      local q = make()
      local id = q:push("t", { n = 1 }, { headers = { trace = "abc" } })
      local m = q:pop("t")
      assert.are.equal(id, m.id)
      assert.are.equal("t", m.topic)
      assert.are.same({ n = 1 }, m.payload)
      assert.are.equal(1, m.attempt)
      assert.are.same({ trace = "abc" }, m.headers)
      assert.are.equal(1000, m.enqueued_at)
      q:close()
    end)

    it("gives distinct ids", function()
      local q = make()
      local seen = {}
      for _ = 1, 10 do
        local id = q:push("ids", "x")
        assert.is_nil(seen[id])
        seen[id] = true
      end
      q:close()
    end)

    it("stores copies: changing a table after push or after pop changes nothing", function()
      local q = make()
      local v = { n = 1 }
      q:push("copy", v)
      v.n = 2
      local m = q:pop("copy")
      assert.are.equal(1, m.payload.n)
      m.payload.n = 3
      assert.is_true(q:nack(m, true))
      assert.are.equal(1, q:pop("copy").payload.n)
      q:close()
    end)

    it("hides a delayed message until its time", function()
      local q = make()
      q:push("later", "soon", { delay = 10 })
      q:push("later", "now")
      assert.are.equal("now", q:pop("later").payload)
      assert.is_nil(q:pop("later"))
      t = t + 9.5
      assert.is_nil(q:pop("later"))
      t = t + 1
      local m = q:pop("later")
      assert.are.equal("soon", m.payload)
      assert.are.equal(1, m.attempt)
      q:close()
    end)

    it("hides a popped message while its lease runs", function()
      local q = make(5)
      q:push("lease", "m")
      assert.is_not_nil(q:pop("lease"))
      assert.is_nil(q:pop("lease"))
      t = t + 4
      assert.is_nil(q:pop("lease"))
      q:close()
    end)

    it("brings back an unacked message after its lease with attempt + 1", function()
      local q = make(5)
      q:push("lease", "m")
      local first = q:pop("lease")
      t = t + 6
      local again = q:pop("lease")
      assert.are.equal(first.id, again.id)
      assert.are.equal("m", again.payload)
      assert.are.equal(2, again.attempt)
      assert.is_false(q:ack(first))      -- the old lease settles nothing
      assert.is_true(q:ack(again))
      assert.are.equal(0, q:len("lease"))
      q:close()
    end)

    it("removes an acked message for good", function()
      local q = make(5)
      q:push("ack", "m")
      local m = q:pop("ack")
      assert.is_true(q:ack(m))
      assert.is_false(q:ack(m))
      t = t + 60
      assert.is_nil(q:pop("ack"))
      assert.are.equal(0, q:len("ack"))
      q:close()
    end)

    it("requeues on nack(msg, true) with attempt + 1", function()
      local q = make()
      q:push("nack", "m")
      local m = q:pop("nack")
      assert.is_true(q:nack(m, true))
      assert.is_false(q:nack(m, true))
      local again = q:pop("nack")
      assert.are.equal(m.id, again.id)
      assert.are.equal(2, again.attempt)
      assert.is_true(q:nack(again, true))
      assert.are.equal(3, q:pop("nack").attempt)
      q:close()
    end)

    it("requeues after a delay on nack(msg, true, delay)", function()
      local q = make()
      q:push("nack", "m")
      q:nack(q:pop("nack"), true, 10)
      assert.is_nil(q:pop("nack"))
      t = t + 11
      assert.are.equal(2, q:pop("nack").attempt)
      q:close()
    end)

    it("drops a message on nack(msg, false)", function()
      local q = make(5)
      q:push("drop", "m")
      assert.is_true(q:nack(q:pop("drop"), false))
      t = t + 60
      assert.is_nil(q:pop("drop"))
      assert.are.equal(0, q:len("drop"))
      q:close()
    end)

    it("counts ready, delayed and leased messages in len until they are settled", function()
      local q = make()
      assert.are.equal(0, q:len("len"))
      q:push("len", 1)
      q:push("len", 2, { delay = 100 })
      q:push("len", 3)
      q:push("other", 4)
      assert.are.equal(3, q:len("len"))
      local m = q:pop("len")
      assert.are.equal(3, q:len("len"))
      q:ack(m)
      assert.are.equal(2, q:len("len"))
      assert.are.equal(1, q:len("other"))
      q:close()
    end)

    it("returns closed from every call after close", function()
      local q = make()
      q:push("c", "m")
      local m = q:pop("c")
      assert.is_true(q:close())
      assert.is_true(q:close())
      local calls = {
        function() return q:push("c", "x") end,
        function() return q:pop("c") end,
        function() return q:ack(m) end,
        function() return q:nack(m, true) end,
        function() return q:len("c") end,
      }
      for _, call in ipairs(calls) do
        local v, err = call()
        assert.is_nil(v)
        assert.are.equal("closed", err.code)
        assert.is_string(tostring(err))
      end
    end)

    -- { name, call }: misuse raises.
    local misuse = {
      { "a topic that is not a string", function(q) q:push(1, "x") end },
      { "an empty topic", function(q) q:push("", "x") end },
      { "a topic over 1024 bytes", function(q) q:pop(("t"):rep(1025)) end },
      { "a nil payload", function(q) q:push("t", nil) end },
      { "a function payload", function(q) q:push("t", print) end },
      { "a table payload JSON cannot hold", function(q) q:push("t", { f = print }) end },
      { "a negative delay", function(q) q:push("t", "x", { delay = -1 }) end },
      { "a delay that is neither a number nor a duration", function(q) q:push("t", "x", { delay = "soon" }) end },
      { "headers that are not strings", function(q) q:push("t", "x", { headers = { a = 1 } }) end },
      { "opts that are not a table", function(q) q:push("t", "x", 5) end },
      { "ack of a table that did not come from pop", function(q) q:ack({ id = 1 }) end },
      { "nack of nothing", function(q) q:nack(nil, true) end },
      { "len of a number", function(q) q:len(5) end },
    }
    for _, row in ipairs(misuse) do
      it("raises on " .. row[1], function()
        local q = make()
        assert.has_error(function() row[2](q) end)
        q:close()
      end)
    end
  end)
end
