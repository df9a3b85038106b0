-- spec.support.redis_server: a real redis-server for the #redis specs, on a free loopback port
-- in a temporary directory, with persistence off (--save '' --appendonly no).
--
--   local redis_server = require "spec.support.redis_server"
--   local srv = assert(redis_server.start({ password = "s3cret" }))  -- options optional
--   srv.port, srv.url ("redis://:s3cret@127.0.0.1:PORT/0"), srv.pid, srv.dir
--   srv:stop()       -- SIGTERM by PID, SIGKILL after 2 s; removes the directory; idempotent
--   srv:restart()    -- stop, then start again on the same port (connection-loss specs)
--   srv:prefix(name) -- "spec:<name>:<n>:", a key prefix no earlier call on this server gave
--   redis_server.commandstats(c) -- { evalsha = 12, ... }: INFO commandstats calls by command,
--                                 -- through client c (round trips counted by the server)
--
--   describe("... #redis", function()
--     local srv = redis_server.fixture()   -- started by a setup, stopped by a teardown
--     it("...", function() local c = assert(redis.connect(srv.url)) ... end)
--   end)
--
-- The server daemonizes with a pidfile so it is stopped by PID, never by name. A server whose
-- spec forgot to stop it is stopped when the Lua state closes (a __gc sentinel), one whose spec
-- process was killed by a signal by a watchdog (process.watchdog), and start()
-- stops what it started when the server does not answer PING within 5 s.

local core = require "zever.redis_core"
local sys = require "zever.sys"

local process = require "spec.support.process"

local quote, free_port = process.quote, process.free_port
local sh, sleep = process.output, process.sleep

local M = {}

local Server = {}
Server.__index = Server

local function read_pid(dir)
  local f = io.open(dir .. "/redis.pid")
  if not f then return nil end
  local pid = tonumber(f:read("*l") or "")
  f:close()
  return pid
end

-- Starts redis-server on self.port; true or nil, message (whatever started is stopped).
function Server:launch()
  local args = {
    "redis-server", "--port", self.port, "--bind", "127.0.0.1", "--save", "''",
    "--appendonly", "no", "--daemonize", "yes", "--dir", quote(self.dir),
    "--pidfile", quote(self.dir .. "/redis.pid"), "--logfile", quote(self.dir .. "/redis.log"),
  }
  if self.password then
    args[#args + 1] = "--requirepass"
    args[#args + 1] = quote(self.password)
  end
  os.remove(self.dir .. "/redis.pid")
  sh(table.concat(args, " "))
  local ping = core.sync("redis://" .. (self.password and (":" .. self.password .. "@") or "") ..
    "127.0.0.1:" .. self.port .. "/0", 0.5, {})
  local deadline = sys.now() + 5
  while sys.now() < deadline do
    self.pid = self.pid or read_pid(self.dir)
    if self.pid and ping:call("PING") == "PONG" then
      ping:close()
      process.watchdog(self.pid, "TERM", 2, self.dir)
      return true
    end
    sleep(0.02)
  end
  ping:close()
  self.pid = self.pid or read_pid(self.dir)
  local log = io.open(self.dir .. "/redis.log")
  local text = log and log:read("*a") or ""
  if log then log:close() end
  self:kill()
  return nil, "redis-server did not start on port " .. self.port .. ": " .. text:sub(-300)
end

-- kill stops the process by PID: SIGTERM, then SIGKILL after 2 s; stop also removes its
-- folder; restart launches it again.
process.server_lifecycle(Server, "TERM", 2)

function Server:prefix(name)
  self.prefixes = self.prefixes + 1
  return ("spec:%s:%d:"):format(name, self.prefixes)
end

-- Starts a server made by new (a stopped one too, on a fresh port and directory): self, or
-- nil, message.
function Server:start()
  self.dir = sh("mktemp -d /tmp/zever-redis-XXXXXX"):gsub("%s+$", "")
  -- Stops a forgotten server when the state closes.
  local sentinel = newproxy(true)
  getmetatable(sentinel).__gc = function() self:stop() end
  self.sentinel = sentinel
  local ok, err
  for _ = 1, 3 do
    self.port = free_port()
    ok, err = self:launch()
    if ok then break end
  end
  if not ok then
    self:stop()
    return nil, err
  end
  local auth = self.password and (":" .. self.password .. "@") or ""
  self.url = "redis://" .. auth .. "127.0.0.1:" .. self.port .. "/0"
  return self
end

-- A server not started yet. opts: password (adds --requirepass).
function M.new(opts)
  opts = opts or {}
  return setmetatable({ password = opts.password, prefixes = 0 }, Server)
end

-- opts as for new. Returns the started server or nil, message.
function M.start(opts)
  return M.new(opts):start()
end

-- Raises when an async client of this state is still open to srv (after its describe): such
-- a client reconnects every few seconds for the rest of the run, to a port that a later spec's
-- server may get (a max_connections spec then sees a stranger's connection). Garbage clients
-- are collected first: their __gc closes them.
function M.assert_no_clients(srv)
  collectgarbage()
  collectgarbage()
  local address = "127.0.0.1:" .. tostring(srv.port)
  for _, c in ipairs(require("zever.redis").open_clients()) do
    if c.address == address then
      error(("a redis client to the describe's server (%s) is still open after it ended" ..
        " (shared: %s): close every store, adapter and client the describe made")
        :format(address, tostring(c.shared)), 0)
    end
  end
end

-- The calls of each command the server has answered (INFO commandstats), through client c, a
-- zever.redis client: { evalsha = 12, get = 3, ... }. Specs count round trips with it.
function M.commandstats(c)
  local t = {}
  for name, calls in c:call("INFO", "commandstats"):gmatch("cmdstat_([%w_|]+):calls=(%d+)") do
    t[name] = tonumber(calls)
  end
  return t
end

-- For the describe block that calls it: registers a setup that starts a server (failing the
-- block when it cannot) and a teardown that stops it and checks that no async client to it is
-- left open (assert_no_clients; busted runs a block's teardowns in the order they were
-- registered, so a teardown that closes clients is registered before the fixture), in the caller's busted environment
-- (a spec file's describe, setup and teardown are not globals of this module). Returns the
-- server, whose url and port are set once the setup ran. opts as for new.
function M.fixture(opts)
  local env = getfenv(2)
  local srv = M.new(opts)
  env.setup(function() assert(srv:start()) end)
  env.teardown(function()
    srv:stop()
    M.assert_no_clients(srv)
  end)
  return srv
end

return M
