-- zever.idempotency_core: the classic binding of host/idempotency/ (the fallback path of the
-- memory adapter), driven with a fake clock in nanoseconds, and the request fingerprint.

local core = require "zever.idempotency_core"

local serial = 0
local function open(max_keys, max_bytes)
  serial = serial + 1
  return assert(core.open("spec:host:idempotency:" .. serial, max_keys or 100, max_bytes or 1e6))
end

local S = 1e9

describe("zever.idempotency_core", function()
  -- { name, { { op, args..., expected... } ... } } with times in seconds; begin's ttl is 100 s
  -- and its pending ttl 10 s.
  --   { "begin", key, fp, now, status[, raw] }   { "complete", key, raw, now, ok_or_code }
  --   { "forget", key, now, existed }
  local rows = {
    { "reserves, answers pending, then replays", {
      { "begin", "k", "f", 1, "reserved" },
      { "begin", "k", "f", 2, "pending" },
      { "complete", "k", "r", 3, true },
      { "begin", "k", "f", 4, "replay", "r" } } },
    { "compares the fingerprint first", {
      { "begin", "k", "f", 1, "reserved" },
      { "begin", "k", "g", 1, "mismatch" },
      { "complete", "k", "r", 1, true },
      { "begin", "k", "g", 1, "mismatch" },
      { "begin", "k", "ff", 1, "mismatch" } } },
    { "expires a reservation after the pending ttl", {
      { "begin", "k", "f", 1, "reserved" },
      { "begin", "k", "f", 10.999, "pending" },
      { "begin", "k", "g", 11, "reserved" },
      { "complete", "k", "r", 12, true } } },
    { "expires a result ttl after complete, not after begin", {
      { "begin", "k", "f", 1, "reserved" },
      { "complete", "k", "r", 9, true },
      { "begin", "k", "f", 108.9, "replay", "r" },
      { "begin", "k", "f", 109, "reserved" } } },
    { "answers NOTFOUND and CONFLICT from complete", {
      { "complete", "k", "r", 1, "NOTFOUND" },
      { "begin", "k", "f", 1, "reserved" },
      { "complete", "k", "r", 1, true },
      { "complete", "k", "r", 1, "CONFLICT" } } },
    { "forgets live entries and says whether one was there", {
      { "forget", "k", 1, false },
      { "begin", "k", "f", 1, "reserved" },
      { "forget", "k", 1, true },
      { "begin", "k", "f", 1, "reserved" },
      { "forget", "k", 20, false } } },
  }
  for _, row in ipairs(rows) do
    it(row[1], function()
      local h = open()
      for i, step in ipairs(row[2]) do
        local where = row[1] .. ": step " .. i
        if step[1] == "begin" then
          local status, raw = h:begin(step[2], step[3], 100 * S, 10 * S, step[4] * S)
          assert.are.equal(step[5], status, where)
          if step[6] then assert.are.equal(step[6], raw, where) end
        elseif step[1] == "complete" then
          local ok, _, code = h:complete(step[2], 0, step[3], 1, step[4] * S)
          if step[5] == true then assert.is_true(ok, where) else assert.are.equal(step[5], code, where) end
        else
          assert.are.equal(step[4], h:forget(step[2], 0, step[3] * S), where)
        end
      end
      h:release()
    end)
  end

  it("returns the caller's type tag and results larger than its stack buffer", function()
    local h = open()
    local big = ("abcdefgh"):rep(1000)
    local status, token = h:begin("big", "", 0, 0, S)
    assert.are.equal("reserved", status)
    assert.is_true(h:complete("big", token, big, 7, S))
    local st, raw, kind = h:begin("big", "", 0, 0, 2 * S)
    assert.are.equal("replay", st)
    assert.are.equal(big, raw)
    assert.are.equal(7, kind)
    h:release()
  end)

  it("hands out distinct tokens and checks them", function()
    local h = open()
    local _, t1 = h:begin("a", "", 0, S, S)
    local _, t2 = h:begin("a", "", 0, S, 3 * S)        -- the first expired at 2 s
    assert.are_not.equal(t1, t2)
    assert.are.equal("NOTFOUND", select(3, h:complete("a", t1, "x", 1, 3 * S)))
    assert.is_false(h:forget("a", t1, 3 * S))
    assert.is_true(h:complete("a", t2, "x", 1, 3 * S))
    h:release()
  end)

  it("returns TOOLONG for a key over 256 bytes", function()
    local h = open()
    assert.are.equal("reserved", h:begin(("a"):rep(256), "", 0, 0, S))
    local ok, _, code = h:begin(("a"):rep(257), "", 0, 0, S)
    assert.is_nil(ok)
    assert.are.equal("TOOLONG", code)
    h:release()
  end)

  it("charges entries against max_bytes and counts pending ones", function()
    local h = open(10, 1e6)
    h:begin("a", "fp", 0, 0, S)
    local _, token = h:begin("b", "fp", 0, 0, S)
    h:complete("b", token, ("x"):rep(100), 1, S)
    local st = h:stats()
    assert.are.equal(2, st.entries)
    assert.are.equal(1, st.pending)
    assert.are.equal(2 * (core.OVERHEAD + 1 + 2) + 100, st.bytes)
    h:clear()
    assert.are.equal(0, h:stats().bytes)
    assert.are.equal(0, h:stats().entries)
    h:release()
  end)

  it("refuses bounds of zero and other bounds under an open name", function()
    local ok, _, code = core.open("spec:host:idempotency:zero", 0, 10)
    assert.is_nil(ok)
    assert.are.equal("INVAL", code)
    local a = assert(core.open("spec:host:idempotency:same", 5, 100))
    local b, _, code2 = core.open("spec:host:idempotency:same", 6, 100)
    assert.is_nil(b)
    assert.are.equal("CONFLICT", code2)
    a:release()
  end)

  it("raises on a released handle", function()
    local h = open()
    h:release()
    assert.has_error(function() h:begin("k", "", 0, 0) end)
  end)
end)

describe("zever.idempotency_core.fingerprint", function()
  local fp = core.fingerprint
  it("is 32 hex digits and stable", function()
    local a = fp("POST", "/charges", "", "amount=10")
    assert.are.equal(32, #a)
    assert.is_truthy(a:match("^[0-9a-f]+$"))
    assert.are.equal(a, fp("POST", "/charges", "", "amount=10"))
  end)

  -- { name, parts a, parts b }: pairs that must differ
  local rows = {
    { "moves a byte between parts", { "ab", "c" }, { "a", "bc" } },
    { "differs in the last byte of a long body", { ("x"):rep(1000) .. "a" }, { ("x"):rep(1000) .. "b" } },
    { "differs by a trailing NUL", { "a" }, { "a\0" } },
    { "differs by an empty part", { "a" }, { "a", "" } },
    { "differs in the method", { "POST", "/x" }, { "PATCH", "/x" } },
    { "swaps two words", { "12345678abcdefgh" }, { "abcdefgh12345678" } },
  }
  for _, row in ipairs(rows) do
    it("changes when one " .. row[1], function()
      assert.are_not.equal(fp(unpack(row[2])), fp(unpack(row[3])))
    end)
  end

  it("spreads 20000 near-identical inputs over distinct values", function()
    local seen = {}
    for i = 1, 20000 do
      local v = fp("POST", "/orders", "", '{"n":' .. i .. "}")
      assert.is_nil(seen[v])
      seen[v] = true
    end
  end)
end)
