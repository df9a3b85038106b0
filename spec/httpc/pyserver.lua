-- spec.httpc.pyserver: the Python servers of spec/httpc/pyserver.py as background processes.
--
--   local py = require "spec.httpc.pyserver"
--   local srv = assert(py.start("tls", cert, key))   srv.port, srv:log(), srv:stop()
--   local proxy = assert(py.start("proxy"))          proxy:log() lists the request lines seen
--
-- Started by PID and stopped by PID; waiting for "ready" polls the log to a deadline.

local process = require "spec.support.process"
local files = require "spec.support.files"

local quote = process.quote

local M = {}

local HERE = debug.getinfo(1, "S").source:sub(2):match("^(.*)/[^/]*$") or "."

local Server = {}
Server.__index = Server

function Server:log()
  return files.slurp(self.logfile) or ""
end

function Server:stop()
  if self.pid then process.terminate(self.pid, "TERM", 2) end
  self.pid = nil
  if self.logfile then os.remove(self.logfile) end
  self.logfile = nil
end

function M.start(mode, ...)
  local port = process.free_port()
  local logfile = os.tmpname()
  local args = { "/usr/bin/python3", quote(HERE .. "/pyserver.py"), mode, port }
  for i = 1, select("#", ...) do args[#args + 1] = quote((select(i, ...))) end
  local r = process.run(table.concat(args, " ") .. " > " .. quote(logfile) .. " 2>&1 & echo $!")
  local self = setmetatable({ pid = tonumber(r.stdout), port = port, logfile = logfile }, Server)
  if process.wait_for(function() return self:log():find("ready", 1, true) ~= nil end, 15) then
    return self
  end
  local log = self:log()
  self:stop()
  return nil, "pyserver.py " .. mode .. " did not start: " .. log
end

return M
