-- adapters.payment.stub: payments that never leave the process, for development and specs.
-- Charges succeed, except with the source "tok_chargeDeclined" (Stripe's test token), which
-- fails with "declined". Idempotency keys per Stripe (adapters.stub_ledger).
--
--   impl:charge(p)            -> charge | nil, err     p checked by zever.payment
--   impl:refund(id, p)        -> refund | nil, err
--   impl:get(id)              -> charge | nil
--   stub.open(section)        -> impl (the adapter contract)

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

function Stub:charge(p)
  return self.charges:once(p.idempotency_key, p, function()
    if p.source == "tok_chargeDeclined" then
      return nil, errors.new("payment", "declined", "the card was declined")
    end
    local c = self.charges:put({ id = self.charges:id(), object = "charge", status = "succeeded",
      amount = p.amount, amount_refunded = 0, currency = p.currency, customer = p.customer,
      source = p.source, description = p.description, metadata = p.metadata,
      created = floor(self.clock()) })
    return copy(c)
  end)
end

function Stub:refund(id, p)
  return self.refunds:once(p.idempotency_key, { id = id, amount = p.amount }, function()
    local c = self.charges:get(id)
    if not c then return nil, errors.new("payment", "not_found", "no charge has this id") end
    local amount = p.amount or (c.amount - c.amount_refunded)
    if amount <= 0 or c.amount_refunded + amount > c.amount then
      return nil, errors.new("payment", "invalid", "the refund is more than what is left of the charge")
    end
    c.amount_refunded = c.amount_refunded + amount
    if c.amount_refunded == c.amount then c.status = "refunded" end
    return { id = self.refunds:id(), object = "refund", charge = id, amount = amount,
      status = "succeeded", created = floor(self.clock()) }
  end)
end

function Stub:get(id)
  local c = self.charges:get(id)
  return c and copy(c)
end

function M.new(opts)
  return setmetatable({ charges = ledger.new("ch", "payment"), refunds = ledger.new("re", "payment"),
    clock = opts and opts.clock or os.time }, Stub)
end

function M.open() return M.new() end

return M
