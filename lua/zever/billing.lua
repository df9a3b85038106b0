-- zever.billing: the front-end of the billing battery (app.billing): subscriptions to plans,
-- with idempotency keys, and the provider's signed webhooks.
--
--   local billing = require("zever.billing").new{ webhook_secret = "whsec_..." }   -- stub
--   billing:subscribe{ customer = "cus_1", plan = "pro_monthly", trial_days = 14,
--                      metadata = {...}, idempotency_key = "signup-42" }
--     -> subscription { id, status, plan, customer, current_period_end, ... } | nil, err
--   billing:cancel(id[, { at_period_end = true }]) -> subscription | nil, err ("not_found")
--   billing:get(id)                     -> subscription | nil, err ("not_found")
--   billing:verify_webhook(body, header[, opts]) -> event | nil, err   (zever.payment's rules)
--
-- Adapters: stub (default). billing.wrap(impl): impl:subscribe(p), impl:cancel(id, p),
-- impl:get(id).

local battery = require "zever.battery"
local payment = require "zever.payment"

local type, error = type, error

local M = {}

local Billing = battery.define("billing", "billing is closed")
M.error = Billing.error

function Billing:subscribe(p)
  if type(p) ~= "table" then error("billing:subscribe: expects a table", 2) end
  if type(p.customer) ~= "string" or p.customer == "" then
    error("billing:subscribe: customer must be a non-empty string", 2)
  end
  if type(p.plan) ~= "string" or p.plan == "" then
    error("billing:subscribe: plan must be a non-empty string", 2)
  end
  local trial = p.trial_days
  if trial ~= nil and (type(trial) ~= "number" or trial % 1 ~= 0 or trial < 0) then
    error("billing:subscribe: trial_days must be a whole number >= 0", 2)
  end
  local k = p.idempotency_key
  if k ~= nil and (type(k) ~= "string" or k == "" or #k > 255) then
    error("billing:subscribe: idempotency_key must be a string of 1..255 bytes", 2)
  end
  battery.opt_table(p.metadata, "billing:subscribe", "metadata")
  if self.closed then return nil, Billing.CLOSED end
  return self.impl:subscribe({ customer = p.customer, plan = p.plan, trial_days = p.trial_days,
    metadata = p.metadata, idempotency_key = k })
end

function Billing:cancel(id, opts)
  if type(id) ~= "string" then error("billing:cancel: id must be a string", 2) end
  battery.opt_table(opts, "billing:cancel", "opts")
  if self.closed then return nil, Billing.CLOSED end
  return self.impl:cancel(id, { at_period_end = opts and opts.at_period_end == true })
end

function Billing:get(id)
  if type(id) ~= "string" then error("billing:get: id must be a string", 2) end
  if self.closed then return nil, Billing.CLOSED end
  local s = self.impl:get(id)
  if not s then return nil, Billing.error("not_found", "no subscription has this id") end
  return s
end

function Billing:verify_webhook(body, header, opts)
  return payment.verify_event("billing", self.webhook_secret, body, header, opts)
end

function M.wrap(impl, section)
  if type(impl) ~= "table" or type(impl.subscribe) ~= "function" then
    error("billing.wrap: expects an adapter object with subscribe", 2)
  end
  return battery.object(Billing, impl, { webhook_secret = section and section.webhook_secret })
end

function M.new(opts)
  return battery.default(M.wrap, "adapters.billing.stub", "billing.new", opts)
end

return M
