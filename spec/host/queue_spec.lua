-- zever.queue_core: the classic binding of host/queue/ (the memory adapter's engine), driven with
-- a fake clock in nanoseconds.

local core = require "zever.queue_core"

local serial = 0
local function open()
  serial = serial + 1
  return assert(core.open("spec:host:queue:" .. serial))
end

local S = 1e9

describe("zever.queue_core", function()
  it("returns id, lease, attempt, type, enqueued_ns, payload and headers", function()
    local h = open()
    local id = h:push("t", "body", 7, '{"a":"b"}', 0, 123, S)
    local gid, lease, attempt, kind, at, payload, headers = h:pop("t", 10 * S, S)
    assert.are.same({ id, 1, 7, 123, "body", '{"a":"b"}' },
      { gid, attempt, kind, at, payload, headers })
    assert.is_true(lease > 0)
    h:release()
  end)

  it("returns nil headers when the push gave none", function()
    local h = open()
    h:push("t", "x", 1, nil, 0, 0, S)
    local id, _, _, _, _, _, headers = h:pop("t", S, S)
    assert.is_number(id)
    assert.is_nil(headers)
    h:release()
  end)

  it("copies a message larger than the stack buffer out through a second call", function()
    local h = open()
    local big, hdr = ("p"):rep(70000), ("h"):rep(3000)
    h:push("t", big, 1, hdr, 0, 0, S)
    local _, _, _, _, _, payload, headers = h:pop("t", S, S)
    assert.are.equal(big, payload)
    assert.are.equal(hdr, headers)
    assert.is_nil(h:pop("t", S, S))
    h:release()
  end)

  -- { delay in seconds, payload }: delayed messages become visible in deadline order.
  local delayed = { { 5, "e" }, { 1, "a" }, { 3, "c" }, { 2, "b" }, { 4, "d" }, { 0, "now" } }
  it("makes delayed messages visible in the order of their deadlines", function()
    local h = open()
    for _, row in ipairs(delayed) do h:push("t", row[2], 1, nil, row[1] * S, 0, S) end
    local got = {}
    for second = 1, 6 do
      while true do
        local id, lease, _, _, _, payload = h:pop("t", 100 * S, second * S + 1)
        if not id then break end
        got[#got + 1] = payload
        assert.is_true(h:ack(id, lease))
      end
    end
    assert.are.same({ "now", "a", "b", "c", "d", "e" }, got)
    h:release()
  end)

  it("settles only with the current lease token", function()
    local h = open()
    h:push("t", "m", 1, nil, 0, 0, S)
    local id, lease = h:pop("t", 5 * S, S)
    assert.is_false(h:ack(id, lease + 1))
    assert.is_false(h:ack(id + 1, lease))
    local id2, lease2, attempt = h:pop("t", 5 * S, 7 * S)   -- the lease ran out at 6 s
    assert.are.equal(id, id2)
    assert.are.equal(2, attempt)
    assert.is_false(h:ack(id, lease))
    assert.is_false(h:nack(id, lease, true, 0, 7 * S))
    assert.is_true(h:nack(id2, lease2, true, 2 * S, 7 * S))
    assert.is_nil(h:pop("t", 5 * S, 8 * S))
    local _, _, attempt3 = h:pop("t", 5 * S, 9 * S)
    assert.are.equal(3, attempt3)
    h:release()
  end)

  it("keeps the heap ordered when leases are acked out of order", function()
    local h = open()
    local n = 200
    for i = 1, n do h:push("t", tostring(i), 1, nil, 0, 0, S) end
    local leases = {}
    for i = 1, n do
      local id, lease = h:pop("t", (1000 + (i * 37) % n) * S, S)
      leases[i] = { id, lease }
    end
    for i = 1, n, 3 do assert.is_true(h:ack(leases[i][1], leases[i][2])) end
    local left = 0
    for i = 1, n do if (i - 1) % 3 ~= 0 then left = left + 1 end end
    assert.are.equal(left, h:len("t"))
    local back, last = 0, -1
    while true do
      local id, lease = h:pop("t", 10 * S, 5000 * S)
      if not id then break end
      back = back + 1
      assert.is_true(h:ack(id, lease))
      last = id
    end
    assert.are.equal(left, back)
    assert.is_true(last > 0)
    assert.are.equal(0, h:len("t"))
    h:release()
  end)

  it("counts every unsettled message of a topic in len and nothing of other topics", function()
    local h = open()
    h:push("a", "1", 1, nil, 0, 0, S)
    h:push("a", "2", 1, nil, 10 * S, 0, S)
    h:push("b", "3", 1, nil, 0, 0, S)
    assert.are.equal(2, h:len("a"))
    assert.are.equal(1, h:len("b"))
    assert.are.equal(0, h:len("c"))
    h:release()
  end)

  it("refuses an empty topic and one over MAX_TOPIC bytes", function()
    local h = open()
    local id, _, code = h:push("", "x", 1, nil, 0, 0, S)
    assert.is_nil(id)
    assert.are.equal("INVAL", code)
    id, _, code = h:push(("t"):rep(core.MAX_TOPIC + 1), "x", 1, nil, 0, 0, S)
    assert.is_nil(id)
    assert.are.equal("TOOLONG", code)
    h:release()
  end)

  it("raises on a released handle", function()
    local h = open()
    h:release()
    assert.has_error(function() h:len("t") end)
  end)

  it("frees every message when the last reference goes", function()
    local h = open()
    for i = 1, 100 do h:push("t", ("x"):rep(i), 1, nil, i % 2 * S, 0, S) end
    for _ = 1, 10 do h:pop("t", S, S) end
    h:release()                      -- ASan reports a leak if anything is left
  end)
end)
