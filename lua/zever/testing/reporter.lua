-- zever.testing.reporter: the busted output handler of `zever test`.
--
-- It prints one character per spec on a terminal (nothing per spec when piped, a line per spec
-- with --verbose), the details of every failure and error, and ends with the summary line alone:
--
--   12 passed, 1 failed, 2 skipped
--
-- Errors outside an `it` (a file that does not load, a failing before_each) count as failures.
-- Pending specs count as skipped. counts() lets the `test` command choose its exit code. The
-- bookkeeping is busted's own base handler; this file only decides what is printed. When the
-- run failed and M.seed is set (zever test shuffled), a last stderr line says how to replay it.
-- When M.profile is a count N (zever test --profile N), the N slowest spec files follow on
-- stderr with their wall time and their CPU time (this process and the children it reaped while
-- the file ran), to show where a long suite spends it: a file whose wall time is far above its
-- CPU time is waiting (sleeps, poll intervals, timeouts, processes starting). The N slowest
-- specs (its) follow, wall time only, to show which spec of a slow file to look at.

local sys = require "zever.sys"

local io_write, format = io.write, string.format

local state = { passed = 0, failed = 0, skipped = 0, ran = 0 }

local function message_text(message)
  if type(message) == "string" then return message end
  if message == nil then return "nil error" end
  local ok, pretty = pcall(require, "pl.pretty")
  return ok and pretty.write(message) or tostring(message)
end

local function describe_failure(kind, f, verbose)
  local where = ""
  local t = f.element and f.element.trace or f.trace
  if t and t.short_src then where = format("%s:%s: ", t.short_src, tostring(t.currentline)) end
  local text = format("%s %s%s\n  %s", kind, where, f.name or "?",
    (message_text(f.message):gsub("\n", "\n  ")))
  if verbose and f.trace and f.trace.traceback then text = text .. "\n" .. f.trace.traceback end
  return text
end

-- CPU seconds of this process and of the children it has waited for: utime, stime, cutime and
-- cstime of /proc/self/stat, in USER_HZ ticks (100 a second in Linux's ABI). nil elsewhere.
local function cpu_seconds()
  local f = io.open("/proc/self/stat", "r")
  if not f then return nil end
  local stat = f:read("*a")
  f:close()
  local fields, i = {}, 0
  -- The command name (field 2) may hold spaces; the fields that follow its ')' are plain.
  for word in stat:match(".*%)%s*(.*)$"):gmatch("%S+") do
    i = i + 1
    fields[i] = word
  end
  -- After ')': field 3 (state) is fields[1], so utime (14) .. cstime (17) are fields[12..15].
  local ticks = 0
  for k = 12, 15 do ticks = ticks + (tonumber(fields[k]) or 0) end
  return ticks / 100
end

local M

local function handler(options)
  local busted = require "busted"
  local base = require "busted.outputHandlers.base"()
  local tty = io.type(io.stdout) == "file" and sys.isatty(1)
  local verbose = options.verbose
  local started
  local file_started, file_cpu, file_times = {}, {}, {}
  local test_started, test_times = nil, {}

  local function file_start(element)
    file_started[element.name] = sys.now()
    file_cpu[element.name] = cpu_seconds()
    return nil, true
  end

  local function file_end(element)
    local t0, c0 = file_started[element.name], file_cpu[element.name]
    local c1 = cpu_seconds()
    if t0 then
      file_times[#file_times + 1] = { name = element.name, seconds = sys.now() - t0,
        cpu = c0 and c1 and c1 - c0 or nil }
    end
    return nil, true
  end

  local function print_profile(n)
    table.sort(file_times, function(a, b) return a.seconds > b.seconds end)
    local total, cpu = 0, 0
    for _, f in ipairs(file_times) do total, cpu = total + f.seconds, cpu + (f.cpu or 0) end
    io.stderr:write(format("the %d slowest of %d spec files (%.1f s in all, %.1f s CPU):\n",
      math.min(n, #file_times), #file_times, total, cpu))
    for i = 1, math.min(n, #file_times) do
      local f = file_times[i]
      io.stderr:write(format("%8.2f s  %8s  %s\n", f.seconds,
        f.cpu and format("%.2f cpu", f.cpu) or "- cpu", f.name))
    end
    table.sort(test_times, function(a, b) return a.seconds > b.seconds end)
    io.stderr:write(format("the %d slowest of %d specs:\n", math.min(n, #test_times), #test_times))
    for i = 1, math.min(n, #test_times) do
      io.stderr:write(format("%8.2f s  %s\n", test_times[i].seconds, test_times[i].name))
    end
  end

  local function test_start()
    test_started = sys.now()
    return nil, true
  end

  local function suite_start()
    started = sys.now()
    return nil, true
  end

  local function test_end(element, _, status)
    if test_started then
      test_times[#test_times + 1] = { name = base.getFullName(element), seconds = sys.now() - test_started }
      test_started = nil
    end
    local mark = status == "success" and "." or status == "pending" and "s" or "F"
    if verbose then
      io_write(format("%s %s\n", mark, base.getFullName(element)))
    elseif tty then
      io_write(mark)
      io.flush()
    end
    return nil, true
  end

  local function suite_end()
    if tty and not verbose then io_write("\n") end
    for _, f in ipairs(base.failures) do io_write("\n", describe_failure("FAIL", f, verbose), "\n") end
    for _, f in ipairs(base.errors) do io_write("\n", describe_failure("ERROR", f, verbose), "\n") end
    state.passed = base.successesCount
    state.failed = base.failuresCount + base.errorsCount
    state.skipped = base.pendingsCount
    state.ran = state.passed + state.failed + state.skipped
    io_write(format("\n%d specs in %.2f s\n", state.ran, started and sys.now() - started or 0))
    local line = format("%d passed, %d failed", state.passed, state.failed)
    if state.skipped > 0 then line = line .. format(", %d skipped", state.skipped) end
    io_write(line, "\n")
    io.flush()
    if M.profile then print_profile(M.profile) end
    if state.failed > 0 and M.seed then
      -- The summary stays the last line of stdout; the seed is repeated where a CI log ends.
      io.stderr:write(format("zever test: replay this order with --seed %d\n", M.seed))
    end
    return nil, true
  end

  busted.subscribe({ "suite", "start" }, suite_start)
  busted.subscribe({ "suite", "end" }, suite_end)
  busted.subscribe({ "test", "end" }, test_end, { predicate = base.cancelOnPending })
  if M.profile then
    busted.subscribe({ "file", "start" }, file_start)
    busted.subscribe({ "file", "end" }, file_end)
    busted.subscribe({ "test", "start" }, test_start)
  end
  return base
end

M = setmetatable({}, {
  __call = function(_, options) return handler(options) end,
})

function M.reset()
  state = { passed = 0, failed = 0, skipped = 0, ran = 0 }
end

-- The counts of the last run: passed, failed (failures and errors), skipped, ran.
function M.counts()
  return { passed = state.passed, failed = state.failed, skipped = state.skipped, ran = state.ran }
end

return M
