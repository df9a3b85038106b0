-- zever.systemd: what a service under systemd does, without libsystemd (docs/deploy.md):
-- socket activation, readiness and reload notices, the watchdog, and journal-style logs.
--
--   systemd.listen_fds([env])   -> { 3, 4, ... } | nil   the sockets systemd passed to this
--                                  process (LISTEN_FDS, when LISTEN_PID is ours)
--   systemd.notify(msg[, env])  -> true | false (no NOTIFY_SOCKET) | nil, message
--   systemd.ready(status), systemd.reloading(), systemd.stopping()   the usual notices
--   systemd.arrived(generation, n)  a worker listens; the n-th of a generation sends READY=1
--   systemd.watchdog_interval([env]) -> seconds between WATCHDOG=1 pings (half of
--                                  WATCHDOG_USEC, when WATCHDOG_PID is unset or ours) | nil
--   systemd.journal([env])      -> true when stderr is the journal (JOURNAL_STREAM matches it)
--   systemd.priority(level)     -> "<N>" for a log level (syslog: 3 error ... 7 debug)
--   systemd.init(loop)          -> handle | nil   as PID 1 (a container's first process):
--                                  reaps every child that ends (orphans included) on SIGCHLD;
--                                  handle:stop() ends that. systemd.forward(signum) passes a
--                                  signal on to every other process, as an init does.
--
-- env: a getenv-like function (os.getenv by default), so specs can pass their own.
-- It must not block: a notice is one non-blocking datagram, lost if nobody reads it.

local core = require "zever.systemd_core"

local tonumber, format = tonumber, string.format

local M = {}

local function ours(env, var)
  local pid = tonumber(env(var) or "")
  return pid == nil or pid == core.getpid(), pid ~= nil
end

function M.listen_fds(env)
  env = env or os.getenv
  local n = tonumber(env("LISTEN_FDS") or "")
  local mine, named = ours(env, "LISTEN_PID")
  if not n or n < 1 or not named or not mine then return nil end
  local fds = {}
  for i = 1, n do fds[i] = 2 + i end -- SD_LISTEN_FDS_START = 3
  return fds
end

function M.notify(msg, env)
  if type(msg) ~= "string" then error("systemd.notify: want a message", 2) end
  local path = (env or os.getenv)("NOTIFY_SOCKET")
  if not path or path == "" then return false end
  return core.notify(path, msg)
end

function M.ready(status)
  return M.notify(format("READY=1\nSTATUS=%s\nMAINPID=%d", status or "serving", core.getpid()))
end

function M.reloading()
  return M.notify(format("RELOADING=1\nMONOTONIC_USEC=%d", core.monotonic_usec()))
end

function M.stopping()
  return M.notify("STOPPING=1")
end

function M.arrived(generation, n, status)
  if core.arrive(generation or 0, n or 1) then return M.ready(status) end
  return false
end

function M.watchdog_interval(env)
  env = env or os.getenv
  local usec = tonumber(env("WATCHDOG_USEC") or "")
  if not usec or usec <= 0 or not ours(env, "WATCHDOG_PID") then return nil end
  return usec / 2e6
end

function M.journal(env)
  local value = (env or os.getenv)("JOURNAL_STREAM")
  return value ~= nil and value ~= "" and core.is_stream(2, value)
end

local PRIORITY = { error = "<3>", warn = "<4>", info = "<6>", debug = "<7>" }
function M.priority(level)
  return PRIORITY[level] or "<6>"
end

function M.init(loop)
  if core.getpid() ~= 1 then return nil end
  core.reap()
  return loop.signal("SIGCHLD", function() core.reap() end)
end

function M.forward(signum)
  if core.getpid() ~= 1 then return false end
  return core.forward(signum)
end

return M
