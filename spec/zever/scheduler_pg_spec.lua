-- The scheduler's one-run-per-slot db lock on a real PostgreSQL 15 (spec/support/pg_server):
-- the conformance suite with two locks on two connections, each pair on a table of its own.

local pg_server = require "spec.support.pg_server"
local zdb = require "zever.db"
local dblock = require "adapters.scheduler.db"
local fs = require "spec.support.files"
local unique = fs.unique_ident

describe("scheduler db locks on postgres #pg", function()
  local fx = pg_server.fixture("scheduler")
  local opened = {}
  teardown(function()
    for _, d in ipairs(opened) do pcall(d.close, d) end
  end)

  require("spec.conformance.scheduler")("db (postgres)", function()
    local a, b = assert(zdb.open(fx.dsn)), assert(zdb.open(fx.dsn))
    opened[#opened + 1], opened[#opened + 2] = a, b
    local name = unique("locks")
    return dblock.new{ db = a, table = name }, dblock.new{ db = b, table = name }
  end)
end)
