-- bench/tfb/app: the six TechEmpower test types, written as a zever application would be
-- (the query builder, a template through res:render, tables returned as JSON). bench/tfb/run.sh
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

app:get("/db", function()
  return app.db:from("World"):where("id", random(1, 10000)):first()
end)

app:get("/queries", function(req)
  local db, n = app.db, count(req)
  local rows = tnew(n, 0)
  for i = 1, n do
    rows[i] = db:from("World"):where("id", random(1, 10000)):first()
  end
  return json.array(rows)
end)

app:get("/updates", function(req)
  local db, n = app.db, count(req)
  local rows = tnew(n, 0)
  for i = 1, n do
    local row = db:from("World"):where("id", random(1, 10000)):first()
    row.randomNumber = random(1, 10000)
    rows[i] = row
  end
  -- One transaction for the batch (TFB allows batched updates; nginx.conf.in does the same).
  db:transaction(function(tx)
    for i = 1, n do
      local row = rows[i]
      tx:update("World"):set("randomNumber", row.randomNumber):where("id", row.id):exec()
    end
  end)
  return json.array(rows)
end)

app:get("/fortunes", function(_, res)
  local rows = app.db:from("Fortune"):select("id", "message"):all()
  rows[#rows + 1] = { id = 0, message = "Additional fortune added at request time." }
  sort.by(rows, "message") -- compiled, unlike table.sort with a comparator
  return res:render("fortunes", { fortunes = rows }, { layout = false })
end)

return app
