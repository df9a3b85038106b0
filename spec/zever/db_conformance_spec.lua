-- zever.db on every adapter: the db conformance suite (spec/conformance/db.lua) on SQLite (a
-- temporary file and :memory:) and on a real PostgreSQL 15 (#pg, a database of the shared
-- server per describe; spec/support/pg_server.lua).

local zdb = require "zever.db"
local fs = require "spec.support.files"
local pg_server = require "spec.support.pg_server"

local conformance = require "spec.conformance.db"

describe("zever.db conformance on a sqlite file", function()
  local dir
  setup(function() dir = fs.tmpdir(nil, "zever-db-conf") end)
  teardown(function() fs.rm_rf(dir) end)
  conformance("sqlite file", function() return zdb.open("sqlite:" .. dir .. "/conf.db") end,
    { bool_as_int = true })
end)

describe("zever.db conformance on sqlite :memory:", function()
  conformance("sqlite memory", function() return zdb.open("sqlite::memory:") end,
    { bool_as_int = true })
end)

describe("zever.db conformance on postgres #pg", function()
  if not package.searchpath("adapters.db.postgres", package.path) then
    pending("the postgres adapter (lua/adapters/db/postgres.lua, branch h-pg) is not in this tree yet")
    return
  end
  local fx = pg_server.fixture("db_conformance")
  conformance("postgres", function() return zdb.open(fx.dsn) end, { sqlstate = true })
end)
