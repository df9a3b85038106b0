-- spec.support.pg_server: a real PostgreSQL 15 for the #pg specs, in a temporary data directory
-- on a free loopback port, run as an unprivileged user (initdb and postgres refuse root: as
-- root the server runs as the "postgres" system user the Debian package creates).
--
--   local pg_server = require "spec.support.pg_server"
--   local srv = pg_server.shared()      -- one server per spec run, started on first use
--   local dsn = srv:database("queue")   -- a new empty database: "postgres://zever:PW@127.0.0.1:P/zs_queue_3"
--   srv:drop(dsn)                       -- drops it (a teardown does this)
--   srv:psql(dsn, "select 1")           -- runs SQL with psql: { stdout, stderr, code }
--   srv.port, srv.password, srv.user, srv.dir, srv.pid
--   srv:restart()                       -- stop (fast) and start again on the same port
--   srv:stop()                          -- stops by PID (the postmaster's), removes the directory
--
--   describe("... #pg", function()
--     local db = pg_server.fixture("cache")   -- setup creates a database, teardown drops it
--     it("...", function() local d = assert(zever.db.open(db.dsn)) ... end)
--   end)
--
-- Each describe owns its database, so specs run in any order against the one shared server. A
-- spec that stops or restarts a server starts its own (pg_server.start()), never the shared one.
-- The password is random per server and is what the redaction specs look for in outputs.
-- fsync is off: the data is thrown away after the run.
--
-- A run killed by a signal (a CI timeout's SIGTERM, ^C) runs no __gc sentinel: a watchdog
-- process started with each postmaster (process.watchdog) stops it (SIGINT, a fast shutdown)
-- and removes its folder when the spec process is gone. For a watchdog that could not run
-- (killed too), each data folder records the PID of the process that started it
-- (owner.pid); the first start of a later run stops, by their postmaster PIDs, the servers of
-- folders whose owner is gone, and removes those folders (M.reap).

local process = require "spec.support.process"

local quote, run, free_port = process.quote, process.run, process.free_port

local M = {}

local BIN = "/usr/lib/postgresql/15/bin/"
M.BIN = BIN

local Server = {}
Server.__index = Server

local is_root = run("id -u").stdout:match("^0") ~= nil

-- Runs a server-side program (initdb, pg_ctl) as the user that owns the data directory.
local function as_owner(cmdline)
  if is_root then return run("runuser -u postgres -- " .. cmdline) end
  return run(cmdline)
end

local function read_file(path)
  local f = io.open(path)
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

local function random_hex(n)
  local f = assert(io.open("/dev/urandom", "rb"))
  local b = f:read(n)
  f:close()
  return (b:gsub(".", function(c) return ("%02x"):format(c:byte()) end))
end

function Server:log_tail()
  return (read_file(self.dir .. "/server.log") or ""):sub(-400)
end

-- Starts the postmaster on self.port; true or nil, message.
function Server:launch()
  local opts = ("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s -c fsync=off " ..
    "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
    :format(self.port, self.dir)
  local r = as_owner(BIN .. "pg_ctl -D " .. quote(self.dir .. "/data") .. " -o " .. quote(opts) ..
    " -l " .. quote(self.dir .. "/server.log") .. " -w -t 20 start")
  if r.code ~= 0 then
    return nil, "postgres did not start on port " .. self.port .. ": " .. self:log_tail()
  end
  local pidfile = read_file(self.dir .. "/data/postmaster.pid")
  self.pid = pidfile and tonumber(pidfile:match("^(%d+)"))
  if not self.pid then return nil, "postgres started without a postmaster.pid" end
  process.watchdog(self.pid, "INT", 10, self.dir)
  return true
end

-- kill stops the postmaster by its PID: SIGINT (fast shutdown), then SIGKILL after 10 s; stop
-- also removes the data directory; restart launches it again.
process.server_lifecycle(Server, "INT", 10)

-- The DSN of database name on this server.
function Server:dsn(name)
  return ("postgres://%s:%s@127.0.0.1:%d/%s"):format(self.user, self.password, self.port, name)
end

-- Runs sql with psql against dsn (a DSN or a database name). Returns { stdout, stderr, code }.
function Server:psql(dsn, sql)
  if not dsn:find("://", 1, true) then dsn = self:dsn(dsn) end
  return run("psql -X -q -A -t -v ON_ERROR_STOP=1 " .. quote(dsn) .. " -c " .. quote(sql))
end

-- Creates an empty database named after name (made unique); returns its DSN.
function Server:database(name)
  self.databases = self.databases + 1
  local db = ("zs_%s_%d"):format((name or "spec"):lower():gsub("[^%w]", "_"), self.databases)
  local r = self:psql("postgres", 'CREATE DATABASE "' .. db .. '"')
  assert(r.code == 0, "CREATE DATABASE failed: " .. r.stderr)
  return self:dsn(db), db
end

-- Drops the database of dsn, closing what still connects to it.
function Server:drop(dsn)
  local db = dsn:match("/([%w_]+)$")
  if not db or not self.pid then return end
  self:psql("postgres", 'DROP DATABASE IF EXISTS "' .. db .. '" WITH (FORCE)')
end

-- Whether pid is a live process (a zombie, killed and not yet waited for, is not).
local function running(pid)
  local stat = read_file("/proc/" .. pid .. "/stat")
  return stat ~= nil and stat:match("^%d+ %b() (%a)") ~= "Z"
end

-- Stops the servers of earlier runs that were killed before they could stop their own (see the
-- header): a /tmp/zever-pg-* folder whose owner.pid names a dead process. Returns how many.
function M.reap()
  local count = 0
  local dirs = run("ls -d /tmp/zever-pg-* 2>/dev/null").stdout or ""
  for dir in dirs:gmatch("[^\n]+") do
    local owner = tonumber((read_file(dir .. "/owner.pid") or ""):match("^(%d+)"))
    if owner and not running(owner) then
      local pm = read_file(dir .. "/data/postmaster.pid")
      local stale = setmetatable({ dir = dir, pid = pm and tonumber(pm:match("^(%d+)")) }, Server)
      stale:stop()
      count = count + 1
    end
  end
  return count
end

local REAPED = "spec.support.pg_server: reaped"   -- once a run, in the registry (see M.shared)

-- Makes the data directory and starts the server: self, or nil, message.
function Server:start()
  if not debug.getregistry()[REAPED] then
    debug.getregistry()[REAPED] = true
    M.reap()
  end
  if not is_root and run("test -x " .. BIN .. "initdb").code ~= 0 then
    return nil, "PostgreSQL 15 is not installed (make deps installs postgresql)"
  end
  self.dir = run("mktemp -d /tmp/zever-pg-XXXXXX").stdout:gsub("%s+$", "")
  local owner = assert(io.open(self.dir .. "/owner.pid", "w"))
  owner:write(require("zever.sys").getpid(), "\n")
  owner:close()
  local sentinel = newproxy(true)
  getmetatable(sentinel).__gc = function() self:stop() end
  self.sentinel = sentinel
  local pwfile = self.dir .. "/pw"
  local f = assert(io.open(pwfile, "w"))
  f:write(self.password, "\n")
  f:close()
  if is_root then run("chown -R postgres " .. quote(self.dir)) end
  local r = as_owner(BIN .. "initdb -D " .. quote(self.dir .. "/data") .. " -U " .. self.user ..
    " --pwfile=" .. quote(pwfile) .. " --auth-local=trust --auth-host=scram-sha-256 -E UTF8" ..
    " --locale=C --no-sync")
  os.remove(pwfile)
  if r.code ~= 0 then
    local msg = "initdb failed: " .. (r.stderr or ""):sub(-300)
    self:stop()
    return nil, msg
  end
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
  self.url = self:dsn("postgres")
  return self
end

function M.new(opts)
  opts = opts or {}
  return setmetatable({
    user = opts.user or "zever",
    password = opts.password or ("pw" .. random_hex(8)),
    databases = 0,
  }, Server)
end

-- A server of its own (a spec that restarts or stops it). Returns it or nil, message.
function M.start(opts)
  return M.new(opts):start()
end

-- The one server every #pg describe shares, started on first use and stopped when the Lua
-- state closes. Raises when it cannot start (a #pg spec cannot run without it). It is kept in
-- the registry, not in this module: busted insulates each spec file (the file's requires load
-- again for the next one), so a module upvalue started a server per #pg spec file, each left
-- running until the collector found its sentinel (25 files, 25 initdb runs).
local REGISTRY, KEY = debug.getregistry(), "spec.support.pg_server: shared"

function M.shared()
  local shared = REGISTRY[KEY]
  if shared and shared.pid then return shared end
  shared = assert(M.start())
  REGISTRY[KEY] = shared
  return shared
end

-- For the describe block that calls it: a setup that creates a database on the shared server
-- and a teardown that drops it. Returns a table whose dsn (and name, server) are set once the
-- setup ran.
function M.fixture(name)
  local env = getfenv(2)
  local fx = {}
  env.setup(function()
    fx.server = M.shared()
    fx.dsn, fx.name = fx.server:database(name)
  end)
  env.teardown(function()
    if fx.dsn then fx.server:drop(fx.dsn) end
  end)
  return fx
end

return M
