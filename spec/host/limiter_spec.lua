-- zever.limiter_core: the classic binding of host/limiter/ (the fallback path of the memory
-- adapter), driven with a fake clock in nanoseconds.

local core = require "zever.limiter_core"

local serial = 0
local function open(rate, burst, max, idle)
  serial = serial + 1
  return assert(core.open("spec:host:limiter:" .. serial, rate, burst, max or 100, idle or 0))
end

local S = 1e9

describe("zever.limiter_core", function()
  -- { name, rate, burst, { { cost, now_s, allowed, remaining, retry_after } ... } }
  local rows = {
    { "drains and refills a bucket", 2, 2, {
      { 1, 1, true, 1, 0 }, { 1, 1, true, 0, 0 }, { 1, 1, false, 0, 0.5 },
      { 1, 1.5, true, 0, 0 }, { 0, 10, true, 2, 0 } } },
    { "charges a cost above burst as burst", 1, 3, {
      { 10, 1, true, 0, 0 }, { 10, 1, false, 0, 3 } } },
    { "never refills with rate 0", 0, 1, {
      { 1, 1, true, 0, 0 }, { 1, 1000, false, 0, math.huge } } },
  }
  for _, row in ipairs(rows) do
    it(row[1], function()
      local h = open(row[2], row[3])
      for i, call in ipairs(row[4]) do
        local allowed, remaining, retry = h:allow("k", call[1], call[2] * S)
        assert.are.equal(call[3], allowed, "call " .. i)
        assert.is_true(math.abs(call[4] - remaining) < 1e-6, "remaining of call " .. i)
        assert.is_true(retry == call[5] or math.abs(call[5] - retry) < 1e-6, "retry of call " .. i)
      end
      h:release()
    end)
  end

  it("returns TOOLONG for a key over 256 bytes", function()
    local h = open(1, 1)
    assert.is_true((h:allow(("a"):rep(256), 1, S)))
    local ok, _, code = h:allow(("a"):rep(257), 1, S)
    assert.is_nil(ok)
    assert.are.equal("TOOLONG", code)
    h:release()
  end)

  it("refuses bad options and conflicting reopens", function()
    local ok, _, code = core.open("spec:host:limiter:bad", 1, 0, 10, 0)
    assert.is_nil(ok)
    assert.are.equal("INVAL", code)
    local h = open(1, 2)
    local again, _, code2 = core.open("spec:host:limiter:" .. serial, 1, 3, 100, 0)
    assert.is_nil(again)
    assert.are.equal("CONFLICT", code2)
    h:release()
  end)

  it("keeps the table bound exactly", function()
    local h = open(1, 1, 10)
    for i = 1, 100 do h:allow("k" .. i, 1, i * S) end
    local st = h:stats()
    assert.are.equal(10, st.entries)
    assert.are.equal(90, st.evictions)
    h:release()
  end)

  it("evicts the keys not used since the table filled, never one used since", function()
    -- rate 0: a key's remaining says whether it is the old entry (0) or a fresh one (2). The
    -- hits only mark entries (a lazy LRU): the scan settles the marked tails of each stripe.
    local h = open(0, 2, 640)
    for i = 1, 640 do h:allow("k" .. i, 1, i * S) end
    for i = 1, 640, 2 do h:allow("k" .. i, 1, (640 + i) * S) end
    for i = 1, 320 do h:allow("n" .. i, 1, (2000 + i) * S) end
    assert.are.equal(320, h:stats().evictions)
    for i = 1, 640, 2 do
      local _, remaining = h:allow("k" .. i, 0, 3000 * S)
      assert.are.equal(0, remaining, "k" .. i)
    end
    assert.are.equal(320, h:stats().evictions)
    h:release()
  end)

  it("sweeps the idle keys behind a key used since it was listed", function()
    local h = open(0, 2, 1000, 10)     -- idle 10 s; rate 0: a kept odd key has 0 left
    for i = 1, 200 do h:allow("k" .. i, 1, S) end
    for i = 1, 200, 2 do h:allow("k" .. i, 1, 8 * S) end
    local removed, more = h:sweep(100000, 12 * S)
    assert.are.equal(100, removed)     -- every even key, idle 11 s; no odd one, idle 4 s
    assert.is_false(more)
    assert.are.equal(100, h:stats().entries)
    for i = 1, 200, 2 do
      local _, remaining = h:allow("k" .. i, 0, 12 * S)
      assert.are.equal(0, remaining, "k" .. i .. " kept its bucket")
    end
    assert.are.equal(100, h:stats().entries)
    h:release()
  end)

  it("does not sweep a key before its bucket could have refilled", function()
    local h = open(0.1, 5, 100, 1)     -- idle 1 s, but a refill takes 50 s
    h:allow("k", 5, S)
    assert.are.equal(0, (h:sweep(1000, 10 * S)))
    assert.are.equal(1, (h:sweep(1000, 52 * S)))
    h:release()
  end)

  it("raises on a released handle", function()
    local h = open(1, 1)
    h:release()
    h:release()
    assert.has_error(function() h:allow("k", 1) end)
  end)
end)
