-- zever.json: golden rows for the codec (host/json/ through zever.json): what decoding accepts
-- and rejects (RFC 8259 and nothing else), what encoding writes (exact integers, arrays that
-- stay arrays), and the round trips the framework relies on.
local json = require "zever.json"
local errors = require "zever.errors"
local ffi = require "ffi"

describe("zever.json", function()
  describe("decode", function()
    -- { name, input, the value re-encoded }
    local accept = {
      { "an integer", "[1]", "[1]" },
      { "2^53 - 1 exactly", '{"id":9007199254740991}', '{"id":9007199254740991}' },
      { "an int64 beyond 2^53 exactly", "[9007199254740993]", "[9007199254740993]" },
      { "the int64 extremes", "[9223372036854775807,-9223372036854775808]",
        "[9223372036854775807,-9223372036854775808]" },
      { "zero and negative zero", "[0,-0]", "[0,0]" },
      { "a fraction", "[0.1]", "[0.1]" },
      { "an exponent", "[1e2,1E-2,-2.5e+3]", "[100,0.01,-2500]" },
      { "a tiny number (underflows to a subnormal, not an error)", "[1e-320]", "[9.99988867182683e-321]" },
      { "an empty array", "[]", "[]" },
      { "an empty array in an object", '{"a":[]}', '{"a":[]}' },
      { "an empty object", "{}", "{}" },
      { "nested empties", "[[],{},[[]]]", "[[],{},[[]]]" },
      { "whitespace everywhere", ' \t\r\n[ 1 , { "a" : true } ] \n', '[1,{"a":true}]' },
      { "a top-level string", '"x"', '"x"' },
      { "a top-level number", "42", "42" },
      { "literals", "[true,false,null]", "[true,false,null]" },
      { "escapes", '["\\"\\\\\\/\\b\\f\\n\\r\\t"]', '["\\"\\\\/\\b\\f\\n\\r\\t"]' },
      { "a \\u escape", '["\\u00e9\\u20ac"]', '["é€"]' },
      { "a surrogate pair", '["\\ud83d\\ude00"]', '["😀"]' },
      { "raw UTF-8", '["é€😀"]', '["é€😀"]' },
      { "DEL unescaped", '["\127"]', '["\127"]' },
      { "a duplicate key (the last wins)", '{"a":1,"a":2}', '{"a":2}' },
    }
    for _, row in ipairs(accept) do
      it("accepts " .. row[1], function()
        local v, err = json.decode(row[2])
        assert.is_nil(err)
        assert.equal(row[3], json.encode(v))
      end)
    end

    -- { name, input, cause, byte }
    local reject = {
      { "NaN", "[NaN]", "unexpected character", 2 },
      { "Infinity", "[Infinity]", "unexpected character", 2 },
      { "-Infinity", "[-Infinity]", "invalid number", 2 },
      { "a hexadecimal number", "[0x42]", "invalid number", 2 },
      { "a leading zero", "[012]", "invalid number", 2 },
      { "a negative leading zero", "[-01]", "invalid number", 2 },
      { "a leading plus", "[+1]", "unexpected character", 2 },
      { "a trailing dot", "[1.]", "invalid number", 2 },
      { "a leading dot", "[.5]", "unexpected character", 2 },
      { "an exponent without digits", "[1e]", "invalid number", 2 },
      { "a lone minus", "[-]", "invalid number", 2 },
      { "a number too large for a double", "[1e999]", "number too large", 2 },
      { "an integer too large for a double", "[" .. string.rep("9", 400) .. "]", "number too large", 2 },
      { "a raw newline in a string", '["a\nb"]', "unescaped control character in string", 4 },
      { "a raw NUL in a string", '["a\0b"]', "unescaped control character in string", 4 },
      { "a raw tab in a string", '["a\tb"]', "unescaped control character in string", 4 },
      { "an unknown escape", '["\\x41"]', "invalid escape in string", 3 },
      { "a short \\u escape", '["\\u12"]', "invalid escape in string", 3 },
      { "a lone high surrogate", '["\\ud800"]', "unpaired surrogate in \\u escape", 3 },
      { "a lone low surrogate", '["\\udc00"]', "unpaired surrogate in \\u escape", 3 },
      { "invalid UTF-8", '["\255"]', "invalid UTF-8", 3 },
      { "an overlong UTF-8 form", '["\192\175"]', "invalid UTF-8", 3 },
      { "a UTF-8 surrogate", '["\237\160\128"]', "invalid UTF-8", 3 },
      { "trailing garbage", "[1] x", "unexpected data after the value", 5 },
      { "two values", "1 2", "unexpected data after the value", 3 },
      { "a trailing comma in an array", "[1,]", "unexpected character", 4 },
      { "a trailing comma in an object", '{"a":1,}', "unexpected character", 8 },
      { "a missing colon", '{"a" 1}', "unexpected character", 6 },
      { "a key that is not a string", "{a:1}", "unexpected character", 2 },
      { "a single-quoted string", "['a']", "unexpected character", 2 },
      { "a truncated literal", "tru", "unexpected character", 1 },
      { "a literal glued to a word", "[truex]", "unexpected character", 6 },
      { "an unclosed array", "[1", "unexpected end of input", 3 },
      { "an unclosed string", '"abc', "unexpected end of input", 5 },
      { "an empty text", "", "empty input", 1 },
      { "only whitespace", "  ", "empty input", 3 },
      { "a comment", "[1] // x", "unexpected data after the value", 5 },
      { "a byte order mark", "\239\187\191[]", "unexpected character", 1 },
      { "nesting deeper than 1000", string.rep("[", 1001) .. string.rep("]", 1001), "nested too deep", 1001 },
    }
    for _, row in ipairs(reject) do
      it("rejects " .. row[1], function()
        local v, err = json.decode(row[2])
        assert.is_nil(v)
        assert.is_true(errors.is(err, "syntax"))
        assert.equal(row[3] .. " at byte " .. row[4], err.message)
        assert.equal(row[4], err.offset)
      end)
    end

    it("accepts nesting of exactly 1000", function()
      local v = json.decode(string.rep("[", 1000) .. string.rep("]", 1000))
      assert.is_true(json.is_array(v))
    end)

    it("returns nil, err for a value that is not a string", function()
      local v, err = json.decode(42)
      assert.is_nil(v)
      assert.is_true(errors.is(err, "invalid"))
    end)

    it("gives integers beyond 2^53 as int64_t cdata and smaller ones as numbers", function()
      local v = json.decode("[9007199254740992,9007199254740993,-9007199254740993]")
      assert.equal("number", type(v[1]))
      assert.is_true(ffi.istype("int64_t", v[2]))
      assert.is_true(v[2] == 9007199254740993LL)
      assert.is_true(v[3] == -9007199254740993LL)
    end)

    it("marks every decoded array, so an emptied one still encodes as []", function()
      local v = json.decode('{"a":[1]}')
      assert.is_true(json.is_array(v.a))
      v.a[1] = nil
      assert.equal('{"a":[]}', json.encode(v))
    end)
  end)

  describe("encode", function()
    local rows = {
      { "an integer", { id = 42 }, '{"id":42}' },
      { "2^53 - 1 in full", { id = 9007199254740991 }, '{"id":9007199254740991}' },
      { "a 15-digit integer in full", { n = 123456789012345 }, '{"n":123456789012345}' },
      { "a negative integer", { n = -7 }, '{"n":-7}' },
      { "a fraction in its shortest exact form", { x = 0.1 }, '{"x":0.1}' },
      { "a third", { x = 1 / 3 }, '{"x":0.3333333333333333}' },
      { "a large double", { x = 1e300 }, '{"x":1e+300}' },
      { "negative zero", { z = -0.0 }, '{"z":-0}' },
      { "an int64_t", { id = ffi.new("int64_t", 9007199254740993LL) }, '{"id":9007199254740993}' },
      { "a negative int64_t", { id = -9223372036854775807LL - 1 }, '{"id":-9223372036854775808}' },
      { "a uint64_t", { id = 18446744073709551615ULL }, '{"id":18446744073709551615}' },
      { "a string with a slash, unescaped", { p = "/a/b" }, '{"p":"/a/b"}' },
      { "a string with a quote", { q = 'a"b' }, '{"q":"a\\"b"}' },
      { "control bytes", { c = "\0\1\n\t\31" }, '{"c":"\\u0000\\u0001\\n\\t\\u001f"}' },
      { "a control byte in a key", { ["k\1"] = 1 }, '{"k\\u0001":1}' },
      { "UTF-8 as it is", { u = "é😀" }, '{"u":"é😀"}' },
      { "null", { n = json.null }, '{"n":null}' },
      { "an array", { 1, 2, 3 }, "[1,2,3]" },
      { "an array with a hole", { 1, nil, 3 }, "[1,null,3]" },
      { "an empty table as an object", {}, "{}" },
      { "json.array() as []", json.array(), "[]" },
      { "json.array{} in an object", { a = json.array {} }, '{"a":[]}' },
      { "json.object() as {}", json.object(), "{}" },
      { "a table with integer keys marked as an object", json.object { [1] = "a" }, '{"1":"a"}' },
      { "numeric keys of a mixed table as strings", { [1] = 1, x = 2 }, nil },
    }
    for _, row in ipairs(rows) do
      it("writes " .. row[1], function()
        local got = json.encode(row[2])
        if row[3] then
          assert.equal(row[3], got)
        else
          assert.same(json.decode(got), { ["1"] = 1, x = 2 })
        end
      end)
    end

    it("writes every key of a large object, each once", function()
      local t = {}
      for i = 1, 40 do t["k" .. i] = i % 3 == 0 and ("v" .. i) or i end
      assert.same(t, json.decode(json.encode(t)))
    end)

    local raises = {
      { "NaN", { x = 0 / 0 }, "cannot encode NaN" },
      { "Infinity", { x = math.huge }, "cannot encode Infinity" },
      { "a function", { f = print }, "cannot encode a function" },
      { "a cycle", nil, "nested too deep" },
      { "a sparse array", { [1] = 1, [100] = 2 }, "sparse array" },
      { "a pointer cdata", { p = ffi.new("char[1]") }, "cannot encode cdata" },
      { "a boolean key", { [true] = 1 }, "table key of type boolean" },
    }
    for _, row in ipairs(raises) do
      it("raises on " .. row[1], function()
        local v = row[2]
        if not v then
          v = {}
          v.self = v
        end
        local ok, err = pcall(json.encode, v)
        assert.is_false(ok)
        assert.truthy(tostring(err):find(row[3], 1, true))
      end)
    end
  end)

  describe("array and object", function()
    it("mark a given table and return it", function()
      local t = { 1 }
      assert.equal(t, json.array(t))
      assert.is_true(json.is_array(t))
      assert.equal(t, json.object(t))
      assert.is_false(json.is_array(t))
    end)

    it("refuse a table that has another metatable", function()
      assert.has_error(function() json.array(setmetatable({}, {})) end,
        "json.array: the table already has a metatable")
    end)
  end)
end)

