-- bench/tfb/app: the six TechEmpower test types, written as a zever application would be
-- (the query builder, a template through res:render, tables returned as JSON). The queries a
-- request repeats are prepared builder queries (q:prepare() with db.param(): rendered once, a
-- call binds its values; docs/db.md), made on the first request that needs them (app.db opens
-- on first use). bench/tfb/run.sh
-- serves it with DB_DSN naming a copy of the file bench/tfb/data.py writes; check.py verifies
-- its answers against the TFB rules, as it does the nginx + ngx_lua peer's (nginx.conf.in).
--
--   GET /plaintext            Hello, World!                          (text/plain)
--   GET /json                 {"message":"Hello, World!"}
--   GET /db                   one random World row {"id":..,"randomNumber":..}
--   GET /queries?queries=N    N random rows (N clamped to 1..500; not a number: 1)
--   GET /updates?queries=N    N random rows, each given a new randomNumber and written back
--   GET /fortunes             the Fortune rows plus one added at request time, sorted by
--                             message, as an HTML table (views/fortunes.etlua)

local zever = require "zever"
local json = require "zever.json"

local random, floor, tonumber = math.random, math.floor, tonumber
-- Each worker thread its own sequence (as nginx.conf's peer seeds each worker): LuaJIT's fixed
-- default seed gave every worker the same ids and values, so at 2 workers one worker's
-- /updates could repeat the other's, and SQLite skips writing a cell that does not change.
math.randomseed(require("zever.sys").now() * 1e9)
local sort = require "zever.sort"
local tnew = require "table.new"

local app = zever.app()

-- TFB: a missing, non-numeric or < 1 count is 1; more than 500 is 500.
local function count(req)
  local n = tonumber(req.query.queries)
  if not n or n < 1 then return 1 end
  if n > 500 then return 500 end
  return floor(n)
end

app:get("/plaintext", function()
  return "Hello, World!"
end)

app:get("/json", function()
  return { message = "Hello, World!" }
end)

-- World by id, and the write of its randomNumber.
local world, set_number

local function prepare(db)
  world = db:from("World"):where("id", db.param()):prepare()
  set_number = db:update("World"):set("randomNumber", db.param()):where("id", db.param()):prepare()
end

app:get("/db", function()
  if not world then prepare(app.db) end
  return world:first(random(1, 10000))
end)

app:get("/queries", function(req)
  if not world then prepare(app.db) end
  local n = count(req)
  local rows = tnew(n, 0)
  for i = 1, n do
    rows[i] = world:first(random(1, 10000))
  end
  return json.array(rows)
end)

-- The writes of /updates, one transaction for the batch (TFB allows batched updates;
-- nginx.conf.in does the same): a function defined once, handed its rows by db:transaction
-- (docs/db.md), rather than a closure made on every request.
local function write_numbers(tx, rows, n)
  local set = set_number:on(tx)
  for i = 1, n do
    local row = rows[i]
    set:exec(row.randomNumber, row.id)
  end
end

app:get("/updates", function(req)
  if not world then prepare(app.db) end
  local db, n = app.db, count(req)
  local rows = tnew(n, 0)
  for i = 1, n do
    local row = world:first(random(1, 10000))
    row.randomNumber = random(1, 10000)
    rows[i] = row
  end
  db:transaction(write_numbers, rows, n)
  return json.array(rows)
end)

app:get("/fortunes", function(_, res)
  local rows = app.db:from("Fortune"):select("id", "message"):all()
  rows[#rows + 1] = { id = 0, message = "Additional fortune added at request time." }
  sort.by(rows, "message") -- compiled, unlike table.sort with a comparator
  return res:render("fortunes", { fortunes = rows }, { layout = false })
end)

return app
