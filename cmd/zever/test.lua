-- zever test [paths...]: runs busted specs inside the host, so specs require zever's C modules
-- exactly as applications do. Prints the shuffle seed first, failures as they happen and ends
-- with one summary line, "N passed, M failed" (", K skipped" when any are); exits 1 when
-- anything failed.
--
-- Specs run in the test environment: ZEVER_ENV=test (so zever.test.yaml applies, here and in
-- every process a spec starts) and zever.app's testing mode (an app's database is a fresh
-- :memory: one unless the test configuration names one). Files and the specs inside them run
-- in a random order by default, so a spec that depends on another's leftovers fails early; the
-- seed is printed so that a failing order can be replayed with --seed N.
--
-- --seeds N (CI) runs the whole selection N times, each under a random seed of its own and in a
-- process of its own (a crash or a leak in one run cannot hide in another): each run's output
-- goes through as it comes, its summary line said as "seed S: N passed, M failed", and the
-- last line is the one summary of all runs, summed. A run that ends without a summary (a
-- crash) counts as one failure. SIGTERM or SIGINT to this process is forwarded to the run in
-- progress (which stops its servers as any killed run does); no further run starts, and the
-- exit status is 143 or 130.

local reporter = require "zever.testing.reporter"
local ffi = require "ffi"
local bit = require "bit"
local loop = require "zever.loop"

require "zever.cdef.libc" -- setenv; popen, poll, read, pclose for --seeds