describe("docs/json.md", function()
  it("runs its first example as written", function()
    local f = assert(io.open(require("zever.sys").home() .. "/docs/json.md", "rb"))
    local text = f:read("*a")
    f:close()
    local code = assert(text:match("```lua\n(.-)```"))
    local printed = {}
    local env = setmetatable({ print = function(...) printed[#printed + 1] = tostring((...)) end },
      { __index = _G })
    local fn = assert(loadstring(code, "docs/json.md"))
    setfenv(fn, env)
    fn()
    assert.are.same({ "json: syntax: unexpected character at byte 2" }, printed)
  end)
end)

describe("lists the batteries return", function()
  local zdb = require "zever.db"
  local db

  before_each(function() db = assert(zdb.open("sqlite::memory:")) end)
  after_each(function() db:close() end)

  it("encode as [] when empty: search hits", function()
    local s = require("zever.search").wrap(assert(require("adapters.search.db").new(db)))
    assert(s:index{ id = "a", content = "the quick brown fox" })
    assert.are.equal("[]", json.encode(assert(s:search("zebra")).hits))
    assert.are.equal("[]", json.encode(assert(s:search("   ")).hits))
  end)

  it("encode as [] when empty: vector matches", function()
    local v = require("zever.vectors").wrap(assert(require("adapters.vectors.db").new(db)))
    assert.are.equal("[]", json.encode(assert(v:query({ 1, 0, 0 }, 3))))
  end)
end)

describe("batteries that store JSON", function()
  local VALUE = '{"id":9007199254740991,"big":9007199254740993,"a":[],"o":{}}'
  local function name(prefix) return prefix .. tostring({}):match("0x%x+") end
  local function same_json(v)
    local back = json.decode(json.encode(v))
    assert.are.equal(9007199254740991, back.id)
    assert.is_true(back.big == 9007199254740993LL)
    assert.are.equal("[]", json.encode(back.a))
    assert.are.equal("{}", json.encode(back.o))
  end

  it("keep integers and empty arrays exact: queue (memory and db)", function()
    local queue = require "zever.queue"
    local db = assert(require("zever.db").open("sqlite::memory:"))
    for _, q in ipairs { queue.new { name = name("jq") },
      queue.wrap(assert(require("adapters.queue.db").new(db, { sweep_interval = 0 }))) } do
      assert(q:push("t", json.decode(VALUE)))
      local msg = assert(q:pop("t"))
      same_json(msg.payload)
    end
    db:close()
  end)

  it("keep integers and empty arrays exact: idempotency results", function()
    local idem = require("zever.idempotency").wrap(require("adapters.idempotency.memory").new {
      name = name("ji") })
    local r = assert(idem:begin("k", { fingerprint = "f" }))
    assert(idem:complete("k", json.decode(VALUE), r.token))
    r = assert(idem:begin("k", { fingerprint = "f" }))
    assert.is_true(r.replay)
    same_json(r.result)
  end)

  it("keep integers and empty arrays exact: cache (db)", function()
    local db = assert(require("zever.db").open("sqlite::memory:"))
    local c = require("zever.cache").wrap(assert(require("adapters.cache.db").new(db)))
    assert(c:set("k", json.decode(VALUE), 60))
    same_json(c:get("k"))
    db:close()
  end)
end)

describe("the scheduler's list", function()
  it("encodes as [] when nothing is scheduled", function()
    local lock = require("adapters.scheduler.memory").new { name = "json" .. tostring({}):match("0x%x+") }
    local s = require("zever.scheduler").new(lock, { jobs = function() return {} end,
      clock = function() return 0 end })
    assert.are.equal("[]", json.encode(s:list()))
  end)
end)

describe("zever.json encode's small-object path", function()
  -- The Lua fast path for objects of up to 8 keys must write what the C writer writes, byte for
  -- byte; random objects over keys and values chosen to sit on both sides of every rule.
  local KEYS = { "id", "name", "ok", "a b", "q\"uote", "back\\slash", "ctl\1", "del\127", "é", "",
    "randomNumber", "message", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9" }
  local function random_string(rnd)
    local n, b = rnd(0, 6), {}
    for i = 1, n do b[i] = string.char(rnd(0, 255)) end
    return table.concat(b)
  end
  local function random_value(rnd)
    local pick = rnd(1, 13)
    if pick == 1 then return rnd(-1000, 1000) end
    if pick == 2 then return rnd(0, 1) == 1 and 99999999999999 or -99999999999999 end
    if pick == 3 then return 1e14 + rnd(0, 9) end
    if pick == 4 then return rnd(-1000, 1000) / 8 end
    if pick == 5 then return -0.0 end
    if pick == 6 then return random_string(rnd) end
    if pick == 7 then return ("plain"):rep(rnd(0, 3)) end
    if pick == 13 then return ("p"):rep(1020 + rnd(0, 8)) end -- both sides of MAX_PLAIN
    if pick == 8 then return rnd(0, 1) == 1 end
    if pick == 9 then return json.null end
    if pick == 10 then return { rnd(1, 9) } end
    if pick == 11 then return require("ffi").new("int64_t", 9007199254740993LL) end
    return 2 ^ 53 + 2
  end

  it("writes the same bytes as the C writer for 3,000 random small objects", function()
    -- Two objects in three have 1-8 keys (the fast path's case), the rest 9-20 (the C writer's).
    local state = 12345
    local function rnd(lo, hi) -- a fixed LCG: the same objects on every run
      state = (state * 1103515245 + 12345) % 2147483648
      return lo + state % (hi - lo + 1)
    end
    local same, fast, multi = 0, 0, 0
    for _ = 1, 3000 do
      local t = {}
      local n = rnd(1, 3) == 1 and rnd(9, 20) or rnd(1, 8)
      for _ = 1, n do t[KEYS[rnd(1, #KEYS)]] = random_value(rnd) end
      if rnd(1, 10) == 1 then t = json.object(t) end
      local a, b = json.encode(t), json.encode_c(t)
      assert.are.equal(b, a)
      same = same + 1
      if not a:find("[%[\\]") then
        fast = fast + 1
        if select(2, a:gsub('":', "")) >= 2 then multi = multi + 1 end
      end
    end
    assert.are.equal(3000, same)
    assert.is_true(fast > 100, "too few objects of the fast path's shape: " .. fast)
    assert.is_true(multi > 30, "too few objects of several keys of the fast path's shape: " .. multi)
  end)

  it("leaves arrays, marked arrays and nested objects to the C writer", function()
    assert.are.equal("[]", json.encode(json.array()))
    assert.are.equal("{}", json.encode({}))
    assert.are.equal("[1,2]", json.encode({ 1, 2 }))
    assert.are.equal('{"a":{"b":1}}', json.encode({ a = { b = 1 } }))
    assert.are.equal('{"a":[1]}', json.encode({ a = json.array({ 1 }) }))
  end)

  it("writes the last pair of an eight-key object and leaves a ninth key to the C writer", function()
    local t = {}
    for i = 1, 8 do t["k" .. i] = i end
    local s = json.encode(t)
    assert.are.equal(json.encode_c(t), s)
    for i = 1, 8 do assert.truthy(s:find('"k' .. i .. '":' .. i, 1, true), s) end
    t.k9 = 9
    s = json.encode(t)
    assert.are.equal(json.encode_c(t), s)
    assert.truthy(s:find('"k9":9', 1, true), s)
  end)

  it("writes fractions, -0 and large integers with the C writer's formatter", function()
    local t = { a = 0.1, b = -0.0, c = 1e300, d = 2 ^ 53 + 2, e = 1 / 3, f = -1e-7, g = 1e14 }
    local s = json.encode(t)
    assert.are.equal(json.encode_c(t), s)
    assert.truthy(s:find('"a":0.1', 1, true), s)
    assert.truthy(s:find('"b":-0', 1, true), s)
    assert.truthy(s:find('"d":9007199254740994', 1, true), s)
    assert.truthy(s:find('"e":0.3333333333333333', 1, true), s)
    assert.truthy(s:find('"g":100000000000000', 1, true), s)
  end)

  it("raises on a NaN or a function value as the C writer does", function()
    assert.has_error(function() json.encode({ a = 1, b = 0 / 0 }) end)
    assert.has_error(function() json.encode({ a = 1, b = math.huge }) end)
    assert.has_error(function() json.encode(json.array({ { a = -math.huge } })) end)
    assert.has_error(function() json.encode({ a = 1, b = print }) end)
  end)
end)

describe("zever.json encode of arrays of small objects", function()
  -- A json.array of db rows is written in Lua, into the small-object path's buffer (docs/json.md);
  -- an array with any other element goes to the C writer from scratch: encode and encode_c agree
  -- on rows with odd elements (a float, a nested table, a scalar, a hole, a marked array, 9 keys).
  local state = 777
  local function rnd(lo, hi) -- a fixed LCG (its high bits: the low ones cycle): the same arrays
    state = (state * 1103515245 + 12345) % 2147483648
    return lo + math.floor(state / 65536) % (hi - lo + 1)
  end
  local ODD = { function() return { a = 0.5 } end, function() return { a = { 1 } } end,
    function() return 7 end, function() return "s" end, function() return json.null end,
    function() return json.array({}) end, function() return {} end,
    function() local t = {} for i = 1, 9 do t["k" .. i] = i end return t end,
    function() return { ["q\"k"] = 1 } end, function() return { a = "ctl\1" } end }

  it("writes 1,000 random arrays of rows, some with one odd element, as the C writer does", function()
    local fast = 0
    for _ = 1, 1000 do
      local rows = json.array()
      for i = 1, rnd(1, 30) do
        rows[i] = { id = rnd(1, 10000), randomNumber = rnd(-1e6, 1e6), message = "m" .. rnd(0, 9),
          ok = rnd(0, 1) == 1 }
        if rnd(1, 4) == 1 then rows[i] = json.object(rows[i]) end
      end
      if rnd(1, 2) == 1 then rows[rnd(1, #rows)] = ODD[rnd(1, #ODD)]() else fast = fast + 1 end
      assert.are.equal(json.encode_c(rows), json.encode(rows))
    end
    assert.is_true(fast > 300, "too few arrays of the fast path's shape: " .. fast)
  end)

  it("writes a 2 MB array, and small objects after it", function()
    local rows, long = json.array(), ("x"):rep(1000)
    for i = 1, 1000 do rows[i] = { id = i, a = long, b = long } end
    local s = json.encode(rows)
    assert.is_true(#s > 2000000)
    assert.are.equal(json.encode_c(rows), s)
    local row = { id = 7, randomNumber = 8 }
    assert.are.equal(json.encode_c(row), json.encode(row))
    assert.are.equal(json.encode_c(json.array({ row })), json.encode(json.array({ row })))
  end)

  it("writes the TFB /queries answer", function()
    local rows = json.array({ { id = 1, randomNumber = 2 }, { id = 3, randomNumber = 4 } })
    local s = json.encode(rows)
    assert.are.equal(json.encode_c(rows), s)
    assert.is_true(s == '[{"id":1,"randomNumber":2},{"id":3,"randomNumber":4}]' or
      s == '[{"randomNumber":2,"id":1},{"randomNumber":4,"id":3}]', s)
    assert.are.equal("[]", json.encode(json.array()))
  end)
end)

describe("zever.json's C writer: arrays of flat objects and integers", function()
  -- The C writer writes a table without a metatable whose first key is a string in one pass
  -- (enc_object_from), and integers within +-2^53 before any libm call; core.encode(v, true)
  -- runs the general path. Golden rows: random arrays of flat rows (numbers on both sides of
  -- every formatting rule, strings that need escaping, nested values, mixed keys) written the
  -- same by both, and integers written as %d writes them.
  local core = require "zever.json_core"
  local KEYS = { "id", "randomNumber", "message", "q\"k", "é", "", 1, 2, 7 }
  local state = 4242
  local function rnd(lo, hi) -- a fixed LCG: the same rows on every run
    state = (state * 1103515245 + 12345) % 2147483648
    return lo + state % (hi - lo + 1)
  end
  local function value()
    local pick = rnd(1, 14)
    if pick <= 3 then return rnd(-100000, 100000) end
    if pick == 4 then return rnd(0, 1) == 1 and 2 ^ 53 or -(2 ^ 53) end
    if pick == 5 then return 2 ^ 53 + 2 * rnd(1, 9) end
    if pick == 6 then return rnd(-1000, 1000) / 16 end
    if pick == 7 then return -0.0 end
    if pick == 8 then return 0 end
    if pick == 9 then return 1e300 * rnd(1, 9) end
    if pick == 10 then
      local b = {}
      for i = 1, rnd(0, 8) do b[i] = string.char(rnd(0, 255)) end
      return table.concat(b)
    end
    if pick == 11 then return "Hello, World! " .. rnd(1, 99) end
    if pick == 12 then return json.null end
    if pick == 13 then return { rnd(1, 9), { x = rnd(1, 3) } } end
    return rnd(0, 1) == 1
  end

  it("writes 2,000 random arrays of flat rows as the general path does", function()
    local fast_shape = 0
    for _ = 1, 2000 do
      local rows = {}
      for i = 1, rnd(1, 25) do
        local row = {}
        for _ = 1, rnd(0, 4) do row[KEYS[rnd(1, #KEYS)]] = value() end
        rows[i] = row
        if type(next(row)) == "string" then fast_shape = fast_shape + 1 end
      end
      if rnd(1, 4) == 1 then rows = json.array(rows) end
      local general = core.encode(rows, true)
      assert.are.equal(general, core.encode(rows))
      assert.are.equal(general, json.encode(rows))
    end
    assert.is_true(fast_shape > 5000, "too few rows of the fast path's shape: " .. fast_shape)
  end)

  it("writes the TFB rows and integers exactly", function()
    local s = json.encode(json.array({ { id = 4174, randomNumber = 331 } }))
    assert.is_true(s == '[{"id":4174,"randomNumber":331}]' or
      s == '[{"randomNumber":331,"id":4174}]', s)
    for _ = 1, 5000 do
      local v = rnd(0, 2 ^ 30) * rnd(1, 2 ^ 22) * (rnd(0, 1) == 1 and -1 or 1)
      assert.are.equal(string.format("%.0f", v), core.encode(v))
    end
    for _, v in ipairs { 0, 9, 10, 99, 100, 101, 999, 1000, 10000, 123456789, 2 ^ 53,
      -(2 ^ 53) } do
      assert.are.equal(string.format("%.0f", v), core.encode(v))
    end
    assert.are.equal("-0", core.encode(-0.0))
    assert.are.equal("9007199254740994", core.encode(2 ^ 53 + 2))
    assert.are.equal("0.5", core.encode(0.5))
    assert.are.equal("{}", core.encode({}))
    assert.has_error(function() core.encode({ { a = 0 / 0 } }) end)
  end)
end)
