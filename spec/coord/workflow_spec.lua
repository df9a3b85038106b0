-- zever.workflow on the jobs battery: the conformance suite (spec/conformance/workflow.lua) with
-- the memory store and the db store on a SQLite file, app.workflow from the container, and the
-- db store upgrading a table made before retention.
local zever = require "zever"
local workflow = require "zever.workflow"
local zdb = require "zever.db"
local testing = require "zever.testing"

require("spec.conformance.workflow")("memory", function(jobs, opts)
  opts.jobs = jobs
  return workflow.new(opts)
end)

require("spec.conformance.workflow")("db (SQLite)", function(jobs, opts)
  local path = os.tmpname()
  local db = assert(zdb.open("sqlite:" .. path))
  opts.jobs, opts.db = jobs, db
  return workflow.new(opts), function()
    db:close()
    for _, s in ipairs{ "", "-wal", "-shm" } do os.remove(path .. s) end
  end
end)

describe("app.workflow", function()
  it("is resolved with the app's jobs battery", function()
    local app = zever.app()
    local wf = assert(app.workflow)
    assert.equals("workflow", wf.battery)
    assert.is_not_nil(app.jobs:handler(workflow.JOB))
  end)
end)

describe("adapters.workflow.db on a table made before retention", function()
  local path, db
  before_each(function()
    path = os.tmpname()
    db = assert(zdb.open("sqlite:" .. path))
  end)
  after_each(function()
    db:close()
    for _, s in ipairs{ "", "-wal", "-shm" } do os.remove(path .. s) end
  end)

  it("adds the retention columns on first use, keeps the old runs and lets purge reach them", function()
    -- The tables as the db store made them before retention (no retention/ended_at/expire_at).
    db:exec([[CREATE TABLE "workflow_runs" (id TEXT PRIMARY KEY, name TEXT NOT NULL,
      status TEXT NOT NULL, input TEXT, output TEXT, error TEXT, attempts INTEGER NOT NULL DEFAULT 0,
      state TEXT, wake_at REAL, created_at REAL NOT NULL, updated_at REAL NOT NULL)]])
    db:exec([[CREATE TABLE "workflow_steps" (run_id TEXT NOT NULL, "key" TEXT NOT NULL,
      result TEXT, PRIMARY KEY (run_id, "key"))]])
    db:exec([[INSERT INTO workflow_runs (id, name, status, input, output, attempts, created_at,
      updated_at) VALUES ('old', 'w', 'completed', '{}', '{"v":"before"}', 0, 100, 200),
      ('live', 'w', 'waiting', '{}', NULL, 0, 100, 200)]])
    local now = 1e6
    local t = testing.app(zever.app())
    local wf = workflow.new{ jobs = t.app.jobs, db = db, clock = function() return now end }
    wf:define("w", function() return "after" end)
    assert.equals("before", wf:query("old", "output"))
    assert.equals(200, wf:status("old").ended_at)
    assert.is_nil(wf:status("old").expire_at)
    assert(wf:start("w", {}, "new"))
    t:perform_jobs()
    assert.equals(now + workflow.RETENTION, wf:status("new").expire_at)
    -- The old run has no expiry: the sweep keeps it, purge deletes it; the waiting one stays.
    now = now + 365 * 86400
    assert.same({ 1, 0 }, { wf:sweep() })
    assert.equals("before", wf:query("old", "output"))
    assert.same({ 1, 0 }, { wf:purge(86400) })
    assert.equals("not_found", select(2, wf:status("old")).code)
    assert.equals("waiting", wf:query("live", "status"))
    wf:close()
    t:close()
  end)
end)
