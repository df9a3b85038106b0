-- zever worker and zever jobs, end to end: real worker processes on the fixture app
-- (spec/fixtures/jobs_app), a fresh SQLite file per spec shared with this process, which
-- dispatches jobs and reads what the workers recorded (the app's `done` table).

local process = require "spec.support.process"
local sys = require "zever.sys"
local zdb = require "zever.db"
local queue = require "zever.queue"
local jobs = require "zever.jobs"
local jq = require "adapters.jobs.queue"
local dbq = require "adapters.queue.db"
local json = require "zever.json"

local quote = process.quote
local APP = "spec/fixtures/jobs_app"

local fs = require "spec.support.files"
local read, wait_for, alive = fs.text, process.wait_for, process.alive

local path, db, j

local function env_prefix()
  return "DB_DSN=" .. quote("sqlite:" .. path) .. " QUEUE_VISIBILITY_TIMEOUT=1s "
    .. "QUEUE_SWEEP_INTERVAL=200ms QUEUE_POLL_MAX=20ms LOG_LEVEL=error "
end

-- Starts `zever worker` in the background; returns { pid, log }.
local function start(...)
  local log = os.tmpname()
  local args = { env_prefix() .. "exec", quote(sys.exe()), "worker", APP }
  for i = 1, select("#", ...) do args[#args + 1] = quote((select(i, ...))) end
  local p = io.popen(table.concat(args, " ") .. " >" .. log .. " 2>&1 & echo $!")
  local pid = tonumber(p:read("*l"))
  p:close()
  assert(wait_for(function() return read(log):find("zever: worker for", 1, true) end, 10),
    "the worker did not start: " .. read(log))
  return { pid = pid, log = log }
end

-- Exit status of a background process we started is not ours to wait for (the shell reaped
-- it); specs check that it ended and what it logged.
local function stop(w, signal)
  if alive(w.pid) then os.execute("kill -" .. (signal or "KILL") .. " " .. w.pid) end
  return wait_for(function() return not alive(w.pid) end, 10)
end

local function done_rows(where)
  local ok, rows = pcall(db.query, db, "SELECT job, key, attempt, pid, note FROM done "
    .. (where or "") .. " ORDER BY id")
  if not ok or not rows then return {} end
  return rows
end

local function zever_jobs(...)
  return process.run(env_prefix() .. table.concat((function(...)
    local parts = { quote(sys.exe()), "jobs" }
    for i = 1, select("#", ...) do parts[#parts + 1] = quote((select(i, ...))) end
    parts[#parts + 1] = "--app"
    parts[#parts + 1] = APP
    return parts
  end)(...), " "))
end

describe("zever worker", function()
  local workers
  before_each(function()
    path = os.tmpname()
    os.remove(path)
    db = assert(zdb.open("sqlite:" .. path))
    j = jobs.wrap(jq.new(queue.wrap(dbq.new(db), {}), { db = db }), {})
    workers = {}
  end)
  after_each(function()
    for _, w in ipairs(workers) do stop(w, "KILL") end
    db:close()
    for _, suffix in ipairs({ "", "-wal", "-shm" }) do os.remove(path .. suffix) end
  end)

  local function worker(...)
    local w = start(...)
    workers[#workers + 1] = w
    return w
  end

  it("runs jobs dispatched by another process on the shared SQLite queue", function()
    local w = worker()
    for i = 1, 20 do assert(j:dispatch("record", { key = i })) end
    assert.is_true(wait_for(function() return #done_rows() == 20 end))
    local rows = done_rows()
    assert.are.same({ "record", "1", 1, w.pid }, { rows[1].job, rows[1].key, rows[1].attempt,
      rows[1].pid })
    assert.is_true(stop(w, "TERM"))
    assert.is_truthy(read(w.log):find("20 done", 1, true))
  end)

  it("runs jobs dispatched from a request handler of `zever serve`", function()
    local log = os.tmpname()
    local p = io.popen(env_prefix() .. "exec " .. quote(sys.exe()) .. " serve " .. APP
      .. " --listen 127.0.0.1:0 --workers 1 >" .. log .. " 2>&1 & echo $!")
    local srv = { pid = tonumber(p:read("*l")), log = log }
    p:close()
    workers[#workers + 1] = srv
    local port
    assert(wait_for(function()
      port = read(log):match("on http://127%.0%.0%.1:(%d+)")
      return port
    end), "the server did not start: " .. read(log))
    worker()
    local r = process.run("curl -s -S --max-time 10 -d " .. quote('{"name":"record","args":{"key":"web"}}')
      .. " http://127.0.0.1:" .. port .. "/dispatch")
    assert.is_truthy(r.stdout:match('^{"id":%d+}$'), r.stdout .. r.stderr)
    assert.is_true(wait_for(function() return #done_rows() == 1 end))
    assert.are.equal("web", done_rows()[1].key)
  end)

  it("loses nothing when a worker is killed with SIGKILL mid-job: another one runs it", function()
    local a = worker()
    assert(j:dispatch("slow", { key = "k", secs = 60 }))
    assert.is_true(wait_for(function() return #done_rows() == 1 end))
    assert.are.same({ "started", 1, a.pid }, { done_rows()[1].note, done_rows()[1].attempt, a.pid })
    assert.is_true(stop(a, "KILL"))
    local b = worker()
    -- The lease (1 s) runs out, a sweep (every 200 ms, on pop) gives the job back, b runs it.
    assert.is_true(wait_for(function() return #done_rows("WHERE note = 'finished'") == 1 end, 10))
    local fin = done_rows("WHERE note = 'finished'")[1]
    assert.are.same({ "k", 2, b.pid }, { fin.key, fin.attempt, fin.pid })
  end)

  it("drains on SIGTERM: the running job finishes, the process exits, nothing new is claimed",
    function()
      local w = worker("--drain", "5")
      assert(j:dispatch("slow", { key = "a", secs = 0.5 }))
      assert.is_true(wait_for(function() return #done_rows() == 1 end))
      os.execute("kill -TERM " .. w.pid)
      assert(j:dispatch("record", { key = "late" }))
      assert.is_true(wait_for(function() return not alive(w.pid) end, 5))
      local rows = done_rows()
      assert.are.equal(2, #rows)
      assert.are.same({ "a", "finished" }, { rows[2].key, rows[2].note })
      local log = read(w.log)
      assert.is_truthy(log:find("SIGTERM, draining", 1, true))
      assert.is_truthy(log:find("1 done", 1, true))
      local left = db:first("SELECT count(*) AS n FROM queue_messages")
      assert.are.equal(1, left.n)
    end)

  it("on SIGTERM, gives back a job still running at the drain deadline", function()
    local w = worker("--drain", "0.2")
    assert(j:dispatch("slow", { key = "b", secs = 60 }))
    assert.is_true(wait_for(function() return #done_rows() == 1 end))
    os.execute("kill -TERM " .. w.pid)
    assert.is_true(wait_for(function() return not alive(w.pid) end, 5))
    assert.is_truthy(read(w.log):find("1 released", 1, true))
    local row = db:first("SELECT attempt, claimed_by FROM queue_messages")
    assert.are.same({ 2, nil }, { row.attempt, row.claimed_by ~= zdb.null and row.claimed_by or nil })
  end)

  it("dead-letters failing and unknown jobs; zever jobs failed, retry and forget", function()
    local w = worker()
    assert(j:dispatch("boom", { n = 1 }))
    assert(j:dispatch("nobody", { n = 2 }))
    assert.is_true(wait_for(function() return #done_rows("WHERE job = 'dead'") == 2 end))
    local hooked = {}
    for _, row in ipairs(done_rows("WHERE job = 'dead'")) do hooked[row.key] = row.attempt end
    assert.are.same({ boom = 2, nobody = 1 }, hooked)

    local r = zever_jobs("failed", "--json")
    assert.are.equal(0, r.code, r.stderr)
    local list = json.decode(r.stdout)
    assert.are.equal(2, #list)
    if list[1].name ~= "boom" then list[1], list[2] = list[2], list[1] end
    assert.are.same({ "boom", "default", { n = 1 }, 2 }, { list[1].name, list[1].queue, list[1].args,
      list[1].attempts })
    assert.is_truthy(list[1].error:find("kaput", 1, true))
    assert.are.same({ "nobody", 1 }, { list[2].name, list[2].attempts })
    assert.is_truthy(list[2].error:find("unknown job", 1, true))

    r = zever_jobs("failed")
    assert.are.equal(0, r.code)
    assert.is_truthy(r.stdout:find("^ID%s+QUEUE%s+JOB"))
    assert.is_truthy(r.stdout:find("kaput", 1, true))

    r = zever_jobs("retry", tostring(list[1].id))
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("retried 1 job(s)\n", r.stdout)
    -- The worker runs it again (two more attempts) and it is dead again, with a new record.
    assert.is_true(wait_for(function() return #done_rows("WHERE job = 'dead'") == 3 end))

    r = zever_jobs("forget", tostring(list[2].id))
    assert.are.same({ 0, "forgot 1 job(s)\n" }, { r.code, r.stdout })
    r = zever_jobs("forget", "--all")
    assert.are.same({ 0, "forgot 1 job(s)\n" }, { r.code, r.stdout })
    r = zever_jobs("failed")
    assert.are.equal("no failed jobs\n", r.stdout)
    assert.is_true(stop(w, "TERM"))
  end)

  it("rejects usage errors with exit 2", function()
    assert.are.equal(2, zever_jobs("retyr").code)
    assert.are.equal(2, zever_jobs("retry").code)
    assert.are.equal(2, zever_jobs("forget", "x").code)
    assert.are.equal(1, zever_jobs("forget", "12345").code)
    assert.are.equal(2, process.zever("worker", APP, "--concurrency", "0").code)
  end)
end)
