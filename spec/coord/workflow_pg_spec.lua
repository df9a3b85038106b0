-- zever.workflow's db store on PostgreSQL (#pg): the conformance suite, and one run end to end
-- (steps recorded once, a signal, a compensation on cancel) through a testing app's jobs.
local pg_server = require "spec.support.pg_server"
local zever = require "zever"
local testing = require "zever.testing"
local workflow = require "zever.workflow"
local zdb = require "zever.db"

describe("zever.workflow on PostgreSQL #pg", function()
  local fx = pg_server.fixture("workflow")
  local t, db, wf

  require("spec.conformance.workflow")("db (PostgreSQL)", function(jobs, opts)
    local pdb = assert(zdb.open(fx.dsn))
    opts.jobs, opts.db, opts.table = jobs, pdb, "wfc" .. math.random(1, 1e6)
    return workflow.new(opts), function() pdb:close() end
  end)

  before_each(function()
    t = testing.app(zever.app())
    db = assert(zdb.open(fx.dsn))
    wf = workflow.new{ jobs = t.app.jobs, db = db, table = "wf" .. math.random(1, 1e6) }
  end)

  after_each(function()
    wf:close()
    t:close()
    db:close()
  end)

  it("records steps once, takes a signal, refuses a duplicate id and compensates on cancel", function()
    local ran = {}
    wf:define("pg", function(ctx, input)
      ctx:step("one", function(key) ran[#ran + 1] = key; return input.n + 1 end)
      local v = ctx:wait("go")
      ctx:step("two", function() ran[#ran + 1] = "two"; return v end)
      return v
    end, { compensate = { one = function(r) ran[#ran + 1] = "undo " .. r end } })
    assert.equals("r1", wf:start("pg", { n = 1 }, "r1"))
    assert.equals("conflict", select(2, wf:start("pg", {}, "r1")).code)
    t:perform_jobs()
    assert.equals("waiting", wf:query("r1", "status"))
    assert(wf:signal("r1", "go", "yes"))
    t:perform_jobs()
    assert.equals("completed", wf:query("r1", "status"))
    assert.equals("yes", wf:query("r1", "output"))
    assert.same({ "r1/one", "two" }, ran)
    assert.equals("r2", wf:start("pg", { n = 5 }, "r2"))
    t:perform_jobs()
    assert(wf:cancel("r2"))
    t:perform_jobs()
    assert.equals("cancelled", wf:query("r2", "status"))
    assert.same({ "r1/one", "two", "r2/one", "undo 6" }, ran)
    assert.equals(2, #wf:list())
  end)

  it("adds the retention columns to a table made before them, and purge reaches its old runs", function()
    local p = "wfold" .. math.random(1, 1e6)
    db:exec(string.format([[CREATE TABLE "%s_runs" (id TEXT PRIMARY KEY, name TEXT NOT NULL,
      status TEXT NOT NULL, input TEXT, output TEXT, error TEXT, attempts INTEGER NOT NULL DEFAULT 0,
      state TEXT, wake_at double precision, created_at double precision NOT NULL,
      updated_at double precision NOT NULL)]], p))
    db:exec(string.format([[INSERT INTO "%s_runs" (id, name, status, input, output, attempts,
      created_at, updated_at) VALUES ('old', 'w', 'failed', '{}', NULL, 3, 100, 200)]], p))
    local now = 1e6
    local old = workflow.new{ jobs = t.app.jobs, db = db, table = p, clock = function() return now end }
    old:define("w", function() return 1 end)
    assert.equals(200, old:status("old").ended_at)
    assert(old:start("w", {}, "new", { retention = 60 }))
    t:perform_jobs()
    assert.equals(now + 60, old:status("new").expire_at)
    now = now + 60
    assert.same({ 1, 0 }, { old:sweep() })
    assert.same({ 1, 1 }, { old:purge(0, { dry_run = true }) })
    assert.same({ 1, 0 }, { old:purge(0) })
    assert.same({}, old:list())
    old:close()
  end)
end)
