-- spec.support.serve: `zever serve` as a background process for specs: start it (with
-- arguments and environment), wait for a condition on its log, send it signals, stop it.
--
--   local serve = require "spec.support.serve"
--   local srv = serve.start(dir, { "--workers", "1" }, { HTTP_WRITE_TIMEOUT = "1s" })
--   srv.port, srv:log(), srv:alive(), srv:signal("HUP"), srv:wait_exit(5), srv:kill()
--   serve.free_port()     a port nothing listens on now
--   serve.temp_app(src)   a fresh temporary folder with app.lua = src; serve.remove(dir)
--
-- Waiting is polling a condition with a generous bound, never a fixed sleep.

local process = require "spec.support.process"
local sys = require "zever.sys"

local quote = process.quote

local M = {}

local function slurp(path)
  local f = io.open(path, "rb")
  if not f then return "" end
  local s = f:read("*a")
  f:close()
  return s
end
M.slurp = slurp

-- Polls fn every 10 ms for up to secs; returns its first truthy result, or nil.
function M.wait_for(fn, secs)
  local deadline = sys.now() + (secs or 10)
  repeat
    local v = fn()
    if v then return v end
    process.sleep(0.01)
  until sys.now() >= deadline
  return fn() or nil
end

-- A free loopback port (bound and released by the kernel's choice).
function M.free_port()
  local http = require "zever.http"
  local srv = assert(http.listen({ host = "127.0.0.1", port = 0, reuseport = false },
    function() end))
  local port = srv:port()
  srv:close()
  require("zever.loop").run("nowait")
  return port
end

-- A fresh temporary folder holding app.lua with the given source (remove it with M.remove).
function M.temp_app(source)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. quote(dir)))
  local f = assert(io.open(dir .. "/app.lua", "w"))
  f:write(source)
  f:close()
  return dir
end

function M.remove(dir)
  if dir then os.execute("rm -rf " .. quote(dir)) end
end

local Server = {}
Server.__index = Server

function Server:log() return slurp(self.logfile) end

function Server:alive()
  return process.alive(self.pid)
end

function Server:signal(name)
  os.execute("kill -" .. name .. " " .. self.pid)
end

-- Waits up to secs for the process to exit; returns true when it did.
function Server:wait_exit(secs)
  return M.wait_for(function() return not self:alive() end, secs) or false
end

function Server:kill()
  if self:alive() then
    self:signal("KILL")
    self:wait_exit(5)
  end
  os.remove(self.logfile)
end

-- Runs curl against the server; returns process.run's result.
function Server:curl(path, extra)
  return process.run("curl -s -S --max-time 10 " .. (extra or "") .. " " ..
    quote("http://127.0.0.1:" .. self.port .. path))
end

-- Starts `zever serve app args...` with env (a table of variables; a false value unsets the
-- variable) in the background and waits
-- for its "serving ... on http://host:port" line. Returns the server, or nil and the log when
-- it did not start (it exited, say, with a message). command: "serve" unless given ("dev");
-- exe: the binary to run (a bundle), zever.sys.exe() unless given.
function M.start(app, args, env, command, exe)
  local logfile = os.tmpname()
  local parts = {}
  for k, v in pairs(env or {}) do
    if v == false then table.insert(parts, 1, "-u " .. quote(k)) end -- false: unset it
  end
  for k, v in pairs(env or {}) do
    if v ~= false then parts[#parts + 1] = k .. "=" .. quote(v) end
  end
  parts[#parts + 1] = quote(exe or sys.exe())
  parts[#parts + 1] = command or "serve"
  parts[#parts + 1] = quote(app)
  for _, a in ipairs(args or {}) do parts[#parts + 1] = quote(a) end
  local p = io.popen("env " .. table.concat(parts, " ") .. " >" .. logfile .. " 2>&1 & echo $!")
  local pid = tonumber(p:read("*l"))
  p:close()
  local self = setmetatable({ pid = pid, logfile = logfile }, Server)
  local port = M.wait_for(function()
    local got = self:log():match("on https?://[%d%.]+:(%d+)")
    if got then return got end
    if not self:alive() then return "exited" end
  end, 20)
  if not port or port == "exited" then
    local log = self:log()
    self:kill()
    return nil, log
  end
  self.port = tonumber(port)
  return self
end

return M
