-- The scheduler lock adapters through the scheduler conformance suite: memory (two handles of
-- one name), db (two connections to one SQLite file) and redis (#redis: two clients of a real
-- redis-server on a free loopback port).

local memory = require "adapters.scheduler.memory"
local dblock = require "adapters.scheduler.db"
local rlock = require "adapters.scheduler.redis"
local zdb = require "zever.db"
local redis_server = require "spec.support.redis_server"

local serial = 0
local function unique(what)
  serial = serial + 1
  return ("spec:locks:%s:%d:%d"):format(what, serial, os.time())
end

describe("scheduler locks", function()
  require("spec.conformance.scheduler")("memory", function()
    local name = unique("memory")
    return memory.new{ name = name }, memory.new{ name = name }
  end)

  describe("db", function()
    local dir
    setup(function()
      local p = assert(io.popen("mktemp -d /tmp/zever-locks-XXXXXX"))
      dir = p:read("*l")
      p:close()
    end)
    teardown(function() os.execute("rm -rf '" .. dir .. "'") end)

    require("spec.conformance.scheduler")("db", function()
      local path = "sqlite:" .. dir .. "/" .. unique("db"):gsub("[^%w]", "_") .. ".db"
      local a, b = assert(zdb.open(path)), assert(zdb.open(path))
      return dblock.new{ db = a }, dblock.new{ db = b }
    end)
  end)

  describe("redis #redis", function()
    local srv = redis_server.fixture()
    require("spec.conformance.scheduler")("redis", function()
      local prefix = srv:prefix("locks")
      return assert(rlock.new{ url = srv.url, prefix = prefix }),
        assert(rlock.new{ url = srv.url, prefix = prefix })
    end)
  end)
end)
