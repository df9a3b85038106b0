-- zever schedule list and the scheduler inside `zever worker`, end to end: the fixture app
-- (spec/fixtures/scheduler_app) schedules every("1s", "stamp"); two real worker processes
-- share one SQLite file (the queue and the db slot lock), and each slot's job runs once.

local process = require "spec.support.process"
local sys = require "zever.sys"
local zdb = require "zever.db"
local json = require "zever.json"

local quote = process.quote
local APP = "spec/fixtures/scheduler_app"

local fs = require "spec.support.files"
local read, wait_for = fs.text, process.wait_for

local function zever(args, env)
  return process.run((env or "") .. quote(sys.exe()) .. " " .. args)
end

describe("zever schedule", function()
  it("lists each entry with its next run time", function()
    local r = zever("schedule list " .. APP)
    assert.are.equal(0, r.code, r.stderr)
    local lines = {}
    for line in r.stdout:gmatch("[^\n]+") do lines[#lines + 1] = line end
    assert.are.equal(4, #lines)
    assert.is_truthy(lines[1]:find("^KIND%s+SPEC%s+JOB%s+NEXT RUN %(UTC%)"))
    assert.is_truthy(lines[2]:find("^every%s+1s%s+stamp%s+%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ$"))
    assert.is_truthy(lines[3]:find("^cron%s+%*/5 %* %* %* %*%s+report%s+.*:%d[05]:00Z$"))
    assert.is_truthy(lines[4]:find("^cron%s+@daily%s+cleanup%s+.*T00:00:00Z$"))
  end)

  it("prints JSON with --json", function()
    local before = os.time()
    local r = zever("schedule list " .. APP .. " --json")
    assert.are.equal(0, r.code, r.stderr)
    local rows = json.decode(r.stdout)
    assert.are.equal(3, #rows)
    assert.are.equal("stamp", rows[1].job)
    assert.is_true(rows[1].next > before and rows[1].next <= os.time() + 2)
    assert.are.equal(0, rows[2].next % 300)
    assert.are.same({ kind = "daily" }, rows[2].args)
    assert.are.equal(0, rows[3].next % 86400)
  end)

  it("exits 2 without the list subcommand", function()
    local r = zever("schedule lst " .. APP)
    assert.are.equal(2, r.code)
    assert.is_truthy(r.stderr:find('unknown subcommand "lst"', 1, true))
  end)

  it("runs each slot's job exactly once with two worker processes on one SQLite file", function()
    local dir = require("spec.support.files").tmpdir()
    local out, dbfile = dir .. "/out", dir .. "/app.db"
    local env = "DB_DSN=" .. quote("sqlite:" .. dbfile) .. " SCHEDULER_ADAPTER=db SCHED_OUT="
      .. quote(out) .. " QUEUE_POLL_MAX=20ms LOG_LEVEL=error "
    local pids, logs = {}, {}
    for i = 1, 2 do
      logs[i] = dir .. "/w" .. i .. ".log"
      local p = io.popen(env .. "exec " .. quote(sys.exe()) .. " worker " .. APP .. " >"
        .. logs[i] .. " 2>&1 & echo $!")
      pids[i] = tonumber(p:read("*l"))
      p:close()
    end
    for i = 1, 2 do
      assert(wait_for(function() return read(logs[i]):find("zever: worker for", 1, true) end, 10),
        read(logs[i]))
    end
    -- At least three slots fired after both workers were up.
    assert(wait_for(function()
      local n = 0
      for _ in read(out):gmatch("[^\n]+") do n = n + 1 end
      return n >= 4
    end, 15), "the schedule did not fire: " .. read(logs[1]) .. read(logs[2]))
    for i = 1, 2 do os.execute("kill -TERM " .. pids[i]) end
    for i = 1, 2 do
      assert(wait_for(function() return read(logs[i]):find("worker stopped", 1, true) end, 15))
    end
    -- Every run line is one job; the lock table has one row per won slot.
    local runs = {}
    for pid, at in read(out):gmatch("(%d+) ([%d%.]+)") do
      runs[#runs + 1] = { tonumber(pid), tonumber(at) }
    end
    local db = assert(zdb.open("sqlite:" .. dbfile))
    -- Lock names are "<job>|<kind>|<spec>" (zever.scheduler).
    local rows = assert(db:query('SELECT slot FROM "scheduler_locks" WHERE name LIKE ? ORDER BY slot',
      "stamp|%"))
    local queued = assert(db:first("SELECT count(*) AS n FROM queue_messages WHERE payload LIKE ?",
      "%stamp%")).n
    db:close()
    -- One row per won slot (the primary key forbids a slot twice) and one job per won slot: a
    -- slot fired by both workers would show as more runs than rows. The last won slots' jobs
    -- may still be queued when the workers drain (more of them on a slow machine): those are in
    -- the queue, so runs + queued = won slots exactly. Slots may be skipped when a tick comes
    -- late on a busy machine, so they need not be consecutive.
    assert.is_true(#runs >= 3, "too few runs: " .. read(out))
    assert.are.equal(#rows, #runs + queued, #runs .. " runs and " .. queued .. " queued for "
      .. #rows .. " won slots")
    for i = 2, #rows do assert.is_true(rows[i].slot > rows[i - 1].slot) end
    os.execute("rm -rf " .. quote(dir))
  end)
end)
