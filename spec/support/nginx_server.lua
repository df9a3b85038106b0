-- spec.support.nginx_server: Debian's nginx on a free loopback port, in a temporary prefix,
-- run by the current user, for specs that compare zever with it (spec/host/http_strict_spec.lua).
--
--   local nginx_server = require "spec.support.nginx_server"
--   if nginx_server.available() then
--     local srv = assert(nginx_server.start({ max_body_bytes = 1024 }))
--     srv.port, srv.pid, srv.dir
--     srv:paths()   -- the request targets nginx logged, in order (its access log)
--     srv:stop()    -- SIGTERM by PID, SIGKILL after 2 s; removes the prefix; idempotent
--   end
--
-- Every location answers 200 "ok" (`return 200`), which reads and discards a request body. nginx
-- daemonizes with a pid file, so it is stopped by PID, never by name; a server a spec forgot is
-- stopped when the Lua state closes.

local sys = require "zever.sys"
local process = require "spec.support.process"
local files = require "spec.support.files"

local M = {}

local NGINX = "/usr/sbin/nginx"

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("*a")
  p:close()
  return out
end

local quote, free_port, alive = process.quote, process.free_port, process.alive
local read_file = files.slurp

function M.available()
  local f = io.open(NGINX)
  if f then f:close() end
  return f ~= nil
end

local Server = {}
Server.__index = Server

function Server:stop()
  local pid = self.pid
  self.pid = nil
  if pid then
    process.terminate(pid, "TERM", 2)
  end
  if self.dir then
    os.execute("rm -rf " .. quote(self.dir))
    self.dir = nil
  end
end

function Server:paths()
  local out = {}
  for line in (read_file(self.dir .. "/access.log") or ""):gmatch("[^\n]+") do
    out[#out + 1] = line
  end
  return out
end

-- Starts nginx; the server, or nil and a message (whatever started is stopped).
function M.start(opts)
  opts = opts or {}
  local self = setmetatable({}, Server)
  self.dir = sh("mktemp -d /tmp/zever-nginx-XXXXXX"):gsub("%s+$", "")
  local sentinel = newproxy(true)
  getmetatable(sentinel).__gc = function() self:stop() end
  self.sentinel = sentinel
  self.port = free_port()
  local d = self.dir
  local conf = table.concat({
    "daemon on;",
    "master_process off;",
    "pid " .. d .. "/nginx.pid;",
    "error_log " .. d .. "/error.log info;",
    "events { worker_connections 512; }",
    "http {",
    "  log_format paths '$request_uri';",
    "  access_log " .. d .. "/access.log paths;",
    "  client_body_temp_path " .. d .. "/body;",
    "  proxy_temp_path " .. d .. "/proxy;",
    "  fastcgi_temp_path " .. d .. "/fastcgi;",
    "  uwsgi_temp_path " .. d .. "/uwsgi;",
    "  scgi_temp_path " .. d .. "/scgi;",
    "  client_max_body_size " .. (opts.max_body_bytes or 1048576) .. ";",
    "  server {",
    "    listen 127.0.0.1:" .. self.port .. ";",
    "    location / { return 200 \"ok\"; }",
    "  }",
    "}",
  }, "\n")
  local f = assert(io.open(d .. "/nginx.conf", "w"))
  f:write(conf)
  f:close()
  local out = sh(NGINX .. " -p " .. quote(d) .. " -c " .. quote(d .. "/nginx.conf"))
  local deadline = sys.now() + 5
  while sys.now() < deadline do
    local pid = tonumber(read_file(d .. "/nginx.pid") or "")
    if pid and alive(pid) then
      self.pid = pid
      return self
    end
    process.sleep(0.02)
  end
  local log = read_file(d .. "/error.log") or ""
  self:stop()
  return nil, "nginx did not start: " .. out .. log:sub(-300)
end

return M
