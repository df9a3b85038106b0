-- spec.support.process: runs a shell command and returns what it printed and its exit code.
-- Specs use it to drive the real zever binary (zever.sys.exe() is the binary running the specs,
-- so `make asan` checks the sanitized binary end to end).

local sys = require "zever.sys"
local ffi = require "ffi"

require "zever.cdef.libc" -- poll

local M = {}

local function read_all(path)
  local f = io.open(path, "rb")
  if not f then return "" end
  local s = f:read("*a")
  f:close()
  os.remove(path)
  return s
end

-- Quotes s for /bin/sh.
function M.quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- Runs cmdline under /bin/sh; returns { stdout =, stderr =, code = }.
function M.run(cmdline)
  local err = os.tmpname()
  local p = assert(io.popen("(" .. cmdline .. ") 2>" .. err .. "; echo \"\n__rc=$?\""))
  local out = p:read("*a")
  p:close()
  local body, code = out:match("^(.*)\n__rc=(%d+)\n?$")
  return { stdout = body, stderr = read_all(err), code = tonumber(code) }
end

-- Runs the zever binary with the given arguments (each quoted).
function M.zever(...)
  local parts = { M.quote(sys.exe()) }
  for i = 1, select("#", ...) do parts[#parts + 1] = M.quote((select(i, ...))) end
  return M.run(table.concat(parts, " "))
end


-- Writes source to DIR/script.lua and runs it with `zever run` in a fresh process; returns its
-- stdout; any other exit than 0 raises with the script's stderr (the spec fails).
function M.run_script(dir, source)
  local path = dir .. "/script.lua"
  require("spec.support.files").write(path, source)
  local r = M.run(M.quote(sys.exe()) .. " run " .. M.quote(path))
  if r.code ~= 0 then error(("zever run exited %s: %s"):format(r.code, r.stderr), 2) end
  return r.stdout
end

-- What cmdline printed (stdout and stderr together), trailing white space removed.
function M.output(cmdline)
  local p = assert(io.popen("(" .. cmdline .. ") 2>&1"))
  local out = p:read("*a")
  p:close()
  return (out:gsub("%s+$", ""))
end

-- Runs n copies of cmdline at once (each its own process) and returns what each printed on
-- stdout, in order, once all exited.
function M.together(cmdline, n)
  local ps, outs = {}, {}
  for i = 1, n do ps[i] = assert(io.popen(cmdline)) end
  for i = 1, n do
    outs[i] = ps[i]:read("*a")
    ps[i]:close()
  end
  return outs
end

-- The fork server (spec/support/pyfork.py) of this process: a pipe to write jobs to, opened on
-- first use. It lives until this process exits. Kept in the Lua registry, not in this module:
-- busted reloads spec.support.* for every spec file (insulate), and one server a process is
-- enough.
local REGISTRY_KEY = "spec.support.process: fork server"
local HERE = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "spec/support"

-- The python3 of the specs: Debian's (/usr/bin/python3, with the python3-* packages of make deps)
-- when there, else PATH's. A PATH python3 outside Debian's may start much slower (here pyenv's:
-- 0.5 s wall at load 10, 0.03 s for Debian's) and may lack those packages.
M.PYTHON = (function()
  local f = io.open("/usr/bin/python3")
  if f then f:close() end
  return f and "/usr/bin/python3" or "python3"
end)()

-- Runs `python3 argv[1] argv[2]...` in the background, forked from one warm interpreter
-- (spec/support/pyfork.py, under M.PYTHON): a python3 start-up costs ~40 ms of CPU and up to a
-- second of wall time on a loaded machine. stdin is /dev/null; stdout and stderr go to the file
-- out (written as out.tmp and renamed when the script ends, so a poller sees all or nothing)
-- or, without out, to /dev/null.
function M.python_bg(argv, out)
  local registry = debug.getregistry()
  local forkserver = registry[REGISTRY_KEY]
  if not forkserver then
    local fifo = os.tmpname()
    os.remove(fifo)
    local made = os.execute("mkfifo -m 600 " .. M.quote(fifo))
    assert(made == 0 or made == true, "process.python_bg: mkfifo failed")
    os.execute(("%s %s %s %d >/dev/null 2>&1 &"):format(M.PYTHON, M.quote(HERE .. "/pyfork.py"),
      M.quote(fifo), sys.getpid()))
    forkserver = assert(io.open(fifo, "w")) -- returns once the server opened its end
    forkserver:setvbuf("no")
    registry[REGISTRY_KEY] = forkserver
  end
  local args = {}
  for i, a in ipairs(argv) do args[i] = tostring(a) end
  assert(forkserver:write(require("zever.json").encode({ argv = args, out = out }), "\n"))
end

-- Stops server pid when this process is gone without having stopped it: a `zever test` killed
-- by SIGTERM or ^C closes no Lua state, so no __gc sentinel stops its servers.
-- spec/support/watchdog.py, forked from the warm interpreter (python_bg) into a session of its
-- own, waits on both processes; when this one ends first it sends the server signal ("INT",
-- "TERM"), SIGKILL after grace seconds, and removes dir (a /tmp/zever-* folder) once the server
-- is gone. Once it watches, it writes dir/watchdog.<pid> (the spec of this very behaviour waits
-- for it). The servers of spec/support call this after each start of a server process.
function M.watchdog(pid, signal, grace, dir)
  M.python_bg({ HERE .. "/watchdog.py", sys.getpid(), pid, signal, grace, dir })
end

-- Sleeps s seconds: one step of a loop that polls a condition to a deadline, never a way to
-- wait for something on its own. In this process (poll(2) with no descriptors): a `sleep`
-- command cost a shell and a process a step, tens of milliseconds on a loaded machine.
function M.sleep(s)
  ffi.C.poll(nil, 0, math.max(0, math.floor(s * 1000 + 0.5)))
end

-- Whether process pid is alive: it exists and is not a zombie. A process that exited stays a
-- zombie until its parent reaps it, and the orphans of `cmd &` are reaped by PID 1, which in a
-- container may do so a second or two later: `kill -0` says such a process is alive.
function M.alive(pid)
  if not pid then return false end
  local f = io.open("/proc/" .. tonumber(pid) .. "/stat", "rb")
  if not f then return false end
  local stat = f:read("*a")
  f:close()
  local state = stat and stat:match(".*%)%s+(%a)") -- the name (in parentheses) may hold ")"
  return state ~= nil and state ~= "Z" and state ~= "X"
end

-- Stops process pid: sends signal ("TERM", "INT", ...), waits up to grace seconds for it to
-- exit, then sends SIGKILL. The servers of spec/support stop what they started this way.
function M.terminate(pid, signal, grace)
  os.execute("kill -" .. signal .. " " .. pid .. " 2>/dev/null")
  local deadline = sys.now() + grace
  while M.alive(pid) and sys.now() < deadline do M.sleep(0.02) end
  if M.alive(pid) then
    -- SIGKILL is not instant either: wait until the process is gone (its sockets closed), so a
    -- caller that goes on to use its port finds nothing listening.
    os.execute("kill -KILL " .. pid .. " 2>/dev/null")
    deadline = sys.now() + 10
    while M.alive(pid) and sys.now() < deadline do M.sleep(0.02) end
  end
end

-- Gives class (a server of spec/support: fields pid and dir, a method launch()) its kill, stop
-- and restart: kill sends signal to pid, then SIGKILL after grace seconds (terminate); stop
-- kills and removes dir; restart kills and launches again, returning what launch returns.
function M.server_lifecycle(class, signal, grace)
  function class:kill()
    local pid = self.pid
    self.pid = nil
    if not pid then return end
    M.terminate(pid, signal, grace)
  end

  function class:stop()
    self:kill()
    if self.dir then
      os.execute("rm -rf " .. M.quote(self.dir))
      self.dir = nil
    end
  end

  function class:restart()
    self:kill()
    return self:launch()
  end
end

-- Polls cond() every 10 ms (a real sleep: another process does the work) until it returns true
-- or secs (default 10) have passed; returns whether it did. Specs wait for what they need (a
-- file a process writes, a row, a port) to a generous deadline, never for a fixed time.
function M.wait_for(cond, secs)
  local deadline = sys.now() + (secs or 10)
  while sys.now() < deadline do
    if cond() then return true end
    M.sleep(0.01)
  end
  return cond() and true or false
end

-- A port the kernel says is free right now on 127.0.0.1 (bind port 0, read it, close).
function M.free_port()
  local srv = assert(require("zever.http").listen({ host = "127.0.0.1", port = 0,
    reuseport = false }, function() end))
  local port = srv:port()
  srv:close()
  return port
end

return M
