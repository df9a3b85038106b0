-- bench/pg_bench.lua: a primary-key select through zever.db's query builder on PostgreSQL,
-- side by side with pgbench -S (C + libpq) against the same server in the same run.
--
--   bin/zever run bench/pg_bench.lua [seconds=10] [runs=3]
--
-- It starts its own PostgreSQL 15 (spec/support/pg_server.lua: a temporary data directory on a
-- free loopback port, fsync off), loads pgbench's tables at scale 1 (100,000 accounts), then
-- for 1 and 8 clients, `runs` times each, alternating:
--   pgbench   /usr/lib/postgresql/15/bin/pgbench -S -n -c C -j min(C,2) -T seconds
--             (its "tps = ... (without initial connection time)"; the simple protocol, pgbench's
--             default), and the same with -M prepared (the protocol zever uses: prepared once
--             per connection, then Bind/Execute)
--   zever     C coroutines on this process's loop over one pool of C connections, each looping
--             db:from("pgbench_accounts"):select("abalance"):where("aid", random):first()
--             (the statement pgbench -S runs) for `seconds`; tps = statements / elapsed
-- and prints the median TPS of each and the ratios zever / pgbench -S and zever / pgbench -S
-- -M prepared (issue #17's target: >= 0.8 against pgbench -S).
-- pgbench runs in its own processes (one thread per 4 clients at most here: -j), zever in one
-- thread, as a zever worker would; the machine's cores are shared by both, as in production.
--
-- The HTTP side (issue #17: "served over HTTP with wrk"), in the same rounds: `zever serve
-- --workers 1` on a generated app whose route GET /a/:aid runs the same builder select on
-- app.db (DB_POOL_SIZE = C) and answers the balance as JSON; `wrk -t1 -cC -dSECONDS` with a
-- script that asks for a random aid each request; tps = wrk's Requests/sec (every answer
-- checked: non-2xx counted as errors and the run refused). Ratios as above, against pgbench -S
-- at the same C (wrk's connections = pgbench's clients).

local sys = require "zever.sys"
local sched = require "zever.sched"
local loop = require "zever.loop"
local zdb = require "zever.db"
local pg_server = require "spec.support.pg_server"
local process = require "spec.support.process"

local SECONDS = tonumber(arg and arg[1] or "") or 10
local RUNS = tonumber(arg and arg[2] or "") or 3
local CLIENTS = { 1, 8 }
local ACCOUNTS = 100000
local format = string.format
local PGBENCH = pg_server.BIN .. "pgbench"

local function median(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  local n = #s
  if n % 2 == 1 then return s[(n + 1) / 2] end
  return (s[n / 2] + s[n / 2 + 1]) / 2
end

local srv = assert(pg_server.start())
local dsn, dbname = srv:database("bench")
-- pgbench reads the password from the environment, so no command line carries it.
local env = format("PGPASSWORD=%s PGHOST=127.0.0.1 PGPORT=%d PGUSER=%s ", srv.password, srv.port,
  srv.user)

local function sh(cmd)
  local r = process.run(env .. cmd)
  if r.code ~= 0 then error("failed: " .. cmd .. "\n" .. (r.stderr or ""), 0) end
  return r.stdout
end

sh(PGBENCH .. " -i -q -s 1 " .. dbname)

local function pgbench(clients, mode)
  local out = sh(format("%s -S -n -M %s -c %d -j %d -T %d %s", PGBENCH, mode, clients,
    math.min(clients, 2), SECONDS, dbname))
  local tps = out:match("tps = ([%d%.]+) %(without initial connection time%)")
  return assert(tonumber(tps), "no tps in pgbench's output: " .. out)
end

local function zever(clients)
  local db = assert(zdb.open(dsn, { pool_size = clients }))
  -- Warm: every connection open, the statement prepared on each.
  local warm = 0
  for _ = 1, clients do
    sched.spawn(function()
      for i = 1, 50 do db:from("pgbench_accounts"):select("abalance"):where("aid", i):first() end
      warm = warm + 1
    end)
  end
  while warm < clients do loop.run("once") end
  local count, finished = 0, 0
  local random = math.random
  local t0 = sys.now()
  local deadline = t0 + SECONDS
  for _ = 1, clients do
    sched.spawn(function()
      local now = sys.now
      while now() < deadline do
        local row = db:from("pgbench_accounts"):select("abalance"):where("aid", random(ACCOUNTS)):first()
        if row then count = count + 1 end
      end
      finished = finished + 1
    end)
  end
  while finished < clients do loop.run("once") end
  local elapsed = sys.now() - t0
  db:close()
  return count / elapsed
end

-- The served app and the wrk script, in a folder of their own.
local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. process.quote(dir)))
local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end
write(dir .. "/app.lua", [[
local zever = require "zever"
local app = zever.app()
app:get("/a/:aid", function(req)
  local row = app.db:from("pgbench_accounts"):select("abalance")
    :where("aid", tonumber(req.params.aid)):first()
  return { abalance = row and row.abalance }
end)
return app
]])
write(dir .. "/wrk.lua", format([[
math.randomseed(os.time())
request = function() return wrk.format("GET", "/a/" .. math.random(%d)) end
]], ACCOUNTS))

-- Serves the app with one worker and a pool of `clients` connections, runs wrk with `clients`
-- connections for SECONDS (after a 1 s warm-up), stops the server. Returns requests/s.
local function http(clients)
  local port = process.free_port()
  local envs = format("DB_DSN=%s DB_POOL_SIZE=%d LOG_LEVEL=error ", process.quote(dsn), clients)
  local p = assert(io.popen(envs .. "exec " .. process.quote(sys.exe()) .. " serve "
    .. process.quote(dir .. "/app.lua") .. " --listen 127.0.0.1:" .. port
    .. " --workers 1 --access-log off >" .. process.quote(dir .. "/serve.log") .. " 2>&1 & echo $!"))
  local pid = assert(tonumber(p:read("*l")))
  p:close()
  local url = format("http://127.0.0.1:%d", port)
  local up = sys.now() + 30
  while process.run("curl -sf -o /dev/null " .. url .. "/a/1").code ~= 0 do
    if sys.now() > up then
      process.terminate(pid, "TERM", 10)
      error("zever serve did not answer: " .. (io.open(dir .. "/serve.log"):read("*a")), 0)
    end
    sched.sleep(0.05)
  end
  local function wrk(secs)
    return process.run(format("wrk -t1 -c%d -d%ds -s %s %s", clients, secs,
      process.quote(dir .. "/wrk.lua"), url)).stdout
  end
  wrk(1)
  local out = wrk(SECONDS)
  process.terminate(pid, "TERM", 10)
  assert(not out:find("Non%-2xx"), "wrk saw non-2xx answers:\n" .. out)
  assert(not out:find("Socket errors"), "wrk saw socket errors:\n" .. out)
  return assert(tonumber(out:match("Requests/sec:%s*([%d%.]+)")), "no Requests/sec: " .. out)
end

print(format("pg_bench: PostgreSQL %s on 127.0.0.1:%d, scale 1, %d s per run, %d runs, %s",
  sh("psql -X -A -t -c 'SHOW server_version' " .. dbname):gsub("%s+$", ""), srv.port, SECONDS,
  RUNS, os.date("!%Y-%m-%d %H:%M UTC")))
for _, c in ipairs(CLIENTS) do
  local a, p, b, h = {}, {}, {}, {}
  for r = 1, RUNS do
    a[r] = pgbench(c, "simple")
    p[r] = pgbench(c, "prepared")
    b[r] = zever(c)
    h[r] = http(c)
    print(format("  clients=%d run %d: pgbench -S %.0f tps, -S -M prepared %.0f tps, " ..
      "zever builder %.0f tps, over HTTP (wrk -c%d) %.0f req/s", c, r, a[r], p[r], b[r], c, h[r]))
  end
  local pa, pp, zb, zh = median(a), median(p), median(b), median(h)
  print(format("clients=%d  pgbench -S %.0f  -S -M prepared %.0f  zever %.0f tps  " ..
    "ratio %.2f / %.2f (medians)", c, pa, pp, zb, zb / pa, zb / pp))
  print(format("clients=%d  HTTP: zever serve (1 worker) + wrk %.0f req/s  ratio vs pgbench -S "
    .. "%.2f, vs -S -M prepared %.2f (medians)", c, zh, zh / pa, zh / pp))
end
srv:stop()
os.execute("rm -rf " .. process.quote(dir))
