-- zever.redis: the Redis client. One API, two faces:
--
--   local redis = require "zever.redis"
--   local c = redis.shared(url)          -- the worker's client for this url (refcounted, async)
--   local c = redis.connect(url, opts)   -- a private client; opts.sync = true: blocking hiredis
--   c:call("SET", "k", "v")              --> "OK"          | nil, err
--   c:call_many({{"INCR", "n"}, {"GET", "n"}})  --> {1, "1"} | nil, err
--   c:pipeline(function(p) p:call("INCR", "n"); p:call("GET", "n") end)   -- same thing
--   local s = c:script("return redis.call('GET', KEYS[1])"); s:call({"k"}, {})  -- EVALSHA
--   c:close()                            -- shared: the last user's close really closes it
--   redis.open_clients()                 -- the open async clients: { {address, shared}, ... }
--
-- The async face runs on the state's libuv loop: inside a coroutine (every request, job and
-- timer of zever.sched) a call yields until its reply; outside any coroutine it runs the loop
-- until the reply arrives, as zever.sleep does (so it must not be called from a plain loop
-- callback: spawn a coroutine there). The sync face blocks the thread and never touches the loop.
--
-- Replies: status and bulk strings -> string ("OK" stays "OK"), integer -> number (a decimal
-- string beyond +-2^53), nil -> nil (redis.null inside arrays), array -> table, error reply ->
-- nil, err with err.code "redis" (inside arrays: an err value, see redis.is_error). Failures:
-- "unavailable" (connection down: the async client reconnects with backoff), "closed",
-- "invalid" (a bad url). Messages name host:port, never the password. Bad arguments raise.

local core = require "zever.redis_core"
local errors = require "zever.errors"
local sched = require "zever.sched"

local type, setmetatable, error, tostring, pairs = type, setmetatable, error, tostring, pairs
local unpack, find = unpack, string.find
local token_of, await = sched.token, sched.await

local M = {}

M.null = core.null

-- Errors are zever errors of battery "redis"; an error reply is the server's own: code "redis",
-- no battery, so that it prints "redis: ERR ..." (the binding builds those inside arrays with
-- the same metatable).
local Error = errors.Error

function M.error(code, message)
  if code == "redis" then return errors.new(nil, code, message) end
  return errors.new("redis", code, message)
end

-- True when v is an error value (an error reply inside a call_many result, or an err).
M.is_error = errors.is

local CLOSED = M.error("closed", "the client is closed")

-- The binding calls it from the loop with a reply: it completes the caller's wait.
local dispatch = sched.complete

local function finish(value, code, message)
  if code then return nil, M.error(code, message) end
  return value
end

local Client = {}
Client.__index = Client

