-- bench/db_overhead_pg_alloc.lua: Lua heap bytes per db:transaction and per savepoint
-- (tx:transaction inside one), on SQLite (:memory:) and on PostgreSQL (spec/support/pg_server.lua,
-- a pool of one connection, from a coroutine as a request runs), each around one UPDATE whose
-- result fn drops. Issue #24: transactions and savepoints allocate nothing per call.
-- Run: bin/zever run bench/db_overhead_pg_alloc.lua [N]   (N operations counted, default 5000)
local zdb = require "zever.db"
local sched = require "zever.sched"
local loop = require "zever.loop"
local pg_server = require "spec.support.pg_server"
local bytes_per_op = require("bench.harness").bytes_per_op

local N = tonumber(arg and arg[1]) or 5000
local UPDATE = "UPDATE w SET n = ? WHERE id = ?"

local function measure(name, db)
  db:exec("CREATE TABLE w (id integer PRIMARY KEY, n integer NOT NULL)")
  for i = 1, 100 do db:exec("INSERT INTO w VALUES (?, ?)", i, i) end
  local v, id
  local function body(tx) tx:exec(UPDATE, v, id) end
  local function outer(tx) tx:transaction(body) end
  local function tx_loop(n)
    for i = 1, n do
      v, id = i, i % 100 + 1
      db:transaction(body)
    end
  end
  local function sp_loop(n)
    db:transaction(function(tx)
      for i = 1, n do
        v, id = i, i % 100 + 1
        outer(tx) -- tx:transaction(body): a savepoint each
      end
    end)
  end
  tx_loop(N) -- warm: the traces compile before the counted run
  print(("%-10s transaction %8.1f B/op"):format(name, bytes_per_op(tx_loop, N)))
  sp_loop(N)
  print(("%-10s savepoint   %8.1f B/op"):format(name, bytes_per_op(sp_loop, N)))
end

local srv = assert(pg_server.start())
local dsn = srv:database("alloc")
local done, failure = false, nil
sched.spawn(function()
  local ok, err = xpcall(function()
    measure("sqlite", assert(zdb.open("sqlite::memory:")))
    measure("postgres", assert(zdb.open(dsn, { pool_size = 1 })))
  end, debug.traceback)
  if not ok then failure = err end
  done = true
end)
while not done do loop.run() end
srv:stop()
if failure then error(failure, 0) end
