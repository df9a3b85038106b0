-- bench/db_lua_bench.lua: the query builder and the SQLite binding from Lua, against Debian's
-- LuaSQL (lua-sql-sqlite3) doing the same primary-key query. Run: bin/zever run bench/db_lua_bench.lua
--
-- Time is CPU time of this process (os.clock), median of 5 runs, so a busy machine inflates
-- the numbers less than wall time would. Each line: name, iterations, ns/op.

local zdb = require "zever.db"

local N = tonumber(arg and arg[1]) or 200000
local ROWS = 1000

local function measure(name, n, fn)
  fn(math.min(n, 1000)) -- warm up (and let the JIT compile)
  local runs = {}
  for r = 1, 5 do
    local t0 = os.clock()
    fn(n)
    runs[r] = (os.clock() - t0) / n * 1e9
  end
  table.sort(runs)
  print(string.format("%-34s %10d %10.1f ns/op", name, n, runs[3]))
  return runs[3]
end

local path = os.tmpname()
os.remove(path)
local db = assert(zdb.open("sqlite:" .. path))
assert(db:exec([[CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT NOT NULL, name TEXT,
  age INTEGER, status TEXT)]]))
db:transaction(function(tx)
  for i = 1, ROWS do
    assert(tx:exec("INSERT INTO users (id, email, name, age, status) VALUES (?, ?, ?, ?, ?)",
      i, "user" .. i .. "@example.com", "User " .. i, 18 + i % 50, i % 3 == 0 and "inactive" or "active"))
  end
end)

local sink

measure("RenderTypicalSelect", N, function(n)
  for _ = 1, n do
    local text = db:from("users"):select("id", "email"):where("age", ">", 18):where("status", "active")
      :where_in("id", { 1, 2, 3 }):order_by("id", "desc"):limit(10):to_sql()
    sink = text
  end
end)

local builder_ns = measure("PrimaryKeySelectBuilder", N, function(n)
  for i = 1, n do
    local row = db:from("users"):where("id", i % ROWS + 1):first()
    sink = row.email
  end
end)

measure("PrimaryKeySelectRaw", N, function(n)
  for i = 1, n do
    local row = db:first("SELECT * FROM users WHERE id = ?", i % ROWS + 1)
    sink = row.email
  end
end)

-- db:exec with values given one by one (the vararg path), with the Lua heap it allocates a call
-- (collectgarbage("count") across the timed loop, collector stopped).
local function exec_case(name, fn)
  assert(fn(1).changes == 1, name .. ": the statement changes one row")
  measure(name, N, function(n)
    for i = 1, n do sink = fn(i).changes end
  end)
  collectgarbage()
  collectgarbage("stop")
  local before = collectgarbage("count")
  for i = 1, 10000 do sink = fn(i).changes end
  local bytes = (collectgarbage("count") - before) * 1024 / 10000
  collectgarbage("restart")
  print(string.format("%-34s %10d %10.1f B/op (Lua heap)", name, 10000, bytes))
end

exec_case("ExecOneValue", function(i)
  return db:exec("UPDATE users SET age = age WHERE id = ?", i % ROWS + 1)
end)
exec_case("ExecFourValues", function(i)
  return db:exec("UPDATE users SET age = ?, status = ? WHERE id = ? AND email <> ?",
    18 + i % 50, "active", i % ROWS + 1, "")
end)
exec_case("ExecEightValues", function(i)
  return db:exec([[UPDATE users SET age = ?, status = ?, name = ? WHERE id = ? AND email <> ?
    AND age >= ? AND age < ? AND status <> ?]], 18, "active", "User", i % ROWS + 1, "", 0, 1000, "x")
end)

local ok, luasql = pcall(require, "luasql.sqlite3")
if ok then
  local env = luasql.sqlite3()
  local conn = assert(env:connect(path))
  local format = string.format
  local luasql_ns = measure("PrimaryKeySelectLuaSQL", N, function(n)
    for i = 1, n do
      local cur = conn:execute(format("SELECT * FROM users WHERE id = %d", i % ROWS + 1))
      local row = cur:fetch({}, "a")
      cur:close()
      sink = row.email
    end
  end)
  print(string.format("builder vs LuaSQL: %.2fx faster", luasql_ns / builder_ns))
  conn:close()
  env:close()
else
  print("LuaSQL not installed (apt-get install lua-sql-sqlite3): no comparison")
end

db:close()
os.remove(path)
os.remove(path .. "-wal")
os.remove(path .. "-shm")
return sink and nil
