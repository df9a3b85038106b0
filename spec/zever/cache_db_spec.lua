-- zever.cache with the db adapter: the conformance suite on a real SQLite file in a temporary
-- directory, then what only the db adapter promises (the table is created when missing, expired
-- rows are swept in bounded batches, two connections share the cache) and the container.

local cache = require "zever.cache"
local dbc = require "adapters.cache.db"
local zdb = require "zever.db"

local fs = require "spec.support.files"
local unique, sh = fs.unique_ident, fs.sh

-- The database file of the describe that runs: each describe opens its own in setup and closes
-- it in teardown, so the describes run in any order.
local dir, path, db

local function open_db()
  dir = fs.tmpdir(nil, "zever-cache-db")
  path = dir .. "/cache.db"
  db = assert(zdb.open("sqlite:" .. path))
end

local function close_db()
  db:close()
  fs.rm_rf(dir)
end

describe("adapters.cache.db conformance", function()
  setup(open_db)
  teardown(close_db)
  -- Every conformance cache gets its own table: fresh and empty.
  require("spec.conformance.cache")("db", function(opts)
    return cache.wrap(dbc.new(db, { table = unique("conf"), clock = opts.clock }))
  end)
end)

local function table_exists(name)
  local row = assert(db:query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?",
    name))
  return row[1] ~= nil
end

local function count(name)
  return db:first(('SELECT count(*) AS n FROM "%s"'):format(name)).n
end

