-- zever.lock with the postgres adapter (session-level advisory locks) on a real PostgreSQL 15
-- (spec/support/pg_server): the conformance suite on a fake clock and on the real one, one
-- statement per acquire, extend and unlock, a lease released by the server when its session is
-- terminated (pg_terminate_backend), a ttl ended by the holder's timer for another session,
-- exclusion across two processes of eight contenders each (a shared counter row), and the
-- container.

local pg_server = require "spec.support.pg_server"
local lock = require "zever.lock"
local plock = require "adapters.lock.postgres"
local zdb = require "zever.db"
local sys = require "zever.sys"
local process = require "spec.support.process"
local unique = require("spec.support.files").unique_ident

describe("adapters.lock.postgres #pg", function()
  local fx = pg_server.fixture("plock")
  local admin
  setup(function() admin = assert(zdb.open(fx.dsn)) end)
  teardown(function() pcall(admin.close, admin) end)

  -- A fresh lock table: its own prefix (keys) and sequence (fences).
  local function fresh(opts)
    opts = opts or {}
    local name = unique("pl")
    return lock.wrap(assert(plock.new(fx.dsn, { prefix = name .. ":", sequence = name,
      clock = opts.clock })))
  end

  require("spec.conformance.lock")("postgres", function(opts)
    return fresh{ clock = opts.clock }
  end)

  -- Again on the real clock: leases of 0.2 s run out by the adapter's own timer.
  require("spec.conformance.lock")("postgres (real clock)", function()
    return fresh()
  end, { real_clock = true })

  -- Two lock tables on one prefix and sequence, each its own session: two processes' view.
  local function two(tag)
    local name = unique(tag)
    local o = { prefix = name .. ":", sequence = name }
    return lock.wrap(assert(plock.new(fx.dsn, o))), lock.wrap(assert(plock.new(fx.dsn, o))), name
  end

  -- The backend PID that holds the advisory lock of prefix .. key, or nil.
  local function holder_pid(prefix, key)
    local _, hi, lo = plock.lock_key(prefix .. key)
    local row = admin:first("SELECT pid FROM pg_locks WHERE locktype = 'advisory' "
      .. "AND classid = ?::bigint::oid AND objid = ?::bigint::oid AND objsubid = 1 AND granted",
      hi, lo)
    return row and row.pid
  end

  it("holds the lease as an advisory lock of its session, keyed by SHA-256 of prefix .. key",
    function()
      local name = unique("pk")
      local locks = lock.wrap(assert(plock.new(fx.dsn, { prefix = name .. ":", sequence = name })))
      local lease = assert(locks:try_acquire("report:7", 10))
      -- The documented formula, computed by the server, names the lock pg_locks shows.
      local row = admin:first("SELECT ('x' || left(encode(sha256(?::bytea), 'hex'), 16))"
        .. "::bit(64)::bigint::text AS k", name .. ":report:7")
      local k = plock.lock_key(name .. ":report:7")
      assert.are.equal(row.k, tostring(k):gsub("LL$", ""))
      assert.is_number(holder_pid(name .. ":", "report:7"))
      assert.is_true(lease:unlock())
      assert.is_nil(holder_pid(name .. ":", "report:7"))
      locks:close()
    end)

  it("costs one statement per acquire, extend and unlock", function()
    local name = unique("rt")
    local impl = assert(plock.new(fx.dsn, { prefix = name .. ":", sequence = name }))
    local locks = lock.wrap(impl)
    assert(assert(locks:try_acquire("warm", 10)):unlock())   -- creates the sequence
    local before = impl.db:pool_stats().statements
    for i = 1, 20 do
      local lease = assert(locks:try_acquire("k" .. i, 10))
      assert(lease:extend(20))
      assert(lease:unlock())
    end
    assert.are.equal(60, impl.db:pool_stats().statements - before)
    -- A key this adapter holds is answered without a statement.
    local lease = assert(locks:try_acquire("mine", 10))
    before = impl.db:pool_stats().statements
    assert.are.equal("busy", select(2, locks:try_acquire("mine", 10)).code)
    assert.are.equal(before, impl.db:pool_stats().statements)
    assert(lease:unlock())
    locks:close()
  end)

  it("loses the lease when the server terminates its session, and never steals it back",
    function()
      local a, b, name = two("term")
      local la = assert(a:try_acquire("k", 60))
      assert.are.equal("busy", select(2, b:try_acquire("k", 60)).code)
      local pid = assert(holder_pid(name .. ":", "k"))
      -- Waits (up to 5 s) until the backend is gone: its locks went with it.
      assert.is_true(admin:first("SELECT pg_terminate_backend(?, 5000) AS ok", pid).ok)
      local lb = assert(b:try_acquire("k", 60))
      assert.is_true(lb.fence > la.fence)
      -- a's next statement runs on a new session: the old lease is gone, b's is untouched.
      assert.are.equal("not_held", select(2, la:extend()).code)
      assert.are.equal("not_held", select(2, la:unlock()).code)
      assert.are.equal("busy", select(2, a:try_acquire("k", 60)).code)
      assert.is_true(lb:unlock())
      local again = assert(a:try_acquire("k", 60))
      assert.is_true(again.fence > lb.fence)
      assert.is_true(again:unlock())
      assert.are.equal(1, a:stats().lost)
      a:close()
      b:close()
    end)

  it("answers holder for another session's lease with fence 0 and no known deadline", function()
    local a, b = two("hold")
    local la = assert(a:try_acquire("k", 60))
    local fence, left = b:holder("k")
    assert.are.equal(0, fence)
    assert.are.equal(math.huge, left)
    assert.is_true(la:unlock())
    assert.is_false(b:holder("k"))
    a:close()
    b:close()
  end)

  it("ends a lease at its ttl for other sessions too (the holder's timer unlocks it)", function()
    local a, b = two("ttl")
    local la = assert(a:try_acquire("k", 0.2))
    -- b waits (yielding: a's timer runs on the same loop) until a's lease ran out.
    local lb = assert(b:acquire("k", 10, 20))
    assert.is_true(lb.fence > la.fence)
    assert.are.equal("not_held", select(2, la:extend()).code)
    assert.are.equal("not_held", select(2, la:unlock()).code)
    assert.are.equal(1, a:stats().expired)
    assert.is_true(lb:unlock())
    a:close()
    b:close()
  end)

  it("releases every lock of its session on close", function()
    local a, b = two("close")
    assert(a:try_acquire("x", 60))
    assert(a:try_acquire("y", 60))
    a:close()
    assert(assert(b:acquire("x", 10, 10)):unlock())
    assert(assert(b:acquire("y", 10, 10)):unlock())
    b:close()
  end)

  it("never grants the key to two holders across two processes of eight contenders", function()
    local name = unique("procs")
    admin:exec(('CREATE TABLE "%s" (inside int NOT NULL, total int NOT NULL)'):format(name))
    admin:exec(('INSERT INTO "%s" VALUES (0, 0)'):format(name))
    local cmd = process.quote(sys.exe()) .. " run spec/fixtures/lock_pg_contender.lua "
      .. process.quote(fx.dsn) .. " " .. name .. ": " .. name .. " 8 10"
    assert.same({ "overlaps 0 leases 80\n", "overlaps 0 leases 80\n" }, process.together(cmd, 2))
    local row = admin:first(('SELECT inside, total FROM "%s"'):format(name))
    assert.are.equal(0, row.inside)
    assert.are.equal(160, row.total)
  end)

  it("returns unavailable when the server cannot be reached, without the password", function()
    local port = process.free_port()
    local dsn = "postgres://zever:s3cr3t-pw@127.0.0.1:" .. port .. "/none"
    local impl, err = plock.new(dsn, { connect_timeout = 2 })
    assert.is_nil(impl)
    assert.are.equal("unavailable", err.code)
    assert.is_nil(tostring(err):find("s3cr3t-pw", 1, true))
  end)

  it("raises on misuse", function()
    assert.has_error(function() plock.new("sqlite::memory:") end,
      "lock.postgres: expects a postgres:// DSN or a zever.db on one")
    assert.has_error(function() plock.new(fx.dsn, { sequence = "" }) end,
      "lock.postgres: sequence must be a non-empty name")
    assert.has_error(function() plock.new(fx.dsn, { clock = 5 }) end,
      "lock.postgres: clock must be a function returning seconds")
  end)

  it("is app.lock with LOCK_ADAPTER=postgres, and refuses a SQLite database", function()
    local container = require("zever.container")
    local prefix = unique("ct") .. ":"
    local c = container.new(assert(require("zever.config").load{ env = {
      LOCK_ADAPTER = "postgres", DB_DSN = fx.dsn, LOCK_PREFIX = prefix } }))
    local held = assert(assert(c:get("lock")):try_acquire("container", 5))
    -- The lease is an advisory lock of the adapter's own session, not of the app's pool.
    local pid = assert(holder_pid(prefix, "container"))
    assert.are_not.equal(pid, c:get("db"):first("SELECT pg_backend_pid() AS pid").pid)
    assert.is_true(held:unlock())
    assert.is_nil(holder_pid(prefix, "container"))
    c:close()
    local cfg = assert(require("zever.config").load{ env = { LOCK_ADAPTER = "postgres",
      DB_DSN = "sqlite::memory:" } })
    c = container.new(cfg)
    local l, err = c:get("lock")
    assert.is_nil(l)
    assert.are.equal("invalid", err.code)
    c:close()
  end)
end)
