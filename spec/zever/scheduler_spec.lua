-- zever.scheduler: entries, next times, ticks with a fake clock and a fake jobs battery, the
-- one-fire-per-slot locks (memory shared by threads, db shared by connections), missed slots.

local scheduler = require "zever.scheduler"
local memory = require "adapters.scheduler.memory"
local dblock = require "adapters.scheduler.db"
local zdb = require "zever.db"
local threads = require "zever.threads"

local fs = require "spec.support.files"
local unique, slurp = fs.unique, fs.text

-- A jobs battery that records dispatches.
local function fake_jobs()
  local sent = {}
  return { sent = sent, dispatch = function(_, name, args)
    sent[#sent + 1] = { name = name, args = args }
    return #sent
  end }
end

local function make(lock, clock, logs)
  local jobs = fake_jobs()
  local s = scheduler.new(lock, { jobs = function() return jobs end, clock = clock,
    log = function(level, msg, fields)
      if logs then logs[#logs + 1] = { level, msg, fields } end
    end })
  return s, jobs
end

describe("zever.scheduler", function()
  local T0 = 1709164800   -- 2024-02-29 00:00:00 UTC

  describe("entries", function()
    it("lists cron and every entries with their next run times", function()
      local s = make(memory.new{ name = unique("list") })
      s:cron("*/15  * * * *", "report", { a = 1 })
      s:every("90s", "ping")
      s:cron("@daily", "cleanup")
      local rows = s:list(T0 + 61)
      assert.are.same({ kind = "cron", spec = "*/15 * * * *", job = "report", args = { a = 1 },
        next = T0 + 900 }, rows[1])
      assert.are.same({ kind = "every", spec = "90s", job = "ping", next = T0 + 90 }, rows[2])
      assert.are.equal(T0 + 86400, rows[3].next)
      s:close()
    end)

    it("raises with the field and the reason for an invalid cron spec", function()
      local s = make(memory.new{ name = unique("bad") })
      assert.has_error(function() s:cron("61 * * * *", "x") end,
        'scheduler:cron: "61 * * * *": minute: 61 is out of range 0-59')
      assert.has_error(function() s:every("500ms", "x") end,
        "scheduler:every: the interval must be a whole number of seconds >= 1")
      assert.has_error(function() s:every("1s", "") end)
      assert.has_error(function() s:every("1s", "x", function() end) end)
      s:every("1s", "x")
      assert.has_error(function() s:every("1s", "x") end)
      s:close()
    end)
  end)

  describe("tick", function()
    it("fires nothing for slots before its first tick, then each slot once", function()
      local now = T0 + 0.5
      local s, jobs = make(memory.new{ name = unique("tick") }, function() return now end)
      s:every("1s", "ping", { n = 1 })
      assert.are.equal(0, s:tick())            -- the first tick only sets the next slot
      now = T0 + 0.9
      assert.are.equal(0, s:tick())
      now = T0 + 1.0
      assert.are.equal(1, s:tick())
      assert.are.equal(0, s:tick())            -- same slot again: nothing
      now = T0 + 2.05
      assert.are.equal(1, s:tick())
      assert.are.same({ { name = "ping", args = { n = 1 } }, { name = "ping", args = { n = 1 } } },
        jobs.sent)
      s:close()
    end)

    it("skips missed slots and logs how many, firing only the latest", function()
      local now, logs = T0 + 0.5, {}
      local s, jobs = make(memory.new{ name = unique("missed") }, function() return now end, logs)
      s:every("1s", "ping")
      s:cron("* * * * *", "minutely")
      s:tick()
      now = T0 + 185.5                       -- 185 one-second slots and 3 minutes passed
      assert.are.equal(2, s:tick())
      assert.are.equal(2, #jobs.sent)
      assert.are.equal(2, #logs)
      assert.are.same({ "warn", "scheduler: skipped missed slots",
        { job = "ping", spec = "1s", skipped = 184 } }, logs[1])
      assert.are.equal(2, logs[2][3].skipped)
      assert.are.equal(T0 + 186, s:list()[1].next)
      s:close()
    end)

    it("fires a slot once when two schedulers share one memory lock", function()
      local now = T0 + 0.5
      local clock = function() return now end
      local name = unique("shared")
      local a, ja = make(memory.new{ name = name }, clock)
      local b, jb = make(memory.new{ name = name }, clock)
      a:every("1s", "ping")
      b:every("1s", "ping")
      a:tick()
      b:tick()
      for i = 1, 5 do
        now = T0 + i
        b:tick()
        a:tick()
      end
      assert.are.equal(5, #ja.sent + #jb.sent)
      assert.are.equal(5, #jb.sent)             -- b ticked first each time and won
      a:close()
      b:close()
    end)

    it("logs a dispatch failure and carries on", function()
      local now, logs = T0 + 0.5, {}
      local s = scheduler.new(memory.new{ name = unique("fail") }, {
        clock = function() return now end,
        jobs = function() return { dispatch = function() return nil, "queue down" end } end,
        log = function(level, msg, fields) logs[#logs + 1] = { level, msg, fields } end })
      s:every("1s", "ping")
      s:tick()
      now = T0 + 1
      assert.are.equal(0, s:tick())
      assert.are.equal("scheduler: dispatch failed", logs[1][2])
      assert.are.equal("queue down", logs[1][3].error)
      s:close()
    end)
  end)

  describe("memory lock", function()
    it("lets exactly one of two threads win each slot", function()
      local name, file = unique("threads"), os.tmpname()
      local keep = memory.new{ name = name }
      local mod = "spec.fixtures.scheduler_app.lock_worker"
      local p1 = threads.start(1, mod, name .. "|2000|" .. file .. ".1")
      local p2 = threads.start(1, mod, name .. "|2000|" .. file .. ".2")
      p1:join()
      p2:join()
      local seen, total = {}, 0
      for _, f in ipairs({ file .. ".1", file .. ".2" }) do
        for line in slurp(f):gmatch("%d+") do
          assert.is_nil(seen[line])
          seen[line] = true
          total = total + 1
        end
        os.remove(f)
      end
      os.remove(file)
      assert.are.equal(2000, total)
      assert.is_false(keep:acquire("job@1", 1, 60))
      keep:close()
    end)
  end)

  describe("db lock", function()
    it("lets one of two connections win each slot and cleans up old rows", function()
      local path = os.tmpname()
      local db1, db2 = assert(zdb.open("sqlite:" .. path)), assert(zdb.open("sqlite:" .. path))
      local t = T0
      local l1 = dblock.new{ db = db1, clock = function() return t end }
      local l2 = dblock.new{ db = function() return db2 end, clock = function() return t end }
      assert.is_true(l1:acquire("ping@1", T0, 3600))
      assert.is_false(l2:acquire("ping@1", T0, 3600))
      assert.is_true(l2:acquire("ping@2", T0 + 1, 3600))
      assert.is_false(l1:acquire("ping@2", T0 + 1, 3600))
      t = T0 + 7200
      assert.is_true(l1:acquire("ping@3", T0 + 7200, 3600))   -- sweeps rows before T0 + 3600
      assert.are.equal(1, db2:first('SELECT count(*) AS n FROM "scheduler_locks"').n)
      db1:close()
      db2:close()
      os.remove(path)
    end)
  end)

  describe("container", function()
    it("refuses timezone local", function()
      local s, err = scheduler.open({ timezone = "local" }, {}, memory.new{ name = unique("tz") })
      assert.is_nil(s)
      assert.are.equal("invalid", err.code)
    end)
  end)
end)
