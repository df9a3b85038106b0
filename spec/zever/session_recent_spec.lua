-- zever.session's recent records: a load whose stored record is the one this front-end last
-- read or wrote copies the data instead of decoding it. What must hold: the copy is exactly what
-- decoding gives, a record changed by another front-end (another worker) is decoded, a handler's
-- change never reaches another load, and the data's JSON is byte for byte the C writer's.

local session = require "zever.session"
local json = require "zever.json"
local cache_memory = require "adapters.cache.memory"

local n = 0
local function name()
  n = n + 1
  return ("recent-%d-%d"):format(n, math.random(1e9))
end

describe("zever.session recent records", function()
  local t, a, b, raw
  local function clock() return t end

  before_each(function()
    t = 1700000000
    local store = name()
    -- a and b: two front-ends on one process-wide table, as two workers have.
    a = session.new{ name = store, clock = clock, idle_timeout = 600, absolute_timeout = 3600 }
    b = session.new{ name = store, clock = clock, idle_timeout = 600, absolute_timeout = 3600 }
    raw = cache_memory.new{ name = "session:" .. store, max_bytes = 64 * 1024 * 1024 }
  end)
  after_each(function()
    a:close()
    b:close()
    raw:close()
  end)

  local function saved(store, data)
    local s = assert(store:create())
    for k, v in pairs(data) do s.data[k] = v end
    return s, assert(store:save(s))
  end

  it("gives each load its own data table, equal to the saved data", function()
    local _, token = saved(a, { user_id = 42, name = "ann", admin = false, gone = json.null })
    local x = assert(a:load(token))
    local y = assert(a:load(token))
    assert.same({ user_id = 42, name = "ann", admin = false, gone = json.null }, x.data)
    assert.not_equal(x.data, y.data)
    x.data.user_id, x.data.extra = 7, "x"           -- a handler's change, not saved
    local z = assert(a:load(token))
    assert.same({ user_id = 42, name = "ann", admin = false, gone = json.null }, z.data)
  end)

  it("sees a record another front-end saved, and the other sees its own", function()
    local s, token = saved(a, { count = 1 })
    assert.equal(1, a:load(token).data.count)      -- a remembers count = 1
    local sb = assert(b:load(token))
    sb.data.count = 2
    assert(b:save(sb))
    assert.equal(2, a:load(token).data.count)      -- a's memory is stale: it decodes
    s.data.count = 3
    t = t + 1
    assert(a:save(s))
    assert.equal(3, b:load(token).data.count)
  end)

  it("decodes a stored record of the remembered length whose bytes differ", function()
    local _, token = saved(a, { role = "user" })
    local rec = raw:get(token)
    assert.equal("user", a:load(token).data.role)  -- a remembers role = "user"
    local forged = rec:gsub('"user"', '"root"')
    assert.equal(#rec, #forged)
    assert(raw:set(token, forged, 600))
    assert.equal("root", a:load(token).data.role)   -- the store's bytes, not the remembered
    assert(raw:set(token, 12345, 600))               -- not a string at all
    assert.is_nil(a:load(token))
  end)

  it("writes the record's times as %d of their milliseconds, at any time", function()
    -- A save writes seconds and three digits of milliseconds apart: the edges of that split.
    for _, at in ipairs{ 0, 0.0005, 0.001, 0.999, 1, 1.0009, 1.05, 59.9999, 1700000000.123,
                         1700000000.0009, 2147483647.999, 2147483648, 2147483648.5, 4e9 + 0.25 } do
      t = at
      local s = assert(a:create())
      s.data.k = 1
      local token = assert(a:save(s))
      local ms = math.floor(at * 1000)
      assert.equal(('{"c":%d,"s":%d,"d":{"k":1}}'):format(ms, ms), raw:get(token))
      assert.equal(ms / 1000, assert(a:load(token)).seen)
    end
  end)

  it("finds nothing for a forged token, however close to a remembered one", function()
    local _, token = saved(a, { user_id = 1 })
    assert.equal(1, a:load(token).data.user_id)     -- remembered
    local last = token:sub(-1)
    local forged = token:sub(1, -2) .. (last == "A" and "B" or "A")
    assert.is_nil(a:load(forged))
    assert.is_nil(a:load(token .. "x"))
    assert.is_nil(a:load(token:sub(1, -2)))
    assert.equal(1, a:load(token).data.user_id)
  end)

  it("finds nothing once the store lost the record, whatever it remembers", function()
    local _, token = saved(a, { k = "v" })
    assert.is_not_nil(a:load(token))
    raw:delete(token)
    assert.is_nil(a:load(token))
    local s2, token2 = saved(a, { k = "v" })
    assert.is_true(b:destroy(assert(b:load(token2))))
    assert.is_nil(a:load(token2))
    assert.is_not_nil(s2)
  end)

  it("expires a remembered session on time", function()
    local _, token = saved(a, { k = 1 })
    assert.is_not_nil(a:load(token))
    t = t + 600
    assert.is_nil(a:load(token))
    assert.is_nil(raw:get(token))                     -- and deleted it from the store
  end)

  it("forgets the old id on regenerate", function()
    local s, token = saved(a, { user = 1 })
    assert.is_not_nil(a:load(token))
    assert.is_true(a:regenerate(s))
    local token2 = assert(a:save(s))
    assert.is_nil(a:load(token))
    assert.equal(1, a:load(token2).data.user)
  end)

  -- Rows { name, data }: data whose pairs are not what decoding its JSON gives, or that holds
  -- tables; each must come back exactly as a fresh decode of the stored record gives it.
  local rows = {
    { "a nested table", { prefs = { theme = "dark" }, n = 1 } },
    { "an array", { roles = json.array{ "a", "b" } } },
    { "a fraction", { ratio = 0.25 } },
    { "an integer of 15 digits", { big = 123456789012345 } },
    { "an integer beyond 2^53", { big = 2 ^ 60 } },
    { "minus zero", { z = -0.0 } },
    { "a string to escape", { s = 'say "hi"\n' } },
    { "invalid UTF-8", { s = "\255\254" } },
    { "valid UTF-8", { s = "J\195\188rgen" } },
    { "a number key", { [1] = "one", two = 2 } },
    { "no data", {} },
  }
  for _, row in ipairs(rows) do
    it("loads data with " .. row[1] .. " as a decode of the stored record gives it", function()
      local s = assert(a:create())
      for k, v in pairs(row[2]) do s.data[k] = v end
      local token = assert(a:save(s))
      local stored = json.decode(raw:get(token))
      for _ = 1, 2 do                               -- the second load may be a copy
        local back = a:load(token)
        if stored then
          assert.same(stored.d, back.data)
          assert.equal(getmetatable(stored.d), getmetatable(back.data))
        else
          assert.is_nil(back)                       -- invalid UTF-8: unreadable, as before
        end
      end
    end)
  end

  it("writes the data's JSON byte for byte as json.encode", function()
    local cases = {
      {}, { a = 1 }, { a = "x", b = true, c = false, d = json.null, e = -42, f = 99999999999999 },
      { ["k\195\169"] = "v\226\130\172" }, { a = 0.5 }, { a = { 1 } }, { a = "\0" },
    }
    for i = 1, 200 do                               -- keys in many hash orders
      local d = {}
      for j = 1, i % 9 do d["k" .. (i * 7 + j) % 23] = (j % 2 == 0) and j * i or ("v" .. j) end
      cases[#cases + 1] = d
    end
    for _, d in ipairs(cases) do
      assert.equal(json.encode(d), (session.encode_data(d)))
    end
  end)

  it("still refuses data json.encode cannot write", function()
    local s = assert(a:create())
    s.data.f = function() end
    local ok, err = a:save(s)
    assert.is_nil(ok)
    assert.equal("invalid", err.code)
    assert.has_error(function() session.encode_data({ x = 0 / 0 }) end)
  end)
end)
