-- bench/pg_round_trips.lua: round trips against statements for the operations pipeline mode
-- changed (docs/db.md, "Pipelines"), on a PostgreSQL 15 of its own (spec/support/pg_server).
--
--   bin/zever run bench/pg_round_trips.lua
--
-- Round trips: zever.pg.round_trips() (the binding counts each operation it sends and awaits;
-- a pipeline is one). Statements: what the server logged for the database (log_statement =
-- 'all'; a prepared statement's execution is logged as "execute", its preparation is not), so
-- without pipelining every logged statement, and every prepare, would be a round trip of its own.

local zdb = require "zever.db"
local pg = require "zever.pg"
local queue = require "zever.queue"
local dbq = require "adapters.queue.db"
local pg_server = require "spec.support.pg_server"

local srv = assert(pg_server.start())
local dsn = srv:database("trips")
local dbname = dsn:match("/([%w_]+)$")
assert(srv:psql("postgres", "ALTER DATABASE " .. dbname .. " SET log_statement = 'all'").code == 0)
local db = assert(zdb.open(dsn))
db:exec("CREATE TABLE t (id int PRIMARY KEY, v text)")
local q = queue.wrap(dbq.new(db, { table = "qt" }), { visibility_timeout = 30 })
assert(q:len("x"))
local logfile = srv.dir .. "/server.log"

local function logged()
  local f = io.open(logfile)
  local s = f and f:read("*a") or ""
  if f then f:close() end
  local n = 0
  for _ in s:gmatch("LOG:  statement: ") do n = n + 1 end
  for _ in s:gmatch("LOG:  execute ") do n = n + 1 end
  return n
end

local function row(name, prepares, fn)
  local l0, t0 = logged(), pg.round_trips()
  fn()
  local l1, t1 = logged(), pg.round_trips()
  print(string.format("%-58s %5d statements %4d prepares %5d round trips", name, l1 - l0, prepares,
    t1 - t0))
end

local id = 0
local function nid() id = id + 1 return id end
row("a statement new on the connection (prepare + execute)", 1, function()
  db:exec("INSERT INTO t VALUES (?, ?) -- new", nid(), "a")
end)
row("the same statement again (prepared)", 0, function()
  db:exec("INSERT INTO t VALUES (?, ?) -- new", nid(), "a")
end)
row("transaction of 3 prepared statements", 0, function()
  db:transaction(function(tx)
    for _ = 1, 3 do tx:exec("INSERT INTO t VALUES (?, ?) -- new", nid(), "b") end
  end)
end)
row("empty transaction", 0, function() db:transaction(function() end) end)
row("db:pipeline of 5 prepared statements", 0, function()
  db:pipeline(function(p)
    for _ = 1, 5 do p:exec("INSERT INTO t VALUES (?, ?) -- new", nid(), "c") end
  end)
end)
local list = {}
for i = 1, 1000 do list[i] = "payload " .. i end
assert(q:push_batch("x", list)) -- prepares the 64- and 40-row INSERTs
row("queue:push_batch of 1,000 (16 INSERTs, prepared)", 0, function() assert(q:push_batch("x", list)) end)
row("queue:push x 100 from a plain caller", 0, function()
  for i = 1, 100 do assert(q:push("x", list[i])) end
end)
q:close()
db:close()
srv:stop()
