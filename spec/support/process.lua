-- spec.support.process: runs a shell command and returns what it printed and its exit code.
-- Specs use it to drive the real zever binary (zever.sys.exe() is the binary running the specs,
-- so `make asan` checks the sanitized binary end to end).

local sys = require "zever.sys"

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

-- Sleeps s seconds: one step of a loop that polls a condition to a deadline, never a way to
-- wait for something on its own.
function M.sleep(s)
  os.execute("sleep " .. s)
end

-- Whether process pid is alive.
function M.alive(pid)
  if not pid then return false end
  local r = os.execute("kill -0 " .. pid .. " 2>/dev/null")
  return r == 0 or r == true
end

-- Stops process pid: sends signal ("TERM", "INT", ...), waits up to grace seconds for it to
-- exit, then sends SIGKILL. The servers of spec/support stop what they started this way.
function M.terminate(pid, signal, grace)
  os.execute("kill -" .. signal .. " " .. pid .. " 2>/dev/null")
  local deadline = sys.now() + grace
  while M.alive(pid) and sys.now() < deadline do M.sleep(0.02) end
  if M.alive(pid) then os.execute("kill -KILL " .. pid .. " 2>/dev/null") end
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
