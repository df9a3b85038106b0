-- The session battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.session")("memory", function(opts) return sessions end[, caps])
--
-- new(opts) returns a fresh zever.session (front-end) over the adapter, with an empty store and
-- opts passed to the front-end (clock, idle_timeout, absolute_timeout). Time is the injected
-- clock: expiry is decided by the front-end from the record's own timestamps, so every
-- adapter, remote ones included, runs the same rows without sleeping. caps.cookie says the
-- adapter keeps nothing server-side (a token seen before stays valid until it expires).

return function(name, new, caps)
  caps = caps or {}
  local env = getfenv(2)
  local describe, it, assert, before_each, after_each =
    env.describe, env.it, env.assert, env.before_each, env.after_each

  describe("session conformance: " .. name, function()
    local t, store
    local function clock() return t end
    before_each(function()
      t = 1700000000
      store = new{ clock = clock, idle_timeout = 600, absolute_timeout = 3600 }
    end)
    after_each(function() store:close() end)

    local function saved(data)
      local s = assert(store:create())
      for k, v in pairs(data or {}) do s.data[k] = v end
      return s, assert(store:save(s))
    end

    it("finds nothing for an unknown, empty or forged token", function()
      for _, token in ipairs({ "", "x", string.rep("A", 43), string.rep("z", 5000), "\0\1\2",
        "a b;c" }) do
        assert.is_nil(store:load(token))
      end
      local _, token = saved({ a = 1 })
      local forged = token:sub(1, -2) .. (token:sub(-1) == "A" and "B" or "A")
      assert.is_nil(store:load(forged))
    end)

    it("round-trips the data of a saved session", function()
      local data = { user_id = 42, name = "J\195\188rgen \"q\" \0 ;", admin = false, ratio = 0.25,
        roles = { "a", "b" }, prefs = { theme = "dark", nested = { deep = true } } }
      local s, token = saved(data)
      local back = assert(store:load(token))
      assert.same(data, back.data)
      assert.equal(s.created, back.created)
    end)

    it("keeps separate sessions apart", function()
      local _, a = saved({ who = "a" })
      local _, b = saved({ who = "b" })
      assert.not_equal(a, b)
      assert.equal("a", store:load(a).data.who)
      assert.equal("b", store:load(b).data.who)
    end)

    it("saves changes under the same session", function()
      local s, token = saved({ n = 1 })
      s.data.n = 2
      local token2 = assert(store:save(s))
      assert.equal(2, store:load(token2).data.n)
      if not caps.cookie then
        assert.equal(token, token2)
        assert.equal(2, store:load(token).data.n)
      end
    end)

    it("expires after idle_timeout without use, and a use pushes the deadline", function()
      local s, token = saved({ a = 1 })
      t = t + 599
      assert.is_not_nil(store:load(token))
      token = assert(store:save(s))                      -- a use: seen again now
      t = t + 599
      local back = store:load(token)
      assert.is_not_nil(back)
      t = t + 600
      assert.is_nil(store:load(token))                   -- expired = not found
    end)

    it("expires after absolute_timeout however often it is used", function()
      local s, token = saved({ a = 1 })
      for _ = 1, 7 do
        t = t + 500
        s = assert(store:load(token), "used within idle")
        token = assert(store:save(s))
      end
      t = t + 500                                          -- 4000 s after creation
      assert.is_nil(store:load(token))
      local err = select(2, store:save(s))
      assert.equal("expired", err.code)
    end)

    it("forgets a destroyed session", function()
      local s, token = saved({ a = 1 })
      assert.is_true(store:destroy(s))
      assert.same({}, s.data)
      if not caps.cookie then assert.is_nil(store:load(token)) end
    end)

    it("gives a regenerated session a new token and keeps its data", function()
      local s, token = saved({ user = 7 })
      assert.is_true(store:regenerate(s))
      local token2 = assert(store:save(s))
      assert.not_equal(token, token2)
      assert.equal(7, store:load(token2).data.user)
      if not caps.cookie then assert.is_nil(store:load(token)) end   -- the old id is gone
    end)

    it("refuses data that is not JSON-encodable with code invalid", function()
      local s = assert(store:create())
      s.data.f = function() end
      local ok, err = store:save(s)
      assert.is_nil(ok)
      assert.equal("invalid", err.code)
    end)

    it("returns closed after close and raises on misuse", function()
      local s = assert(store:create())
      assert.has_error(function() store:load(42) end, "session:load: token must be a string")
      assert.has_error(function() store:save("x") end)
      assert.is_true(store:close())
      assert.equal("closed", select(2, store:load("x")).code)
      assert.equal("closed", select(2, store:save(s)).code)
    end)
  end)
end
