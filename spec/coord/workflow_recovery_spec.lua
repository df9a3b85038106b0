-- A workflow run survives `zever worker` killed (SIGKILL) in the middle of a run: a second
-- worker picks the run up when the job's lease ends, the recorded step is not run again, and
-- the run completes. Real processes on one SQLite file: `zever workflow` starts the run and
-- reports it, the workers run it, this spec reads the effects table the steps write. Twice:
-- the runs in that database (WORKFLOW_ADAPTER=db), and on a real redis-server (redis). Then
-- retention end to end: `zever workflow purge` deletes the ended run, and a worker's periodic
-- sweep deletes a run once its retention passed.
--
-- Robust under load: it waits on what the processes leave (the marker file, the run's status,
-- the process gone), each to a generous deadline that only guards against a hang. The lease is
-- short (1 s: how long the second worker waits for the killed one's job), but the job's own
-- time limit is long (JOBS_TIMEOUT) and each worker runs one job at a time (--concurrency 1),
-- so a slow machine never cuts an attempt short nor lets a worker claim the run a second time
-- while its first attempt is still going (which would run step b twice: at-least-once, the
-- documented case for idempotency keys, not what this spec is about).
local process = require "spec.support.process"
local files = require "spec.support.files"
local sys = require "zever.sys"
local zdb = require "zever.db"
local json = require "zever.json"

local quote, wait_for, alive = process.quote, process.wait_for, process.alive

-- Whether pid has exited: not alive, or a zombie its parent has not reaped yet (the workers'
-- parent shell exits at once; who reaps orphans, and when, depends on the machine).
local function gone(pid)
  if not alive(pid) then return true end
  local f = io.open("/proc/" .. pid .. "/stat", "r")
  if not f then return true end
  local stat = f:read("*l") or ""
  f:close()
  return stat:match("^%d+ %b() (%a)") == "Z"
end

-- Generous deadlines (seconds): a guard against a hang, never a window anything must fit in.
local DEADLINE = 90

local APP = [[
local zever = require "zever"
local app = zever.app()
app.workflow:define("recover", function(ctx, input)
  ctx:step("a", function(key)
    app.db:exec("INSERT INTO effects (step, k) VALUES ('a', ?)", key)
    return "A"
  end)
  ctx:step("b", function(key)
    local marker = os.getenv("MARKER")
    local f = io.open(marker, "r")
    if f then f:close() else
      f = io.open(marker, "w"); f:write(tostring(input.n)); f:close()
      zever.sleep(120)              -- the first worker is killed here, before b's effect
    end
    app.db:exec("INSERT INTO effects (step, k) VALUES ('b', ?)", key)
    return "B"
  end)
  return "done"
end)
app.workflow:define("quick", function(ctx)
  ctx:step("only", function(key)
    app.db:exec("INSERT INTO effects (step, k) VALUES ('only', ?)", key)
    return true
  end)
  return "quick"
end)
return app
]]

local function recovery(store, title)
  describe(title, function()
    local path, db, dir, marker, pids = nil, nil, nil, nil, {}
    local srv = store == "redis" and require("spec.support.redis_server").fixture()
    local prefix

    -- extra: more VAR=value settings (the worker's workflow retention).
    local function env(extra)
      local redis_env = srv and ("REDIS_URL=" .. quote(srv.url) .. " WORKFLOW_PREFIX=" ..
        quote(prefix) .. " ") or ""
      return redis_env .. "DB_DSN=" .. quote("sqlite:" .. path) .. " QUEUE_ADAPTER=db " ..
        "WORKFLOW_ADAPTER=" .. store .. " " ..
        "QUEUE_VISIBILITY_TIMEOUT=1s QUEUE_SWEEP_INTERVAL=200ms QUEUE_POLL_MAX=20ms " ..
        "JOBS_TIMEOUT=600s JOBS_BACKOFF_BASE=100ms JOBS_BACKOFF_CAP=1s " ..
        "LOG_LEVEL=error MARKER=" .. quote(marker) .. " " .. (extra or "")
    end

    local function zever_workflow(...)
      local parts = { env(), quote(sys.exe()), "workflow" }
      for i = 1, select("#", ...) do parts[#parts + 1] = quote((select(i, ...))) end
      parts[#parts + 1] = "--app"
      parts[#parts + 1] = quote(dir)
      return process.run(table.concat(parts, " "))
    end

    local function start_worker(extra)
      local log = os.tmpname()
      local p = io.popen(env(extra) .. "exec " .. quote(sys.exe()) .. " worker " .. quote(dir) ..
        " --concurrency 1 >" .. log .. " 2>&1 & echo $!")
      local pid = tonumber(p:read("*l"))
      p:close()
      pids[#pids + 1] = pid
      return pid, log
    end

    before_each(function()
      path = os.tmpname()
      os.remove(path)
      marker = os.tmpname()
      os.remove(marker)
      db = assert(zdb.open("sqlite:" .. path))
      db:exec("CREATE TABLE effects (id INTEGER PRIMARY KEY, step TEXT, k TEXT)")
      dir = files.tmpdir({ ["app.lua"] = APP }, "zever-wf")
      prefix = srv and srv:prefix("recovery")
    end)

    after_each(function()
      for _, pid in ipairs(pids) do if alive(pid) then os.execute("kill -KILL " .. pid) end end
      pids = {}
      db:close()
      for _, s in ipairs{ "", "-wal", "-shm" } do os.remove(path .. s) end
      os.remove(marker)
      files.rm_rf(dir)
    end)

    it("completes a run after its worker is killed between steps, each effect once", function()
      local r = zever_workflow("start", "recover", "--input", '{"n":7}', "--id", "run-1")
      assert.equals(0, r.code, r.stderr)
      assert.equals("run-1", (r.stdout:gsub("%s+$", "")))
      local pid1, log1 = start_worker()
      assert(wait_for(function() return files.text(marker) == "7" end, DEADLINE),
        "step b never started: " .. files.text(log1))
      os.execute("kill -KILL " .. pid1)
      assert(wait_for(function() return gone(pid1) end, DEADLINE), "the killed worker lingers")
      local a = db:query("SELECT step, k FROM effects")
      assert.same({ { step = "a", k = "run-1/a" } }, a)
      local _, log2 = start_worker()
      local done = wait_for(function()
        local s = zever_workflow("status", "run-1", "--json")
        return s.code == 0 and json.decode(s.stdout).status == "completed"
      end, DEADLINE)
      assert(done, "the run did not complete: " .. files.text(log2))
      local rows = db:query("SELECT step, k FROM effects ORDER BY id")
      assert.same({ { step = "a", k = "run-1/a" }, { step = "b", k = "run-1/b" } }, rows)
      local st = json.decode(zever_workflow("status", "run-1", "--json").stdout)
      assert.same({ "a", "b" }, st.steps)
      assert.equals("done", st.output)
      r = zever_workflow("list", "--json")
      assert.equals("run-1", json.decode(r.stdout)[1].id)
      r = zever_workflow("start", "recover", "--id", "run-1")
      assert.equals(1, r.code)
      assert.matches("conflict", r.stderr .. r.stdout)
      r = zever_workflow("retry", "run-1")
      assert.equals(1, r.code)
      assert.matches('the run "run-1" is completed, not stuck', r.stderr, 1, true)
      -- Purge: a dry run counts the ended run and deletes nothing; a cut-off before it ended
      -- keeps it; --before 0s deletes it.
      r = zever_workflow("purge", "--before", "0s", "--dry-run", "--json")
      assert.equals(0, r.code, r.stderr)
      assert.equals(1, json.decode(r.stdout).actions[1].count)
      r = zever_workflow("purge", "--before", "1h", "--json")
      assert.equals(0, r.code, r.stderr)
      assert.same({ purged = 0 }, json.decode(r.stdout))
      assert.equals(0, zever_workflow("status", "run-1").code)
      r = zever_workflow("purge", "--before", "0s", "--json")
      assert.same({ purged = 1 }, json.decode(r.stdout))
      r = zever_workflow("status", "run-1")
      assert.equals(1, r.code)
      assert.matches('no run "run-1"', r.stderr, 1, true)
      r = zever_workflow("purge")
      assert.equals(2, r.code)
      assert.matches("want --before", r.stderr, 1, true)
      os.remove(log1)
      os.remove(log2)
    end)

    it("deletes a run once its retention passed: the worker's periodic sweep", function()
      local _, log = start_worker("WORKFLOW_RETENTION=1s WORKFLOW_SWEEP_INTERVAL=1s ")
      local r = zever_workflow("start", "quick", "--id", "brief")
      assert.equals(0, r.code, r.stderr)
      -- The step ran (its row), then the run is gone: deleted by the sweep, not never made.
      local swept = wait_for(function()
        local s = zever_workflow("status", "brief")
        return s.code == 1 and s.stderr:find('no run "brief"', 1, true) ~= nil
      end, DEADLINE)
      assert(swept, "the run was not swept: " .. files.text(log))
      assert.same({ { step = "only", k = "brief/only" } }, db:query("SELECT step, k FROM effects"))
      os.remove(log)
    end)
  end)
end

recovery("db", "zever.workflow recovery (db store)")
recovery("redis", "zever.workflow recovery (redis store) #redis")
