-- adapters.billing.stub: subscriptions that never leave the process, for development and specs.
-- A subscription starts "active" (or "trialing" with trial_days), its period is billing.period
-- long; cancel ends it now ("canceled") or at the period's end (cancel_at_period_end).
-- Idempotency keys per Stripe (adapters.stub_ledger).
--
--   impl:subscribe(p)      -> subscription | nil, err   p checked by zever.billing
--   impl:cancel(id, p)     -> subscription | nil, err
--   impl:get(id)           -> subscription | nil
--   stub.open(section)     -> impl (the adapter contract)

local errors = require "zever.errors"
local ledger = require "adapters.stub_ledger"

local setmetatable, pairs, floor = setmetatable, pairs, math.floor

local M = {}

local Stub = {}
Stub.__index = Stub

local function copy(t)
  local o = {}
  for k, v in pairs(t) do o[k] = v end
  return o
end

function Stub:subscribe(p)
  return self.subs:once(p.idempotency_key, p, function()
    local now = floor(self.clock())
    local trial = (p.trial_days or 0) * 86400
    local s = self.subs:put({ id = self.subs:id(), object = "subscription", customer = p.customer,
      plan = p.plan, status = trial > 0 and "trialing" or "active", created = now,
      current_period_start = now, current_period_end = now + (trial > 0 and trial or self.period),
      cancel_at_period_end = false, metadata = p.metadata })
    return copy(s)
  end)
end

function Stub:cancel(id, p)
  local s = self.subs:get(id)
  if not s then return nil, errors.new("billing", "not_found", "no subscription has this id") end
  if s.status == "canceled" then return copy(s) end
  if p.at_period_end then
    s.cancel_at_period_end = true
  else
    s.status, s.canceled_at = "canceled", floor(self.clock())
  end
  return copy(s)
end

function Stub:get(id)
  local s = self.subs:get(id)
  return s and copy(s)
end

function M.new(opts)
  opts = opts or {}
  return setmetatable({ subs = ledger.new("sub", "billing"), period = opts.period or 30 * 86400,
    clock = opts.clock or os.time }, Stub)
end

function M.open(section) return M.new{ period = section.period } end

return M
