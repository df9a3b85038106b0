-- zever.outbox with the db adapter on a real PostgreSQL 15: the conformance suite, each outbox
-- in a table of its own, then two relays on two connections racing for one outbox: every
-- message is relayed once, none twice (the claim's re-checked lease guard).

local pg_server = require "spec.support.pg_server"
local outbox = require "zever.outbox"
local odb = require "adapters.outbox.db"
local zdb = require "zever.db"
local sched = require "zever.sched"
local sys = require "zever.sys"
local unique = require("spec.support.files").unique_ident

describe("adapters.outbox.db on postgres #pg", function()
  local fx = pg_server.fixture("outbox")
  local db
  setup(function() db = assert(zdb.open(fx.dsn)) end)
  teardown(function() pcall(db.close, db) end)

  require("spec.conformance.outbox")("db (postgres)", function(opts)
    return outbox.wrap(odb.new(db, { table = unique("conf"), clock = opts.clock }), opts), db
  end)

  it("relays each message once when two relays on two connections race", function()
    local name = unique("race")
    local other = assert(zdb.open(fx.dsn))
    local a = outbox.wrap(odb.new(db, { table = name }), { batch = 20 })
    local b = outbox.wrap(odb.new(other, { table = name }), { batch = 20 })
    db:transaction(function(tx)
      for i = 1, 300 do assert(a:record(tx, { topic = "t", payload = i })) end
    end)
    local seen, dup, left = {}, 0, 2
    local function run(ob)
      sched.spawn(function()
        while true do
          local relayed = assert(ob:relay(function(m)
            if seen[m.id] then dup = dup + 1 end
            seen[m.id] = true
            sched.sleep(0)
            return true
          end))
          if relayed == 0 then break end
        end
        left = left - 1
      end)
    end
    run(a)
    run(b)
    local deadline = sys.now() + 60
    while left > 0 and sys.now() < deadline do sched.sleep(0.01) end
    assert.are.equal(0, left)
    assert.are.equal(0, dup)
    local count = 0
    for _ in pairs(seen) do count = count + 1 end
    assert.are.equal(300, count)
    assert.are.equal(300, assert(a:status()).delivered)
    other:close()
  end)
end)
