-- adapters.eventbus.postgres: the event bus on PostgreSQL's LISTEN/NOTIFY, shared by every
-- process that uses the database. No table, nothing stored: a process that is not listening
-- when a message is published never gets it (as with Redis PUBLISH).
--
--   local impl = pbus.new(db, { channel = "zever_events" })
--   impl:start(deliver) / impl:publish(topic, msg) / impl:close()   (the eventbus contract)
--   pbus.open(section, ctx) -> impl over ctx:get("db") (the adapter contract)
--
-- publish is one NOTIFY on the channel with the payload "<topic>\n<json>" (PostgreSQL caps a
-- payload at 8000 bytes: a larger message is nil, err with code "invalid"). It runs on a pool
-- connection of its own, outside any transaction of the caller: to publish only when a
-- transaction commits, use the outbox battery. start()
-- LISTENs on the pool's listener connection (zever.db: it LISTENs again after a reconnect) and
-- hands each payload to deliver(topic, msg), this process's own messages included. Messages
-- are JSON (zever.json).

local json = require "zever.json"
local errors = require "zever.errors"

local type, error, tostring, pcall, setmetatable, find, sub = type, error, tostring, pcall,
  setmetatable, string.find, string.sub

local M = {}

M.MAX_PAYLOAD = 7999

local P = {}
P.__index = P

function P:publish(topic, msg)
  local ok, body = pcall(json.encode, msg)
  if not ok then
    return nil, errors.new("eventbus", "invalid", "the message is not a JSON value: "
      .. tostring(body))
  end
  local payload = topic .. "\n" .. body
  if #payload > M.MAX_PAYLOAD then
    return nil, errors.new("eventbus", "invalid", "the message is larger than PostgreSQL's "
      .. "NOTIFY payload (8000 bytes with its topic)")
  end
  local sent, err = pcall(self.db.notify, self.db, self.channel, payload)
  if not sent then
    return nil, errors.new("eventbus", "unavailable", "db: " .. tostring(err and err.message
      or err))
  end
  return true
end

function P:start(deliver)
  self.deliver = deliver
  if self.sub then return true end
  local ok, s = pcall(self.db.listen, self.db, self.channel, function(payload)
    local nl = find(payload, "\n", 1, true)
    if not nl then return end
    local msg = json.decode(sub(payload, nl + 1))
    self.deliver(sub(payload, 1, nl - 1), msg)
  end)
  if not ok then
    return nil, errors.new("eventbus", "unavailable", "db: " .. tostring(s and s.message or s))
  end
  self.sub = s
  return true
end

function P:close()
  if self.sub then
    self.sub:close()
    self.sub = nil
  end
  return true
end

-- db: a zever.db on PostgreSQL (the caller keeps owning it). opts: channel ("zever_events").
function M.new(db, opts)
  if type(db) ~= "table" or type(db.listen) ~= "function" then
    error("eventbus.postgres.new: expects a zever.db database", 2)
  end
  if db.dialect ~= "postgres" then
    error("eventbus.postgres.new: the database is " .. tostring(db.dialect)
      .. ", not postgres (LISTEN/NOTIFY)", 2)
  end
  opts = opts or {}
  local channel = opts.channel or "zever_events"
  if type(channel) ~= "string" or not channel:match("^[%a_][%w_]*$") then
    error("eventbus.postgres: channel must be a plain identifier", 2)
  end
  return setmetatable({ db = db, channel = channel }, P)
end

function M.open(section, ctx)
  local db, err = ctx:get("db")
  if not db then return nil, err end
  if db.dialect ~= "postgres" then
    return nil, errors.new("eventbus", "invalid", "eventbus: the postgres adapter needs "
      .. "db.dsn to be a postgres:// database")
  end
  return M.new(db, { channel = section.channel ~= "" and section.channel or nil })
end

return M
