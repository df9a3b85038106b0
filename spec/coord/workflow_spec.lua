-- zever.workflow on the jobs battery: the conformance suite (spec/conformance/workflow.lua) with
-- the memory store and the db store on a SQLite file, and app.workflow from the container.
local zever = require "zever"
local workflow = require "zever.workflow"
local zdb = require "zever.db"

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
