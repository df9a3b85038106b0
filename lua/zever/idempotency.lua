-- zever.idempotency: the front-end of the idempotency battery (Stripe's Idempotency-Key
-- contract as a store).
--
--   local idem = require("zever.idempotency").new{ ttl = 86400 }    -- a memory store
--   local r, err = idem:begin(key, { fingerprint = fp, ttl = 3600 })
--     r = { replay = false, token = t }   the key was absent: it is now reserved for the caller
--     r = { replay = true, result = v }   completed before with the same fingerprint: replay v
--     nil, err  err.code "key_mismatch"   the key is held with another fingerprint (checked first)
--               err.code "in_progress"    reserved by another begin that has not completed
--               err.code "invalid"        a key over 256 bytes, or too big for the store
--   idem:complete(key, result[, token]) -> true | nil, err   stores result for the reservation
--               err.code "not_found"      no live reservation (expired, evicted, forgotten, or
--                                         reserved again by another caller: token mismatch)
--               err.code "invalid"        the key is already complete, or the result is too big
--   idem:forget(key[, token])           -> true   drops the key (pending or complete); with a
--                                         token only while that reservation holds it
--   idem:close()                        -> true; every later call returns nil, err ("closed")
--
-- A reservation is pending until complete; a pending one expires pending_ttl seconds after
-- begin (default 60: a crashed request does not hold the key forever), a completed one ttl
-- seconds after complete (default 86400). Results are strings, numbers, booleans or tables
-- (JSON), copied in and out. Misuse raises: a key that is not a string, a fingerprint that is
-- not a string, a ttl that is not a positive number, a result of another type.
--
-- idempotency.wrap(impl, opts) puts this front-end over an adapter object whose methods take
-- valid arguments: impl:begin(key, fingerprint, ttl, pending_ttl) -> r | nil, err;
-- impl:complete(key, result, token) -> true | nil, err; impl:forget(key, token) -> true;
-- impl:close() (zever.battery: the closed guard, close, stats); adapters build their errors
-- with zever.errors ("idempotency"). It keeps no state beyond the wrapped object.

local battery = require "zever.battery"

local type, error = type, error
local check_string, check_seconds = battery.string, battery.seconds

local M = {}

M.MAX_KEY = 256
M.TTL = 86400
M.PENDING_TTL = 60

local Idem = battery.define("idempotency", "the idempotency store is closed")
M.error = Idem.error

M.IN_PROGRESS = M.error("in_progress", "a request with this key is in progress")
M.KEY_MISMATCH = M.error("key_mismatch", "the key was used with a different request")
local CLOSED = Idem.CLOSED
local TOO_LONG = M.error("invalid", "the key is longer than 256 bytes")

local RESULT = { string = true, number = true, boolean = true, table = true }

function Idem:begin(key, opts)
  check_string(key, "idempotency:begin", "key")
  local fp, ttl, pending = "", self.ttl, self.pending_ttl
  if opts ~= nil then
    if type(opts) ~= "table" then error("idempotency:begin: opts must be a table", 2) end
    fp = opts.fingerprint or ""
    if type(fp) ~= "string" then error("idempotency:begin: fingerprint must be a string", 2) end
    ttl = check_seconds(opts.ttl, ttl, "idempotency:begin", "ttl", true, true)
    pending = check_seconds(opts.pending_ttl, pending, "idempotency:begin", "pending_ttl", true, true)
  end
  if self.closed then return nil, CLOSED end
  if #key > 256 then return nil, TOO_LONG end
  return self.impl:begin(key, fp, ttl, pending)
end

function Idem:complete(key, result, token)
  check_string(key, "idempotency:complete", "key")
  if not RESULT[type(result)] then
    error("idempotency:complete: result must be a string, number, boolean or table", 2)
  end
  if self.closed then return nil, CLOSED end
  if #key > 256 then return nil, TOO_LONG end
  return self.impl:complete(key, result, token)
end

function Idem:forget(key, token)
  check_string(key, "idempotency:forget", "key")
  if self.closed then return nil, CLOSED end
  if #key > 256 then return true end
  return self.impl:forget(key, token)
end

-- opts.ttl: seconds a completed result is replayed (default 86400); opts.pending_ttl: seconds
-- a reservation holds the key without a complete (default 60).
function M.wrap(impl, opts)
  if type(impl) ~= "table" then error("idempotency.wrap: expects an adapter object", 2) end
  opts = opts or {}
  local ttl = check_seconds(opts.ttl, M.TTL, "idempotency.wrap", "ttl", true, true)
  local pending = check_seconds(opts.pending_ttl, M.PENDING_TTL, "idempotency.wrap", "pending_ttl",
    true, true)
  return battery.object(Idem, impl, { ttl = ttl, pending_ttl = pending })
end

-- A memory store: opts as adapters.idempotency.memory.new, plus ttl and pending_ttl.
function M.new(opts)
  return battery.default(M.wrap, "adapters.idempotency.memory", "idempotency.new", opts)
end

return M
