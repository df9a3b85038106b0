-- adapters.scheduler.redis: the one-run-per-slot lock on a Redis server, shared by every
-- process and machine that uses the server: the first SET NX of a slot's key wins, the others
-- get a nil reply and change nothing. One command, one round trip per slot.
--
--   local lock = redis_lock.new{ url = "redis://127.0.0.1:6379/0", prefix = "zever:scheduler:",
--                                redis = { timeout = 5 } }        -- or client = c (borrowed)
--   lock:acquire(key, slot, horizon) -> true (won) | false (another process won) | nil, err
--   lock:close()
--   redis_lock.open(section, ctx)    -> impl over it (the adapter contract)
--
-- The key is prefix .. key (key already names the entry and the slot time, "<entry>@<slot>");
-- it lives `horizon` seconds (PX; scheduler.horizon, 1 day by default), then Redis forgets it:
-- slots are never revisited, so nothing else cleans up. A lock that cannot reach the server
-- returns nil, err with code "unavailable" and the tick logs it (the slot is not fired by this
-- process). This file must not compute slots or dispatch jobs.

local redis_client = require "adapters.redis_client"
local errors = require "zever.errors"

local setmetatable, ceil = setmetatable, math.ceil

local M = {}

M.PREFIX = "zever:scheduler:"

local fail = redis_client.failer("scheduler")
local CLOSED = errors.new("scheduler", "closed", "lock closed")

local L = {}
L.__index = L

function L:acquire(key, _, horizon)
  if self.closed then return nil, CLOSED end
  local ms = ceil((horizon or 86400) * 1000)
  if ms < 1 then ms = 1 end
  local ok, err = self.client:call("SET", self.prefix .. key, "1", "NX", "PX", ms)
  if err then return fail(err) end
  return ok == "OK"
end

-- Releases the shared client (the last user's close really closes it); a borrowed one stays.
function L:close()
  if self.closed then return end
  self.closed = true
  redis_client.close(self)
end

function M.new(opts)
  local self, err = redis_client.new("scheduler.redis", opts, "scheduler", M.PREFIX)
  if not self then return nil, err end
  self.closed = false
  return setmetatable(self, L)
end

-- The adapter contract: section.url (else the config's redis.url) names the server.
M.open = redis_client.opener(M.new)

return M
