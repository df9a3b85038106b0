-- adapters.session.redis: sessions on a Redis server (SET with PX, so Redis forgets an expired
-- session by itself), shared by every process and machine that uses the server.
--
--   rs.new{ url = ..., prefix = "zever:session:" } -> impl
--   impl:get(id) / set(id, blob, ttl) / delete(id) / close()   (adapters.cache.redis's)

local cache_redis = require "adapters.cache.redis"
local redis_client = require "adapters.redis_client"

local M = {}

M.PREFIX = "zever:session:"

function M.new(opts)
  opts = opts or {}
  return cache_redis.new{ url = opts.url, client = opts.client, timeout = opts.timeout,
    prefix = opts.prefix or M.PREFIX }
end

-- The adapter contract: session.url overrides redis.url; an empty prefix means M.PREFIX.
function M.open(section, ctx)
  local url, timeout = redis_client.config(section, ctx)
  local prefix = section.prefix
  if prefix == nil or prefix == "" then prefix = M.PREFIX end
  return M.new{ url = url, prefix = prefix, timeout = timeout }
end

return M
