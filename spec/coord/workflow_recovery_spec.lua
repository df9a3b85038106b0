-- A workflow run survives `zever worker` killed (SIGKILL) in the middle of a run: a second
-- worker picks the run up when the job's lease ends, the recorded step is not run again, and
-- the run completes. Real processes on one SQLite file: `zever workflow` starts the run and
-- reports it, the workers run it, this spec reads the effects table the steps write. Twice:
-- the runs in that database (WORKFLOW_ADAPTER=db), and on a real redis-server (redis).
local process = require "spec.support.process"
local files = require "spec.support.files"
local sys = require "zever.sys"
local zdb = require "zever.db"
local json = require "zever.json"

local quote, wait_for, alive = process.quote, process.wait_for, process.alive

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
return app
]]

local function recovery(store, title)
  describe(title, function()
    local path, db, dir, marker, pids = nil, nil, nil, nil, {}
    local srv = store == "redis" and require("spec.support.redis_server").fixture()
    local prefix

    local function env()
      local redis_env = srv and ("REDIS_URL=" .. quote(srv.url) .. " WORKFLOW_PREFIX=" ..
        quote(prefix) .. " ") or ""
      return redis_env .. "DB_DSN=" .. quote("sqlite:" .. path) .. " QUEUE_ADAPTER=db " ..
        "WORKFLOW_ADAPTER=" .. store .. " " ..
        "QUEUE_VISIBILITY_TIMEOUT=1s QUEUE_SWEEP_INTERVAL=200ms QUEUE_POLL_MAX=20ms " ..
        "LOG_LEVEL=error MARKER=" .. quote(marker) .. " "
    end

    local function zever_workflow(...)
      local parts = { env(), quote(sys.exe()), "workflow" }
      for i = 1, select("#", ...) do parts[#parts + 1] = quote((select(i, ...))) end
      parts[#parts + 1] = "--app"
      parts[#parts + 1] = quote(dir)
      return process.run(table.concat(parts, " "))
    end

    local function start_worker()
      local log = os.tmpname()
      local p = io.popen(env() .. "exec " .. quote(sys.exe()) .. " worker " .. quote(dir) ..
        " >" .. log .. " 2>&1 & echo $!")
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
      assert(wait_for(function() return files.text(marker) == "7" end, 20),
        "step b never started: " .. files.text(log1))
      os.execute("kill -KILL " .. pid1)
      assert(wait_for(function() return not alive(pid1) end, 10))
      local a = db:query("SELECT step, k FROM effects")
      assert.same({ { step = "a", k = "run-1/a" } }, a)
      local _, log2 = start_worker()
      local done = wait_for(function()
        local s = zever_workflow("status", "run-1", "--json")
        return s.code == 0 and json.decode(s.stdout).status == "completed"
      end, 30)
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
      os.remove(log1)
      os.remove(log2)
    end)
  end)
end

recovery("db", "zever.workflow recovery (db store)")
recovery("redis", "zever.workflow recovery (redis store) #redis")
