-- adapters.idempotency_result: how the idempotency adapters turn a stored result into bytes and
-- back (memory, db, redis): a kind number and a string; and the errors they all return
-- (result.IN_PROGRESS, KEY_MISMATCH, COMPLETED, NO_RESERVATION: zever errors of battery
-- "idempotency"). It must not store anything, nor change the tags: rows and keys written
-- earlier are read with them.
--
--   local raw, kind = result.encode(value)    -- kind 1 string (as is), 2 number (%.17g),
--                                              -- 3 boolean ("1"/"0"), 4 anything else (JSON)
--   local value = result.decode(raw, kind)     -- raw nil (a NULL column) reads as ""

local json = require "zever.json"
local errors = require "zever.errors"

local type, tonumber, format = type, tonumber, string.format

local M = {}

M.IN_PROGRESS = errors.new("idempotency", "in_progress", "a request with this key is in progress")
M.KEY_MISMATCH = errors.new("idempotency", "key_mismatch",
  "the key was used with a different request")
M.COMPLETED = errors.new("idempotency", "invalid", "the key is already complete")
M.NO_RESERVATION = errors.new("idempotency", "not_found", "no live reservation for the key")

local STRING, NUMBER, BOOLEAN, JSON = 1, 2, 3, 4
M.STRING, M.NUMBER, M.BOOLEAN, M.JSON = STRING, NUMBER, BOOLEAN, JSON

function M.encode(result)
  local t = type(result)
  if t == "string" then return result, STRING end
  if t == "number" then return format("%.17g", result), NUMBER end
  if t == "boolean" then return result and "1" or "0", BOOLEAN end
  return json.encode(result), JSON
end

function M.decode(raw, kind)
  raw = raw or ""
  if kind == STRING then return raw end
  if kind == NUMBER then return tonumber(raw) end
  if kind == BOOLEAN then return raw == "1" end
  return json.decode(raw)
end

return M
