-- The jobs adapter through the jobs conformance suite, over each queue it can sit on: memory
-- (a process-wide C queue), db (the queue table on an SQLite file, which also holds the dead
-- letters) and redis (#redis: a real redis-server on a free loopback port).

local jobs = require "zever.jobs"
local jq = require "adapters.jobs.queue"
local queue = require "zever.queue"
local dbq = require "adapters.queue.db"
local rq = require "adapters.queue.redis"
local zdb = require "zever.db"
local redis_server = require "spec.support.redis_server"

local serial = 0
local function unique(what)
  serial = serial + 1
  return ("spec_jobs_%s_%d_%d"):format(what, serial, os.time())
end

local DEFAULTS = { attempts = 3, base = 0.01, cap = 0.1, jitter = false, timeout = 5 }

-- The jobs adapter does not close the queue or the database it was given (they belong to the
-- container), so each factory records what it opened and an after_each closes it: a redis
-- queue left open would reconnect to its stopped server for the rest of the run.
local opened = {}
local function keep(x)
  opened[#opened + 1] = x
  return x
end
local function close_opened()
  for i = #opened, 1, -1 do opened[i]:close(); opened[i] = nil end
end

describe("jobs adapters", function()
  after_each(close_opened)

  require("spec.conformance.jobs")("memory queue", function()
    local db = keep(assert(zdb.open("sqlite::memory:")))
    local q = keep(queue.new{ name = unique("memory") })
    return jobs.wrap(jq.new(q, { db = db }), DEFAULTS)
  end)

  require("spec.conformance.jobs")("db queue", function()
    local db = keep(assert(zdb.open("sqlite::memory:")))
    local q = keep(queue.wrap(dbq.new(db, { table = unique("q") }), { visibility_timeout = 30 }))
    return jobs.wrap(jq.new(q, { db = db, table = unique("failed") }), DEFAULTS)
  end)

  describe("redis #redis", function()
    local srv = redis_server.fixture()
    require("spec.conformance.jobs")("redis queue", function()
      local db = keep(assert(zdb.open("sqlite::memory:")))
      local q = keep(queue.wrap(assert(rq.new{ url = srv.url, prefix = srv:prefix("jobs") }),
        { visibility_timeout = 30 }))
      return jobs.wrap(jq.new(q, { db = db }), DEFAULTS)
    end)
  end)
end)