describe("adapters.cache.db", function()
  setup(open_db)
  teardown(close_db)

  it("creates its table on first use when it is missing", function()
    local name = unique("created")
    local c = cache.wrap(dbc.new(db, { table = name }))
    assert.is_false(table_exists(name))
    assert.is_nil(c:get("k"))
    assert.is_true(table_exists(name))
    assert.is_true(c:set("k", "v"))
    assert.are.equal(1, count(name))
    c:close()
  end)

  it("sweeps expired rows in bounded batches and keeps live ones", function()
    local t = 1000
    local name = unique("sweep")
    local c = cache.wrap(dbc.new(db, { table = name, clock = function() return t end,
      sweep_interval = 3600 }))
    for i = 1, 25 do c:set("e" .. i, i, 5) end
    c:set("forever", "yes")
    c:set("later", "yes", 100)
    t = t + 6
    local impl = c.impl
    local removed, more = impl:sweep(10)
    assert.are.equal(10, removed)
    assert.is_true(more)
    removed, more = impl:sweep(10)
    assert.are.equal(10, removed)
    assert.is_true(more)
    removed, more = impl:sweep(10)
    assert.are.equal(5, removed)
    assert.is_false(more)
    assert.are.equal(2, count(name))
    assert.are.equal("yes", c:get("forever"))
    assert.are.equal("yes", c:get("later"))
    c:close()
  end)

  it("runs a sweep from a write once the sweep interval has passed", function()
    local t = 1000
    local name = unique("autosweep")
    local c = cache.wrap(dbc.new(db, { table = name, clock = function() return t end,
      sweep_interval = 60, sweep_batch = 100 }))
    for i = 1, 30 do c:set("e" .. i, i, 5) end
    assert.are.equal(30, count(name))
    t = t + 10                                   -- expired, but the interval has not passed
    c:set("x", 1)
    assert.are.equal(31, count(name))
    t = t + 60
    c:set("y", 2)
    assert.are.equal(2, count(name))
    c:close()
  end)

  it("re-claims an expired row with add in place, with the new ttl", function()
    local t = 1000
    local name = unique("reclaim")
    local c = cache.wrap(dbc.new(db, { table = name, clock = function() return t end }))
    assert.is_true(c:add("lock", "a", 10))
    t = t + 11
    assert.are.equal(1, count(name))             -- the expired row is still there
    assert.is_true(c:add("lock", "b", 10))
    assert.are.equal(1, count(name))
    assert.are.equal("b", c:get("lock"))
    t = t + 9
    assert.is_false(c:add("lock", "c", 10))
    assert.are.equal("b", c:get("lock"))
    c:close()
  end)

  it("keeps the expiry of an existing key on incr and sets it when incr creates the key", function()
    local t = 1000
    local c = cache.wrap(dbc.new(db, { table = unique("incr"), clock = function() return t end }))
    assert.are.equal(1, c:incr("n", 1, 10))
    t = t + 5
    assert.are.equal(2, c:incr("n", 1, 100))     -- ttl ignored: the key exists
    t = t + 6
    assert.is_nil(c:get("n"))
    c:close()
  end)

  it("reports a deleted expired row as absent", function()
    local t = 1000
    local c = cache.wrap(dbc.new(db, { table = unique("del"), clock = function() return t end }))
    c:set("k", "v", 1)
    t = t + 2
    assert.is_false(c:delete("k"))
    c:close()
  end)

  it("shares the cache between two connections to the same file", function()
    local other = assert(zdb.open("sqlite:" .. path))
    local name = unique("shared")
    local a = cache.wrap(dbc.new(db, { table = name }))
    local b = cache.wrap(dbc.new(other, { table = name }))
    assert.is_true(a:set("k", { n = 1 }))
    assert.are.same({ n = 1 }, b:get("k"))
    assert.are.equal(1, a:incr("hits"))
    assert.are.equal(2, b:incr("hits"))
    assert.is_false(b:add("k", "other"))
    a:close()
    b:close()
    other:close()
  end)

  it("counts exactly when two processes increment the same key", function()
    local process = require "spec.support.process"
    local sys = require "zever.sys"
    local name, n = unique("procs"), 500
    local script = dir .. "/incr.lua"
    local f = assert(io.open(script, "w"))
    f:write([[
local db = assert(require("zever.db").open("sqlite:" .. arg[1]))
local c = require("zever.cache").wrap(require("adapters.cache.db").new(db, { table = arg[2] }))
for _ = 1, tonumber(arg[3]) do assert(c:incr("counter")) end
c:close()
db:close()
]])
    f:close()
    local cmd = table.concat({ process.quote(sys.exe()), "run", process.quote(script),
      process.quote(path), name, tostring(n) }, " ")
    -- Both run at once; the exit code is the first failure's.
    local r = process.run(cmd .. " & p=$!; " .. cmd .. "; b=$?; wait $p; a=$?; exit $((a | b))")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("", r.stderr)
    local c = cache.wrap(dbc.new(db, { table = name }))
    assert.are.equal(2 * n, c:get("counter"))
    c:close()
  end)

  it("keeps keys apart by prefix in one table", function()
    local name = unique("prefix")
    local a = cache.wrap(dbc.new(db, { table = name, prefix = "a:" }))
    local b = cache.wrap(dbc.new(db, { table = name, prefix = "b:" }))
    a:set("k", "from a")
    assert.is_nil(b:get("k"))
    assert.is_true(b:add("k", "from b"))
    assert.are.equal("from a", a:get("k"))
    a:close()
    b:close()
  end)

  it("returns code unavailable when the database fails", function()
    local broken = assert(zdb.open("sqlite:" .. dir .. "/broken.db"))
    local c = cache.wrap(dbc.new(broken, { table = unique("broken") }))
    assert.is_true(c:set("k", "v"))
    broken:close()
    local v, err = c:get("k")
    assert.is_nil(v)
    assert.are.equal("unavailable", err.code)
    c:close()
  end)

  it("refuses a NaN with code invalid and keeps infinities", function()
    local c = cache.wrap(dbc.new(db, { table = unique("nan") }))
    local ok, err = c:set("n", 0 / 0)
    assert.is_nil(ok)
    assert.are.equal("invalid", err.code)
    assert.is_false(c:exists("n"))
    assert.is_true(c:set("inf", math.huge))
    assert.are.equal(math.huge, c:get("inf"))
    assert.are.equal(-math.huge, c:incr("minf", -math.huge))
    c:close()
  end)

  it("raises on a table name that is not an identifier", function()
    assert.has_error(function() dbc.new(db, { table = 'x"; DROP TABLE y' }) end)
    assert.has_error(function() dbc.new({}, {}) end)
  end)
end)

describe("app.cache with adapter db", function()
  it("resolves the db cache on the app's database from the config", function()
    local config = require "zever.config"
    local container = require "zever.container"
    local app_dir = sh("mktemp -d /tmp/zever-cache-app-XXXXXX")
    local file = app_dir .. "/app.db"
    local cfg = assert(config.load{ dir = "/nonexistent-zever-dir", env = {
      CACHE_ADAPTER = "db", DB_DSN = "sqlite:" .. file } })
    local ctr = container.new(cfg)
    local c = assert(ctr:get("cache"))
    assert.is_true(c:set("k", { a = 1 }))
    assert.are.same({ a = 1 }, c:get("k"))
    local app_db = assert(ctr:get("db"))
    assert.are.equal(1, app_db:first('SELECT count(*) AS n FROM "cache_entries"').n)
    assert.is_true(ctr:close())
    local v, err = c:get("k")
    assert.is_nil(v)
    assert.are.equal("closed", err.code)
    os.execute("rm -rf '" .. app_dir .. "'")
  end)
end)
