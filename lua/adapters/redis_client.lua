-- adapters.redis_client: what the redis adapters of cache, limiter, idempotency, queue and
-- scheduler share about their connection: the options that name a client, the worker's shared
-- client they take for a url (or one the caller lends), giving it back on close, where the
-- container's factory finds the url, and how a failed call becomes the battery's error. It must
-- not send commands or know any adapter's keys or scripts.
--
--   local self, err = redis_client.new("cache.redis", opts, "cache", "zever:cache:")
--       opts: url (redis.shared(url, ...), given back by close) or client (borrowed, never
--       closed here); prefix (the default when absent); timeout, or redis = { timeout = ... }
--       (the shared client's options). -> { client, owned, prefix } | nil, err
--   R.close = redis_client.close         closes self.client when owned; self.client = nil;
--                                        true (an adapter's close)
--   local fail = redis_client.failer("cache", "invalid")
--       fail(err) -> nil, a zever error ("unavailable", "redis: " .. message); with a second
--       argument a WRONGTYPE error reply gets that code (and the bare message) instead
--   local url, timeout = redis_client.config(section, ctx)   section.url, else redis.url
--   M.open = redis_client.opener(M.new)     the adapter contract's open over that url (and the
--                                        section's prefix, when it has a non-empty one)
--
-- Misuse (no options table, no url nor client, a prefix that is not a string) raises with the
-- caller of the adapter's new blamed. zever.redis reconnects a shared client by itself.

local redis = require "zever.redis"
local errors = require "zever.errors"

local type, error, tostring, find = type, error, tostring, string.find

local M = {}

function M.new(who, opts, battery, prefix)
  if type(opts) ~= "table" then error(who .. ".new: expects an options table", 3) end
  prefix = opts.prefix or prefix
  if type(prefix) ~= "string" then error(who .. ": prefix must be a string", 3) end
  local client, owned = opts.client, false
  if client == nil then
    if type(opts.url) ~= "string" then
      error(who .. ".new: expects { url = 'redis://...' } or { client = c }", 3)
    end
    local err
    client, err = redis.shared(opts.url,
      opts.redis or (opts.timeout and { timeout = opts.timeout }) or nil)
    if not client then return nil, errors.new(battery, err.code, "redis: " .. tostring(err.message)) end
    owned = true
  elseif type(client) ~= "table" or type(client.script) ~= "function" then
    error(who .. ".new: client must be a zever.redis client", 3)
  end
  return { client = client, owned = owned, prefix = prefix }
end

-- Gives the client back: a shared one is really closed by its last user; a borrowed one stays
-- open. Idempotent; returns true, so that it can be an adapter's close method.
function M.close(self)
  local c = self.client
  self.client = nil
  if c and self.owned then c:close() end
  return true
end

function M.failer(battery, wrongtype)
  return function(err)
    local message = err == nil and "no reply"
      or tostring(type(err) == "table" and err.message or err)
    if wrongtype and type(err) == "table" and err.code == "redis"
        and find(message, "^WRONGTYPE") then
      return nil, errors.new(battery, wrongtype, message)
    end
    return nil, errors.new(battery, "unavailable", "redis: " .. message)
  end
end

-- The adapter contract's open for an adapter whose new takes only the connection: open(section,
-- ctx) -> new{ url = section.url or redis.url, timeout = redis.timeout }.
function M.opener(new)
  return function(section, ctx)
    local url, timeout = M.config(section, ctx)
    local prefix = section.prefix
    return new{ url = url, timeout = timeout, prefix = prefix ~= "" and prefix or nil }
  end
end

-- The url and timeout of a battery's factory: the section's url when set, else the config's
-- redis.url; the timeout is redis.timeout.
function M.config(section, ctx)
  local cfg = ctx and ctx.config and ctx.config.redis or {}
  local url = section.url
  if type(url) ~= "string" or url == "" then url = cfg.url end
  return url, cfg.timeout
end

return M
