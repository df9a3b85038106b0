-- bench/sql_callgrind.lua: fixed-count drivers for callgrind instruction counts (load-independent)
-- of the query builder's shape-cache render and of the C renderer. Run:
--   valgrind --tool=callgrind --smc-check=all bin/zever run bench/sql_callgrind.lua [walk|c]
-- walk: RenderTypicalSelect of db_lua_bench.lua 20000 times, JIT on (the Lua walk of render.lua);
-- c: 2000 selects with an IN subquery, JIT off (subqueries always go to zever.sql, l_render).
local mode = arg and arg[1] or "walk"
local db = assert(require("zever.db").open("sqlite::memory:"))
local n, text = 0, nil
if mode == "c" then
  jit.off()
  for _ = 1, 2000 do
    text = db:from("users"):select("id", "name")
      :where_in("id", db:from("posts"):select("user_id"):where("views", ">", 10))
      :where("age", ">=", 18):order_by("id", "desc"):limit(10):to_sql()
    n = n + #text
  end
else
  for _ = 1, 20000 do
    text = db:from("users"):select("id", "email"):where("age", ">", 18):where("status", "active")
      :where_in("id", { 1, 2, 3 }):order_by("id", "desc"):limit(10):to_sql()
    n = n + #text
  end
end
print(mode, n, text)
