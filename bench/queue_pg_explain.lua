-- bench/queue_pg_explain.lua: EXPLAIN (ANALYZE, BUFFERS) of the db queue's claim (64 rows) and
-- batched ack (64 ids) on PostgreSQL 15, on a fresh table and after a backlog went through it
-- (the claim's index then holds the dead versions of the rows claimed before).
--
--   bin/zever run bench/queue_pg_explain.lua [backlog=20000] [done=10000]
--
-- Starts its own PostgreSQL (spec/support/pg_server), pushes `backlog` messages with
-- queue:push_batch, claims and acks `done` of them through the adapter (64 at a time, as a
-- worker under load does), then prints the plans of the next claim and of an ack of what it
-- claimed. Statements and plans are the adapter's own (adapters.queue.db's statements).

local zdb = require "zever.db"
local queue = require "zever.queue"
local dbq = require "adapters.queue.db"
local pg_server = require "spec.support.pg_server"

local BACKLOG = tonumber(arg and arg[1] or "") or 20000
local DONE = tonumber(arg and arg[2] or "") or 10000

local srv = pg_server.start()
local dsn = srv:database("explain")
local db = assert(zdb.open(dsn))
local impl = dbq.new(db, { table = "jobs_q", prefetch = 64, prefetch_max = 64 })
local q = queue.wrap(impl, { visibility_timeout = 30 })

local list = {}
for i = 1, 1000 do list[i] = '{"name":"noop","args":{"k":1}}' end
for _ = 1, BACKLOG / 1000 do assert(q:push_batch("jobs:default", list)) end

local function ack_sql(n)
  local rows = { "($1::bigint, $2::text)" }
  for i = 2, n do rows[i] = string.format("($%d, $%d)", 2 * i - 1, 2 * i) end
  return 'DELETE FROM "jobs_q" WHERE (id, claimed_by) IN (VALUES ' .. table.concat(rows, ", ")
    .. ") RETURNING id, claimed_by"
end

local function lit(v)
  if type(v) == "number" then return string.format("%.17g", v) end
  return "'" .. tostring(v):gsub("'", "''") .. "'"
end

-- Substitutes the binds into sql ($n), for EXPLAIN (which takes no parameters).
local function inline(sql, b)
  return (sql:gsub("%$(%d+)", function(i) return lit(b[tonumber(i)]) end))
end

local function explain(title, sql)
  local rows = db:query("EXPLAIN (ANALYZE, BUFFERS) " .. sql)
  print("-- " .. title)
  for _, r in ipairs(rows) do print(r["QUERY PLAN"]) end
  print()
end

local function claim_and_explain(title)
  local now = impl.wall()
  local token = "explain-" .. title
  local claim = impl.sql.pop_batch
  if claim:find("?", 1, true) then   -- SQLite-style placeholders: number them
    local k = 0
    claim = claim:gsub("%?", function() k = k + 1 return "$" .. k end)
  end
  local sql = inline(claim, { token, now + 30, "jobs:default", now, 64 })
  db:exec("BEGIN")
  explain("claim 64 (" .. title .. ")", sql)
  local ids = db:query('SELECT id FROM "jobs_q" WHERE claimed_by = ' .. lit(token))
  local b = {}
  for i, r in ipairs(ids) do b[2 * i - 1], b[2 * i] = r.id, token end
  if #ids > 0 then explain("ack " .. #ids .. " (" .. title .. ")", inline(ack_sql(#ids), b)) end
  db:exec("COMMIT")
end

claim_and_explain("fresh table, " .. BACKLOG .. " waiting")
local n = 0
while n < DONE do
  local m = q:pop("jobs:default")
  if not m then break end
  assert(q:ack(m))
  n = n + 1
end
claim_and_explain("after " .. n .. " claimed and acked, no vacuum")
db:exec("VACUUM jobs_q")
claim_and_explain("after VACUUM")
q:close()
db:close()
srv:stop()
