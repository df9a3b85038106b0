-- zever.webhook's endpoint stores: the conformance suite on the memory adapter, on the db
-- adapter over a SQLite file and over a real PostgreSQL 15 (spec/support/pg_server), endpoints
-- that outlive the process (a second handle on the same SQLite file sees them), and a store
-- failure that fails the delivery attempt (so the jobs battery retries it) instead of dropping it.

local webhook = require "zever.webhook"
local memory = require "adapters.webhook.memory"
local wdb = require "adapters.webhook.db"
local zdb = require "zever.db"
local unique = require("spec.support.files").unique_ident

local function wrap(impl, jobs, send)
  return webhook.wrap(impl, { jobs = jobs, send = send, attempts = 2,
    backoff = { base = 0, cap = 0, jitter = false } })
end

describe("adapters.webhook.memory", function()
  require("spec.conformance.webhook")("memory", function(jobs, send)
    return wrap(memory.new(), jobs, send)
  end)
end)

describe("adapters.webhook.db on sqlite", function()
  local path, db
  setup(function()
    path = os.tmpname()
    db = assert(zdb.open("sqlite:" .. path))
  end)
  teardown(function()
    db:close()
    os.remove(path)
    os.remove(path .. "-wal")
    os.remove(path .. "-shm")
  end)

  require("spec.conformance.webhook")("db (sqlite)", function(jobs, send)
    return wrap(wdb.new(db, { table = unique("hooks") }), jobs, send)
  end)

  it("keeps endpoints for another handle on the same database", function()
    local t = unique("kept")
    local a = wrap(wdb.new(db, { table = t }))
    local id = assert(a:register("order.paid", "https://a.example/hook", "whsec_kept_0123456"))
    local other = assert(zdb.open("sqlite:" .. path))
    local b = wrap(wdb.new(other, { table = t }))
    assert.are.same({ { id = id, event = "order.paid", url = "https://a.example/hook" } },
      assert(b:endpoints("order.paid")))
    other:close()
  end)

  it("fails a delivery attempt when the store cannot answer, so it is retried", function()
    local testing = require "zever.testing"
    local t = testing.app(require("zever").app())
    local broken = assert(zdb.open("sqlite::memory:"))
    local impl = wdb.new(broken, { table = unique("gone") })
    local hooks = wrap(impl, t.app.jobs, function() return 200 end)
    assert(hooks:register("e", "https://a.example/hook", "whsec_gone_01234567"))
    assert.are.equal(1, hooks:deliver("e", {}))
    broken:exec('DROP TABLE "' .. impl.table .. '"')
    local r = t:perform_jobs()
    assert.are.equal(0, r.done)
    assert.is_true(#assert(t.app.jobs:failed()) == 1)
    t:close()
    broken:close()
  end)
end)

describe("adapters.webhook.db on postgres #pg", function()
  local pg_server = require "spec.support.pg_server"
  local fx = pg_server.fixture("webhook")
  local db
  setup(function() db = assert(zdb.open(fx.dsn)) end)
  teardown(function() pcall(db.close, db) end)

  require("spec.conformance.webhook")("db (postgres)", function(jobs, send)
    return wrap(wdb.new(db, { table = unique("hooks") }), jobs, send)
  end)
end)
