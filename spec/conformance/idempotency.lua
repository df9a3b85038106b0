-- The idempotency battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.idempotency")("memory", function(opts) return store end)
--
-- new(opts) returns a fresh zever.idempotency (front-end) over the adapter with an empty table,
-- opts.ttl and opts.pending_ttl (seconds), and the fake clock opts.clock (a function returning
-- seconds) when the adapter can take one. An adapter that cannot (a remote store's clock)
-- passes { real_clock = true } as the third argument: the rows that move time are skipped
-- there (they would have to sleep).

return function(name, new, caps)
  caps = caps or {}
  -- The runner gives each spec file its own busted environment: use the caller's.
  local env = getfenv(2)
  local describe, it, assert, pending = env.describe, env.it, env.assert, env.pending

  describe("idempotency conformance: " .. name, function()
    local t
    local function clock() return t end
    local function make(opts)
      t = 1000
      opts = opts or {}
      return new{ ttl = opts.ttl or 100, pending_ttl = opts.pending_ttl or 10,
        clock = not caps.real_clock and clock or nil }
    end

    -- A script of steps run against one store; tokens[name] remembers reservations.
    --   { "begin", key, fingerprint, expected[, ttl] }   expected: "reserved", "in_progress",
    --        "key_mismatch", "invalid", or { replay = value }
    --   { "complete", key, result, expected[, token_name] }   expected: true or an error code
    --   { "forget", key[, token_name] }                   always true
    --   { "advance", seconds }
    -- A "reserved" begin stores its token under the key's name, "@" .. key.
    local SHORT = "k"
    local rows = {
      { "reserves an absent key and replays its result to every later begin", {
        { "begin", SHORT, "a", "reserved" },
        { "complete", SHORT, "r1", true },
        { "begin", SHORT, "a", { replay = "r1" } },
        { "begin", SHORT, "a", { replay = "r1" } } } },
      { "answers in_progress while the key is pending", {
        { "begin", SHORT, "a", "reserved" },
        { "begin", SHORT, "a", "in_progress" },
        { "begin", SHORT, "a", "in_progress" } } },
      { "checks the fingerprint before the state of a pending key", {
        { "begin", SHORT, "a", "reserved" },
        { "begin", SHORT, "b", "key_mismatch" } } },
      { "checks the fingerprint of a completed key", {
        { "begin", SHORT, "a", "reserved" },
        { "complete", SHORT, "r", true },
        { "begin", SHORT, "b", "key_mismatch" },
        { "begin", SHORT, "a", { replay = "r" } } } },
      { "keeps keys apart", {
        { "begin", "k1", "a", "reserved" },
        { "begin", "k2", "a", "reserved" },
        { "complete", "k2", "two", true },
        { "begin", "k1", "a", "in_progress" },
        { "begin", "k2", "a", { replay = "two" } } } },
      { "releases a pending key after pending_ttl", {
        { "begin", SHORT, "a", "reserved" },
        { "advance", 9.5 },
        { "begin", SHORT, "a", "in_progress" },
        { "advance", 1 },
        { "begin", SHORT, "b", "reserved" } }, timed = true },
      { "expires a completed result ttl seconds after complete", {
        { "begin", SHORT, "a", "reserved" },
        { "advance", 5 },
        { "complete", SHORT, "r", true },
        { "advance", 99 },
        { "begin", SHORT, "a", { replay = "r" } },
        { "advance", 2 },
        { "begin", SHORT, "a", "reserved" } }, timed = true },
      { "takes a ttl per begin", {
        { "begin", SHORT, "a", "reserved", 5 },
        { "complete", SHORT, "r", true },
        { "advance", 4 },
        { "begin", SHORT, "a", { replay = "r" } },
        { "advance", 2 },
        { "begin", SHORT, "a", "reserved" } }, timed = true },
      { "refuses to complete an expired reservation", {
        { "begin", SHORT, "a", "reserved" },
        { "advance", 11 },
        { "complete", SHORT, "late", "not_found" },
        { "begin", SHORT, "a", "reserved" } }, timed = true },
      { "does not let a stale token complete or release the new holder", {
        { "begin", SHORT, "a", "reserved" },
        { "save", "old" },
        { "advance", 11 },
        { "begin", SHORT, "a", "reserved" },
        { "complete", SHORT, "stale", "not_found", "old" },
        { "forget", SHORT, "old" },
        { "begin", SHORT, "a", "in_progress" },
        { "complete", SHORT, "fresh", true },
        { "begin", SHORT, "a", { replay = "fresh" } } }, timed = true },
      { "refuses to complete an absent key", {
        { "complete", SHORT, "r", "not_found" } } },
      { "refuses to complete a key twice", {
        { "begin", SHORT, "a", "reserved" },
        { "complete", SHORT, "r1", true },
        { "complete", SHORT, "r2", "invalid" },
        { "begin", SHORT, "a", { replay = "r1" } } } },
      { "forgets pending and completed keys, idempotently", {
        { "forget", SHORT },
        { "begin", SHORT, "a", "reserved" },
        { "forget", SHORT },
        { "forget", SHORT },
        { "begin", SHORT, "b", "reserved" },
        { "complete", SHORT, "r", true },
        { "forget", SHORT },
        { "begin", SHORT, "a", "reserved" } } },
      { "accepts a key of 256 bytes and refuses a longer one", {
        { "begin", ("x"):rep(256), "a", "reserved" },
        { "complete", ("x"):rep(256), "r", true },
        { "begin", ("x"):rep(256), "a", { replay = "r" } },
        { "begin", ("x"):rep(257), "a", "invalid" },
        { "complete", ("x"):rep(257), "r", "invalid" },
        { "forget", ("x"):rep(257) } } },
      { "treats an empty fingerprint as a fingerprint", {
        { "begin", SHORT, "", "reserved" },
        { "complete", SHORT, "r", true },
        { "begin", SHORT, "", { replay = "r" } },
        { "begin", SHORT, "a", "key_mismatch" } } },
    }

    for _, row in ipairs(rows) do
      it(row[1], function()
        if row.timed and caps.real_clock then return pending("needs a fake clock") end
        local store = make()
        local tokens, last = {}, nil
        for i, step in ipairs(row[2]) do
          local op, where = step[1], row[1] .. ": step " .. i
          if op == "advance" then
            t = t + step[2]
          elseif op == "save" then
            tokens[step[2]] = last
          elseif op == "forget" then
            assert.is_true(store:forget(step[2], step[3] and tokens[step[3]]), where)
          elseif op == "complete" then
            local ok, err = store:complete(step[2], step[3], step[5] and tokens[step[5]] or nil)
            if step[4] == true then
              assert.is_true(ok, where .. ": " .. tostring(err))
            else
              assert.is_nil(ok, where)
              assert.are.equal(step[4], err.code, where)
            end
          else
            local r, err = store:begin(step[2], { fingerprint = step[3], ttl = step[5] })
            local want = step[4]
            if want == "reserved" then
              assert.is_table(r, where .. ": " .. tostring(err))
              assert.is_false(r.replay, where)
              assert.is_not_nil(r.token, where)
              last = r.token
            elseif type(want) == "table" then
              assert.is_table(r, where .. ": " .. tostring(err))
              assert.is_true(r.replay, where)
              assert.are.same(want.replay, r.result, where)
            else
              assert.is_nil(r, where)
              assert.are.equal(want, err.code, where)
              assert.is_string(tostring(err))
            end
          end
        end
        store:close()
      end)
    end

    -- { name, result }: what complete stores comes back equal (a copy) on replay.
    local values = {
      { "a string with every byte value", (function()
        local b = {}
        for i = 0, 255 do b[#b + 1] = string.char(i) end
        return table.concat(b)
      end)() },
      { "an empty string", "" },
      { "a large string", ("0123456789abcdef"):rep(4096) },
      { "an integer", 42 },
      { "a fraction", 0.1 },
      { "true", true },
      { "false", false },
      { "a table", { status = 201, body = { id = 7, tags = { "a", "b" } } } },
    }
    for _, row in ipairs(values) do
      it("replays " .. row[1] .. " as it was completed", function()
        local store = make()
        local r = assert(store:begin("v", { fingerprint = "f" }))
        assert.is_true(store:complete("v", row[2], r.token))
        local again = assert(store:begin("v", { fingerprint = "f" }))
        assert.is_true(again.replay)
        assert.are.same(row[2], again.result)
        store:close()
      end)
    end

    it("hands out a copy of a table result", function()
      local store = make()
      local r = assert(store:begin("c"))
      local value = { n = 1 }
      assert.is_true(store:complete("c", value, r.token))
      value.n = 2
      local a = assert(store:begin("c")).result
      a.n = 3
      assert.are.equal(1, assert(store:begin("c")).result.n)
      store:close()
    end)

    it("returns closed after close, and close is idempotent", function()
      local store = make()
      assert.is_true(store:close())
      assert.is_true(store:close())
      for _, call in ipairs({
        function() return store:begin("k") end,
        function() return store:complete("k", "r") end,
        function() return store:forget("k") end,
      }) do
        local ok, err = call()
        assert.is_nil(ok)
        assert.are.equal("closed", err.code)
      end
    end)

    it("raises on misuse", function()
      local store = make()
      assert.has_error(function() store:begin(1) end)
      assert.has_error(function() store:begin("k", "fp") end)
      assert.has_error(function() store:begin("k", { fingerprint = 1 }) end)
      assert.has_error(function() store:begin("k", { ttl = 0 }) end)
      assert.has_error(function() store:begin("k", { ttl = -1 }) end)
      assert.has_error(function() store:begin("k", { pending_ttl = 0 / 0 }) end)
      assert.has_error(function() store:complete("k", function() end) end)
      assert.has_error(function() store:complete("k", nil) end)
      assert.has_error(function() store:forget(false) end)
      store:close()
    end)
  end)
end