local function add(argv, ...)
  for i = 1, select("#", ...) do argv[#argv + 1] = select(i, ...) end
end

local M = {}

local SUMMARY = "^(%d+) passed, (%d+) failed(.*)$"

-- The exit status after a signal stopped the runs: 128 + the signal's number, as a shell says.
local SIGNAL_STATUS = { SIGINT = 130, SIGTERM = 143 }

local WNOHANG = 1 -- waitpid(2)'s option on Linux

-- Runs the shell command cmd, which execs one child `zever test`, and hands each line of its
-- stdout to on_line until the child exits. It waits in poll(2), a quarter second at most at a
-- time, so that a SIGTERM or SIGINT that reaches this process (stop.signal, set by the
-- caller's watchers) is forwarded to the child while it runs; the child ends its run as a
-- killed `zever test` does (each server's watchdog stops it). The end is the child's exit, not
-- the pipe's: a process the child left behind may hold the pipe open. Returns the child's exit
-- status, 128 + the signal's number when a signal ended it, or nil when it could not be run.
local function run_child(cmd, stop, on_line)
  local C = ffi.C
  local fp = C.popen("echo __pid=$$; exec " .. cmd, "r")
  if fp == nil then return nil end
  local pfd = ffi.new("struct pollfd[1]")
  pfd[0].fd = C.fileno(fp)
  pfd[0].events = 1 -- POLLIN
  local buf, wstatus = ffi.new("char[?]", 65536), ffi.new("int[1]")
  local rest, pid, sent, eof, status = "", nil, nil, false, nil
  -- Reads what the pipe holds now; false at its end.
  local function take()
    local n = tonumber(C.read(pfd[0].fd, buf, 65536))
    if n == 0 then return false end
    if n > 0 then
      rest = rest .. ffi.string(buf, n)
      for line in rest:gmatch("([^\n]*)\n") do
        local p = not pid and line:match("^__pid=(%d+)$")
        if p then pid = tonumber(p) else on_line(line) end
      end
      rest = rest:match("[^\n]*$")
    end
    return true
  end
  while true do
    loop.run("nowait") -- runs the signal watchers' callbacks
    if stop.signal and pid and sent ~= stop.signal then
      sent = stop.signal
      os.execute(("kill -%s %d 2>/dev/null"):format(stop.signal:sub(4), pid))
    end
    if eof then
      if not pid then break end -- the shell wrote nothing: pclose has its status
      C.poll(nil, 0, 250)
    elseif C.poll(pfd, 1, 250) > 0 then
      eof = not take()
    end
    if pid and C.waitpid(pid, wstatus, WNOHANG) == pid then
      status = wstatus[0]
      while not eof and C.poll(pfd, 1, 0) > 0 do eof = not take() end
      break
    end
  end
  if rest ~= "" then on_line(rest) end
  local closed = C.pclose(fp) -- -1 when the child was reaped above
  status = status or closed
  if status < 0 then return nil end
  local sig = bit.band(status, 0x7f)
  return sig == 0 and bit.band(bit.rshift(status, 8), 0xff) or 128 + sig
end

-- Runs `zever test` once per seed in child processes and sums their summaries. SIGTERM or
-- SIGINT stops the run in progress (forwarded to it), starts no other, and exits 143 or 130.
local function run_seeds(args, flags)
  local sys = require "zever.sys"
  local n = math.floor(flags.seeds)
  if n < 1 then return 2, "zever test: --seeds wants a count of 1 or more" end
  if flags.seed or flags["no-shuffle"] then
    return 2, "zever test: --seeds picks its own seeds; it takes no --seed or --no-shuffle"
  end
  local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
  local base = { q(sys.exe()), "test" }
  for _, name in ipairs { "tags", "exclude-tags", "filter", "pattern" } do
    if flags[name] then base[#base + 1] = q("--" .. name .. "=" .. flags[name]) end
  end
  if flags.verbose then base[#base + 1] = "--verbose" end
  if flags.profile then base[#base + 1] = "--profile=" .. math.floor(flags.profile) end
  for _, a in ipairs(args) do base[#base + 1] = q(a) end
  local seeds, first = {}, M.random_seed()
  for i = 1, n do seeds[i] = (first + (i - 1) * 104729) % 2147483647 end
  io.write("seeds ", table.concat(seeds, " "), "\n")
  io.flush()
  local stop = {}
  local function on_signal(name) stop.signal = stop.signal or name end
  local watchers = { loop.signal("SIGTERM", on_signal), loop.signal("SIGINT", on_signal) }
  -- Signal watchers keep no loop going, and a loop with nothing going does not look at them:
  -- an armed timer (never due) makes run_child's loop.run("nowait") take their deliveries.
  local keep = loop.timer(function() end)
  keep:start(1e6)
  local total = { passed = 0, failed = 0, skipped = 0 }
  local ran = 0
  for _, seed in ipairs(seeds) do
    if stop.signal then break end
    local summary
    local rc = run_child(table.concat(base, " ") .. " --seed=" .. seed, stop, function(line)
      local passed, failed, rest = line:match(SUMMARY)
      if passed then
        summary = { tonumber(passed), tonumber(failed), tonumber(rest:match("(%d+) skipped") or 0) }
        io.write("seed ", seed, ": ", line, "\n")
      else
        io.write(line, "\n")
      end
      io.flush()
    end)
    ran = ran + 1
    if summary then
      total.passed = total.passed + summary[1]
      total.failed = total.failed + summary[2]
      total.skipped = total.skipped + summary[3]
      if rc ~= 0 and summary[2] == 0 then total.failed = total.failed + 1 end
    else
      io.write("seed ", seed, ": the run ended without a summary (exit status ", tostring(rc),
        "): counted as 1 failure\n")
      total.failed = total.failed + 1
    end
  end
  for _, w in ipairs(watchers) do w:stop() end
  keep:close()
  local line = ("%d passed, %d failed"):format(total.passed, total.failed)
  if total.skipped > 0 then line = line .. (", %d skipped"):format(total.skipped) end
  io.write(line, "\n")
  io.flush()
  if stop.signal then
    return SIGNAL_STATUS[stop.signal], ("%s: stopped after %d of %d runs")
      :format(stop.signal, ran, n)
  end
  return total.failed > 0 and 1 or 0
end

-- A seed from the clock and the process id: two runs started in the same second differ.
function M.random_seed()
  local sys = require "zever.sys"
  return (os.time() * 1000 + math.floor(sys.now() * 1000) % 1000 + sys.getpid() * 7919) % 2147483647
end

M.command = {
  name = "test",
  json = false,
  dry_run = false,
  why = "runs specs; its report is for people (exit code for machines)",
  summary = "Run busted specs inside the host (default: the spec folder)",
  usage = "zever test [paths...] [--tags a,b] [--exclude-tags a,b] [--filter PATTERN] [--seeds N]"
    .. " [--profile N]",
  flags = {
    { name = "tags", arg = "LIST", summary = "run only specs tagged with one of these (#redis)" },
    { name = "exclude-tags", arg = "LIST", summary = "skip specs tagged with one of these" },
    { name = "filter", arg = "PATTERN", summary = "run only specs whose full name matches" },
    { name = "pattern", arg = "PATTERN", summary = "file name pattern (default _spec)" },
    { name = "seed", arg = "N", type = "number",
      summary = "shuffle files and tests with this seed (default: a random one, printed)" },
    { name = "no-shuffle", summary = "run files and tests in file order" },
    { name = "seeds", arg = "N", type = "number",
      summary = "run everything N times, each under a random seed in its own process; one summed summary" },
    { name = "verbose", summary = "print every spec's name and tracebacks of failures" },
    { name = "profile", arg = "N", type = "number",
      summary = "after the summary, list the N slowest spec files with their time (stderr)" },
  },
  run = function(args, flags)
    if flags.seeds then return run_seeds(args, flags) end
    local argv = { "--output=zever.testing.reporter" }
    if flags.tags then add(argv, "--tags=" .. flags.tags) end
    if flags["exclude-tags"] then add(argv, "--exclude-tags=" .. flags["exclude-tags"]) end
    if flags.filter then add(argv, "--filter=" .. flags.filter) end
    if flags.pattern then add(argv, "--pattern=" .. flags.pattern) end
    local seed
    if not flags["no-shuffle"] then
      seed = flags.seed and math.floor(flags.seed) or M.random_seed()
      add(argv, "--shuffle", "--seed=" .. seed)
      io.write(("seed %d (replay this order with --seed %d)\n"):format(seed, seed))
      io.flush()
    end
    if flags.verbose then add(argv, "--verbose") end
    if #args == 0 then args = { "spec" } end
    add(argv, unpack(args))
    rawset(_G, "arg", argv)
    reporter.reset()
    reporter.seed = seed
    reporter.profile = flags.profile and math.max(1, math.floor(flags.profile)) or nil
    ffi.C.setenv("ZEVER_ENV", "test", 1)
    require("zever.app").testing = true
    -- busted's runner raises an empty error instead of exiting when something failed (it
    -- believes it was not run from its own script); the reporter has the counts either way.
    local ok, err = pcall(require("busted.runner"), { standalone = false, output = "zever.testing.reporter" })
    local counts = reporter.counts()
    if not ok and err ~= nil then return 1, tostring(err) end
    return (counts.failed > 0 or counts.ran == 0) and 1 or 0
  end,
}

return M.command
