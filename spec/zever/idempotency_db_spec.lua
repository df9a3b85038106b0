-- zever.idempotency with the db adapter on a real SQLite file: the conformance suite (with a
-- fake clock, so every expiry row runs), then what only the db adapter promises (a table
-- created on first use, one reservation per key between two connections, expired keys taken
-- over and swept in bounded batches, byte-exact keys and fingerprints, database failure as
-- "unavailable") and the container.

local zdb = require "zever.db"
local idempotency = require "zever.idempotency"
local idb = require "adapters.idempotency.db"

local files = {}
local function tmpdb()
  local path = os.tmpname()
  files[#files + 1] = path
  return assert(zdb.open("sqlite:" .. path)), path
end

local function cleanup()
  for _, path in ipairs(files) do
    os.remove(path)
    os.remove(path .. "-wal")
    os.remove(path .. "-shm")
  end
  files = {}
end

describe("adapters.idempotency.db", function()
  teardown(cleanup)

  local conf_db
  setup(function() conf_db = tmpdb() end)
  teardown(function() conf_db:close() end)

  local tables = 0
  require("spec.conformance.idempotency")("db", function(opts)
    tables = tables + 1
    return idempotency.wrap(idb.new(conf_db, { table = "conf_" .. tables, clock = opts.clock }),
      { ttl = opts.ttl, pending_ttl = opts.pending_ttl })
  end)

  it("creates its table on first use", function()
    local db = tmpdb()
    local store = idempotency.wrap(idb.new(db))
    assert.is_nil(db:first("SELECT name FROM sqlite_master WHERE name = 'idempotency_keys'"))
    assert(store:begin("k"))
    assert.is_not_nil(db:first("SELECT name FROM sqlite_master WHERE name = 'idempotency_keys'"))
    store:close()
    db:close()
  end)

  it("reserves each key once between two connections to one file", function()
    local db1, path = tmpdb()
    local db2 = assert(zdb.open("sqlite:" .. path))
    local a = idempotency.wrap(idb.new(db1))
    local b = idempotency.wrap(idb.new(db2))
    local won = 0
    for i = 1, 50 do
      local first, second = i % 2 == 0 and a or b, i % 2 == 0 and b or a
      local r1 = first:begin("k" .. i, { fingerprint = "f" })
      local r2, err = second:begin("k" .. i, { fingerprint = "f" })
      assert.is_table(r1)
      assert.is_nil(r2)
      assert.are.equal("in_progress", err.code)
      won = won + 1
      assert.is_true(second:complete("k" .. i, i, r1.token))
      assert.are.equal(i, assert(first:begin("k" .. i, { fingerprint = "f" })).result)
    end
    assert.are.equal(50, won)
    a:close()
    b:close()
    db1:close()
    db2:close()
  end)

  it("takes over an expired row in place and sweeps expired rows in bounded batches", function()
    local db = tmpdb()
    local t = 1000
    local impl = idb.new(db, { clock = function() return t end, sweep_interval = 60,
      sweep_batch = 3 })
    local store = idempotency.wrap(impl, { ttl = 10, pending_ttl = 5 })
    for i = 1, 8 do assert(store:begin("old" .. i)) end
    assert.are.equal(8, db:first('SELECT count(*) AS n FROM "idempotency_keys"').n)
    t = t + 61
    -- old1 is expired: begin overwrites its row (another fingerprint is fine now).
    local r = assert(store:begin("old1", { fingerprint = "new" }))
    assert.is_false(r.replay)
    local row = db:first('SELECT state, token FROM "idempotency_keys" WHERE "key" = ?',
      require("zever.sqlite").blob("old1"))
    assert.are.equal(0, row.state)
    assert.are.equal(r.token, row.token)
    -- The first begin swept (nothing had expired); 61 s later this reservation sweeps again:
    -- at most 3 expired rows go, and old1's row is live again.
    local n = db:first('SELECT count(*) AS n FROM "idempotency_keys"').n
    assert.are.equal(8 - 3, n)
    assert.are.equal(3, impl:sweep())
    assert.are.equal(1, impl:sweep())
    assert.are.equal(0, impl:sweep())
    assert.are.equal(1, db:first('SELECT count(*) AS n FROM "idempotency_keys"').n)
    store:close()
    db:close()
  end)

  it("compares keys and fingerprints byte for byte", function()
    local db = tmpdb()
    local store = idempotency.wrap(idb.new(db))
    local k1, k2 = "a\0b", "a\0c"
    local fp = "\0\1\2\255"
    local r = assert(store:begin(k1, { fingerprint = fp }))
    assert.is_false(assert(store:begin(k2, { fingerprint = fp })).replay)
    assert.is_true(store:complete(k1, "one", r.token))
    assert.are.equal("one", assert(store:begin(k1, { fingerprint = fp })).result)
    local _, err = store:begin(k1, { fingerprint = "\0\1\2\254" })
    assert.are.equal("key_mismatch", err.code)
    store:close()
    db:close()
  end)

  it("backs the Idempotency-Key middleware: the response is replayed from the table", function()
    local zever = require "zever"
    local testing = require "zever.testing"
    local middleware = require "zever.middleware.idempotency"
    local db = tmpdb()
    local store = idempotency.wrap(idb.new(db))
    local app = zever.app()
    app:use(middleware{ store = store })
    local calls = 0
    app:post("/charges", function(_, res)
      calls = calls + 1
      return res:status(201):json({ charge = calls })
    end)
    local function post(key, body)
      return testing.request(app, "POST", "/charges", { headers = { ["Idempotency-Key"] = key },
        body = body })
    end
    local first = post("mw-1", "a")
    assert.are.equal(201, first.status)
    local again = post("mw-1", "a")
    assert.are.equal(first.body, again.body)
    assert.are.equal("true", again.headers["idempotent-replayed"])
    assert.are.equal(422, post("mw-1", "b").status)
    assert.are.equal(1, calls)
    store:close()
    db:close()
  end)

  it("answers unavailable when the database fails", function()
    local db = tmpdb()
    local store = idempotency.wrap(idb.new(db))
    assert(store:begin("k"))
    db:close()
    for _, call in ipairs({
      function() return store:begin("k2") end,
      function() return store:complete("k", "r") end,
      function() return store:forget("k") end,
    }) do
      local ok, err = call()
      assert.is_nil(ok)
      assert.are.equal("unavailable", err.code)
    end
    store:close()
  end)

  it("is resolved by the container from the config, on the app's database", function()
    local config = require "zever.config"
    local container = require "zever.container"
    local path = os.tmpname()
    files[#files + 1] = path
    local cfg = assert(config.load{ dir = "/nonexistent-zever-dir", env = {
      IDEMPOTENCY_ADAPTER = "db", DB_DSN = "sqlite:" .. path, IDEMPOTENCY_PENDING_TTL = "30s" } })
    local c = container.new(cfg)
    local store = assert(c:get("idempotency"))
    assert.are.equal(30, store.pending_ttl)
    local r = assert(store:begin("key", { fingerprint = "f" }))
    assert.is_true(store:complete("key", { status = 201 }, r.token))
    local db = assert(c:get("db"))
    assert.are.equal(1, db:first('SELECT count(*) AS n FROM "idempotency_keys"').n)
    assert.is_true(c:close())
    local ok, err = store:begin("key")
    assert.is_nil(ok)
    assert.are.equal("closed", err.code)
    -- The row outlives the process: another connection replays it.
    local db2 = assert(zdb.open("sqlite:" .. path))
    local again = idempotency.wrap(idb.new(db2))
    assert.are.same({ status = 201 }, assert(again:begin("key", { fingerprint = "f" })).result)
    again:close()
    db2:close()
  end)
end)
