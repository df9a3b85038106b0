-- adapters.eventbus.redis: the event bus on a Redis server, shared by every process that uses
-- the server with the same prefix. It rides a Redis STREAM (prefix .. "stream"), not PUBLISH /
-- SUBSCRIBE: zever.redis's client answers one reply per command and has no push mode, and a
-- stream gives each process its own read position, so a process whose connection drops for a
-- moment reads on from where it was instead of losing what was published meanwhile.
--
--   local impl = rbus.new{ url = "redis://127.0.0.1:6379/0", prefix = "zever:eventbus:",
--                          maxlen = 10000, block = 1, timeout = 5 }
--   impl:start(deliver) / impl:publish(topic, msg) / impl:close()   (the eventbus contract)
--   rbus.open(section, ctx) -> impl (the adapter contract)
--
-- publish is ONE command, XADD key MAXLEN ~ maxlen * t <topic> m <json>: the stream keeps about
-- the last maxlen messages. start() opens a connection of its own (a blocking read would hold
-- up the worker's shared client) and runs a coroutine that reads from "$" (what is published
-- from now on) with XREAD BLOCK <block s> COUNT 256, handing each entry to deliver(topic, msg)
-- in order, this process's own messages included. When the connection fails the reader waits
-- 0.1-2 s (doubling) and reads on from the last id it saw. Messages are JSON (zever.json); an
-- entry that does not decode is skipped and counted (stats().undecodable). A failed publish is
-- nil, err with code "unavailable".

local redis = require "zever.redis"
local json = require "zever.json"
local errors = require "zever.errors"
local sched = require "zever.sched"

local type, error, tostring, pcall, setmetatable, min = type, error, tostring, pcall,
  setmetatable, math.min

local M = {}

local R = {}
R.__index = R

local function unavailable(err)
  return nil, errors.new("eventbus", "unavailable", "redis: " .. tostring(err and err.message
    or err or "no reply"))
end

function R:publish(topic, msg)
  local ok, body = pcall(json.encode, msg)
  if not ok then
    return nil, errors.new("eventbus", "invalid", "the message is not a JSON value: "
      .. tostring(body))
  end
  local id, err = self.client:call("XADD", self.key, "MAXLEN", "~", self.maxlen, "*",
    "t", topic, "m", body)
  if not id then return unavailable(err) end
  return true
end

local function read_loop(self)
  local wait = 0.1
  while not self.closed do
    local r, err = self.reader:call("XREAD", "COUNT", 256, "BLOCK", self.block_ms, "STREAMS",
      self.key, self.last)
    if self.closed then break end
    if r == nil and err then
      sched.sleep(wait)
      wait = min(wait * 2, 2)
    else
      wait = 0.1
      local entries = r and r ~= redis.null and r[1] and r[1][2]
      for i = 1, entries and #entries or 0 do
        local e = entries[i]
        self.last = e[1]
        local f = e[2]
        local topic, body
        for j = 1, #f, 2 do
          if f[j] == "t" then topic = f[j + 1] elseif f[j] == "m" then body = f[j + 1] end
        end
        local msg = body and json.decode(body)
        if topic and body and (msg ~= nil or body == "null") then
          self.deliver(topic, msg)
        else
          self.undecodable = self.undecodable + 1
        end
      end
    end
  end
  self.reading = false
end

function R:start(deliver)
  self.deliver = deliver
  if self.reading then return true end
  local reader, err = redis.connect(self.url, { timeout = self.block_ms / 1000 + self.timeout })
  if not reader then return unavailable(err) end
  self.reader = reader
  -- "$" is resolved by the server at the first read: ask for the stream's last id now, so a
  -- message published right after subscribe is not missed.
  local info = reader:call("XREVRANGE", self.key, "+", "-", "COUNT", 1)
  self.last = (type(info) == "table" and info[1] and info[1][1]) or "0-0"
  self.reading = true
  sched.spawn(read_loop, self)
  return true
end

function R:stats()
  return { undecodable = self.undecodable }
end

function R:close()
  self.closed = true
  if self.reader then
    self.reader:close()
    self.reader = nil
  end
  if self.client and self.owned then self.client:close() end
  self.client = nil
  return true
end

-- opts: url; prefix ("zever:eventbus:"), maxlen (10000), block (seconds a read waits, 1),
-- timeout (5). nil, err for an invalid url.
function M.new(opts)
  if type(opts) ~= "table" then error("eventbus.redis.new: expects an options table", 2) end
  if type(opts.url) ~= "string" then error("eventbus.redis.new: expects { url = ... }", 2) end
  local prefix = opts.prefix or "zever:eventbus:"
  local client, err = redis.shared(opts.url, opts.timeout and { timeout = opts.timeout } or nil)
  if not client then return nil, errors.new("eventbus", err.code, "redis: " .. tostring(err.message)) end
  return setmetatable({ url = opts.url, client = client, owned = true, key = prefix .. "stream",
    maxlen = opts.maxlen or 10000, block_ms = math.floor((opts.block or 1) * 1000),
    timeout = opts.timeout or 5, closed = false, reading = false, undecodable = 0 }, R)
end

function M.open(section, ctx)
  local cfg = ctx and ctx.config and ctx.config.redis or {}
  local url = section.url ~= "" and section.url or cfg.url
  return M.new{ url = url, timeout = cfg.timeout, prefix = section.prefix ~= "" and section.prefix
    or nil, maxlen = section.maxlen }
end

return M
