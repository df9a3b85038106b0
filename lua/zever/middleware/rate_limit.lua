-- zever.middleware.rate_limit: HTTP rate limiting over a limiter (token bucket).
--
--   app:use(rate_limit{ key = function(req) return req:header("x-api-key") end,
--                       rate = 5, burst = 10 })                 -- its own memory limiter
--   app:use(rate_limit{ key = fn, limiter = function() return app.limiter end })  -- the app's
--
-- Options: key (required) fn(req) -> string, or nil to let the request through unlimited;
-- rate, burst (a memory limiter of its own, shared by every worker of the process: opened by
-- name, default "rate_limit:<rate>:<burst>"; max_keys, idle_ttl and name pass through) or
-- limiter (a limiter object, or a function returning one, resolved on the first request);
-- cost: a number or fn(req) -> number (default 1); prefix: prepended to keys (default "").
--
-- Every limited response carries RateLimit-Limit (burst), RateLimit-Remaining (whole tokens
-- left) and RateLimit-Reset (seconds until the bucket is full again; on a denial, until the
-- cost fits). A denial answers 429 {"error":"rate_limited"} with Retry-After (whole seconds,
-- at least 1, at most 86400) without running the rest of the chain. A key over 256 bytes
-- answers 400 {"error":"invalid_rate_limit_key"} (letting it through would let anyone skip the
-- limit with a long header). Any other limiter failure (a remote store down, "closed") lets the
-- request through: the limiter fails open, so an outage of the store is not an outage of the
-- app. It must not keep per-request state.

local limiter_mod = require "zever.limiter"

local type, error, tostring, ceil, huge, format = type, error, tostring, math.ceil, math.huge,
  string.format

local MAX_RETRY = 86400

local function seconds(x)
  if x == huge or x > MAX_RETRY then return MAX_RETRY end
  return ceil(x)
end

return function(opts)
  if type(opts) ~= "table" then error("rate_limit: expects an options table", 2) end
  local key = opts.key
  if type(key) ~= "function" then error("rate_limit: key must be a function of the request", 2) end
  local cost = opts.cost or 1
  if type(cost) ~= "number" and type(cost) ~= "function" then
    error("rate_limit: cost must be a number or a function", 2)
  end
  local prefix = opts.prefix or ""
  if type(prefix) ~= "string" then error("rate_limit: prefix must be a string", 2) end

  local lim = opts.limiter
  if lim == nil then
    if opts.rate == nil or opts.burst == nil then
      error("rate_limit: give rate and burst, or a limiter", 2)
    end
    lim = limiter_mod.new{
      name = opts.name or format("rate_limit:%s:%s", tostring(opts.rate), tostring(opts.burst)),
      rate = opts.rate, burst = opts.burst, max_keys = opts.max_keys, idle_ttl = opts.idle_ttl,
    }
  elseif type(lim) ~= "table" and type(lim) ~= "function" then
    error("rate_limit: limiter must be a limiter or a function returning one", 2)
  end

  return function(req, res, nxt)
    local k = key(req)
    if k == nil then return nxt() end
    if type(lim) == "function" then lim = lim() end
    local c = cost
    if type(c) == "function" then c = c(req) end
    local allowed, remaining, retry_after = lim:allow(prefix .. tostring(k), c)
    if allowed == nil then
      if remaining and remaining.code == "invalid" then
        return res:status(400):json({ error = "invalid_rate_limit_key" })
      end
      return nxt()
    end
    local burst, rate = lim.burst, lim.rate
    local reset
    if not allowed then
      reset = seconds(retry_after)
    elseif rate and rate > 0 then
      reset = seconds((burst - remaining) / rate)
    else
      reset = remaining < burst and MAX_RETRY or 0
    end
    if not allowed then
      res:status(429)
      res:header("Retry-After", tostring(reset < 1 and 1 or reset))
      res:header("RateLimit-Limit", tostring(burst))
      res:header("RateLimit-Remaining", tostring(remaining))
      res:header("RateLimit-Reset", tostring(reset < 1 and 1 or reset))
      return res:json({ error = "rate_limited" })
    end
    local r = nxt()
    r:header("RateLimit-Limit", tostring(burst))
    r:header("RateLimit-Remaining", tostring(remaining))
    r:header("RateLimit-Reset", tostring(reset))
    return r
  end
end