-- Sends with send(core, token, ...) and waits for the reply (zever.sched's one wait).
local function wait(self, send, a, ...)
  local c = self._c
  if not c then return nil, CLOSED end
  local token = token_of()
  local ok, code, message = send(c, token, a, ...)
  if not ok then return nil, M.error(code, message) end
  return finish(await(token))
end

local function a_send(c, token, ...) return c:send(token, ...) end
local function a_send_many(c, token, cmds) return c:send_many(token, cmds) end

function Client:call(...)
  if type((...)) ~= "string" then
    error("redis: call wants a command name (a string), got " .. type((...)), 2)
  end
  if self._sync then
    local c = self._c
    if not c then return nil, CLOSED end
    return finish(c:call(...))
  end
  return wait(self, a_send, ...)
end

-- Sends every command in one write and returns the array of their replies (error replies are
-- err values in it, nil replies redis.null), or nil, err when the connection failed.
function Client:call_many(cmds)
  if type(cmds) ~= "table" then error("redis: call_many wants an array of commands", 2) end
  if #cmds == 0 then return {} end
  if self._sync then
    local c = self._c
    if not c then return nil, CLOSED end
    return finish(c:call_many(cmds))
  end
  return wait(self, a_send_many, cmds)
end

local Pipeline = {}
Pipeline.__index = Pipeline

function Pipeline:call(...)
  if type((...)) ~= "string" then error("redis: pipeline call wants a command name", 2) end
  self.n = self.n + 1
  self.cmds[self.n] = { ... }
  return self
end

-- fn(p) queues commands with p:call(...); they go out together when fn returns.
function Client:pipeline(fn)
  if type(fn) ~= "function" then error("redis: pipeline wants a function", 2) end
  local p = setmetatable({ cmds = {}, n = 0 }, Pipeline)
  fn(p)
  return self:call_many(p.cmds)
end

local Script = {}
Script.__index = Script

-- A server-side Lua script: the first call loads it (SCRIPT LOAD) and every call runs EVALSHA;
-- after a SCRIPT FLUSH or a server restart (NOSCRIPT) it is loaded again and retried once.
function Client:script(source)
  if type(source) ~= "string" then error("redis: script wants the Lua source", 2) end
  return setmetatable({ client = self, source = source, sha = nil }, Script)
end

function Script:load()
  local sha, err = self.client:call("SCRIPT", "LOAD", self.source)
  if not sha then return nil, err end
  self.sha = sha
  return sha
end

local function evalsha(self, keys, args)
  local cmd, n = { "EVALSHA", self.sha, #keys }, 3
  for i = 1, #keys do n = n + 1; cmd[n] = keys[i] end
  for i = 1, #args do n = n + 1; cmd[n] = args[i] end
  return self.client:call(unpack(cmd, 1, n))
end

function Script:call(keys, args)
  keys, args = keys or {}, args or {}
  if type(keys) ~= "table" or type(args) ~= "table" then
    error("redis: script:call wants (keys, args) tables", 2)
  end
  if not self.sha then
    local ok, err = self:load()
    if not ok then return nil, err end
  end
  local v, err = evalsha(self, keys, args)
  if err and err.code == "redis" and find(err.message, "^NOSCRIPT") then
    local ok, lerr = self:load()
    if not ok then return nil, lerr end
    return evalsha(self, keys, args)
  end
  return v, err
end

-- {connected =, pending =, connects =, error =} of an async client.
function Client:info()
  if self._sync or not self._c then
    return { connected = self._c ~= nil, pending = 0, connects = 0 }
  end
  local connected, pending, connects, err = self._c:info()
  return { connected = connected, pending = pending, connects = connects, error = err }
end

local shared = {}     -- url string -> client (one table per Lua state: each worker has its own)
local live = setmetatable({}, { __mode = "k" })  -- open async client -> "host:port"; open_clients
local by_target = {}  -- "host|port|db|user|password" -> client, so equivalent urls share too

function Client:close()
  local entry = self._shared
  if entry then
    entry.refs = entry.refs - 1
    if entry.refs > 0 then return end
    for i = 1, #entry.urls do shared[entry.urls[i]] = nil end
    by_target[entry.target] = nil
    self._shared = nil
  end
  local c = self._c
  if c then
    self._c = nil
    live[self] = nil
    c:close()
  end
end

local function check_opts(opts)
  if opts ~= nil and type(opts) ~= "table" then error("redis: options must be a table", 3) end
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "sync" and k ~= "timeout" and k ~= "backoff_min" and k ~= "backoff_max" then
      error("redis: unknown option '" .. tostring(k) .. "'", 3)
    end
  end
  return opts
end

-- A private client. opts: sync (false), timeout (5 s), backoff_min (0.05 s), backoff_max (2 s).
-- An async client connects in the background (its calls fail with "unavailable" until it
-- can); a sync client connects now and returns nil, err when it cannot.
function M.connect(url, opts)
  if type(url) ~= "string" then error("redis: connect wants a redis:// url", 2) end
  opts = check_opts(opts)
  if opts.sync then
    local c, why = core.sync(url, opts.timeout, Error)
    if not c then return nil, M.error("invalid", why) end
    local ok, code, message = c:connect()
    if not ok then return nil, M.error(code, message) end
    return setmetatable({ _c = c, _sync = true }, Client)
  end
  local c, why = core.async(url, opts.timeout, opts.backoff_min, opts.backoff_max, dispatch,
    Error)
  if not c then return nil, M.error("invalid", why) end
  local u = core.parse_url(url)
  local client = setmetatable({ _c = c, _sync = false }, Client)
  live[client] = u.host .. ":" .. u.port
  return client
end

-- The async clients of this state that are open (an async client reconnects to its server for
-- as long as it is open): { { address = "host:port", shared = refs or false }, ... }. Specs use
-- it to find a client left open after its server stopped (spec/support/redis_server.lua).
function M.open_clients()
  local out = {}
  for client, address in pairs(live) do
    if client._c then
      out[#out + 1] = { address = address, shared = client._shared and client._shared.refs or false }
    end
  end
  return out
end

-- The state's shared async client for url (created on first use, with opts then); every
-- shared() must be balanced by one close().
function M.shared(url, opts)
  local c = shared[url]
  if c then
    local entry = c._shared
    entry.refs = entry.refs + 1
    return c
  end
  if type(url) ~= "string" then error("redis: shared wants a redis:// url", 2) end
  local u, why = core.parse_url(url)
  if not u then return nil, M.error("invalid", why) end
  local target = u.host .. "|" .. u.port .. "|" .. u.db .. "|" .. u.username .. "|" .. u.password
  c = by_target[target]
  if c then
    local entry = c._shared
    entry.refs = entry.refs + 1
    entry.urls[#entry.urls + 1] = url
    shared[url] = c
    return c
  end
  local err
  c, err = M.connect(url, opts)
  if not c then return nil, err end
  c._shared = { urls = { url }, target = target, refs = 1 }
  shared[url] = c
  by_target[target] = c
  return c
end

-- Parses a redis:// url: {host, port, db, username, password} or nil, err ("invalid").
function M.parse_url(url)
  if type(url) ~= "string" then error("redis: parse_url wants a string", 2) end
  local u, why = core.parse_url(url)
  if not u then return nil, M.error("invalid", why) end
  return u
end

return M
