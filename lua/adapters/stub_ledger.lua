-- adapters.stub_ledger: the memory of the stub payment and billing adapters: records by id,
-- and idempotency keys (Stripe's contract: a key replays the first result for the same request
-- and refuses a different one). Per Lua state (one worker): stubs are for development and specs.
--
--   local l = ledger.new(prefix)                 prefix of the ids ("ch", "sub")
--   l:once(key, params, fn) -> result | nil, err  key nil: fn(); else fn() once per key; the
--                                                 same key with other params: "key_mismatch"
--   l:id()  -> "<prefix>_<random>"                l:put(rec) / l:get(id)
--
-- It must not know any battery.

local crypto = require "zever.crypto"
local errors = require "zever.errors"

local type, pairs, ipairs, tostring, tonumber, sort, concat, setmetatable = type, pairs, ipairs,
  tostring, tonumber, table.sort, table.concat, setmetatable

local M = {}

local Ledger = {}
Ledger.__index = Ledger

-- A canonical text of a flat-or-nested params table (sorted keys), for comparing requests.
local function canon(v)
  if type(v) ~= "table" then return type(v) .. ":" .. tostring(v) end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = tostring(k) end
  sort(keys)
  local out = {}
  for i, k in ipairs(keys) do
    local x = v[k]
    if x == nil then x = v[tonumber(k)] end
    out[i] = k .. "=" .. canon(x)
  end
  return "{" .. concat(out, ",") .. "}"
end
M.canon = canon

function Ledger:id()
  return self.prefix .. "_" .. crypto.token(12)
end

function Ledger:put(rec) self.by_id[rec.id] = rec return rec end
function Ledger:get(id) return self.by_id[id] end

function Ledger:once(key, params, fn)
  if key == nil then return fn() end
  local fp = canon(params)
  local seen = self.keys[key]
  if seen then
    if seen.fp ~= fp then
      return nil, errors.new(self.battery, "key_mismatch",
        "the idempotency key was used with different parameters")
    end
    return seen.result, seen.err
  end
  local result, err = fn()
  self.keys[key] = { fp = fp, result = result, err = err }
  return result, err
end

function M.new(prefix, battery)
  return setmetatable({ prefix = prefix, battery = battery, by_id = {}, keys = {} }, Ledger)
end

return M
