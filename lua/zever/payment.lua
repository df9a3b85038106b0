-- zever.payment: the front-end of the payment battery (app.payment): charges and refunds with
-- idempotency keys, and the verification of the provider's signed webhooks.
--
--   local pay = payment.new{ webhook_secret = "whsec_..." }             -- the stub adapter
--   pay:charge{ amount = 1999, currency = "eur", source = "tok_visa", customer = "cus_1",
--               description = "...", metadata = {...}, idempotency_key = "order-17" }
--     -> charge { id, status, amount, currency, ... } | nil, err ("declined", "key_mismatch")
--   pay:refund(charge_id[, { amount = 500, idempotency_key = "..." }]) -> refund | nil, err
--   pay:get(charge_id)                   -> charge | nil, err ("not_found")
--   pay:verify_webhook(body, header[, { tolerance = 300, now = s }]) -> event | nil, err
--
-- Amounts are whole numbers of the currency's minor unit (cents), > 0; currency three letters
-- (lower-cased). An idempotency key (at most 255 bytes) replays the first result for the same
-- request, and a reuse with other parameters is "key_mismatch" (Stripe's contract).
-- verify_webhook checks a Stripe-style signature header ("t=<unix>,v1=<hex HMAC-SHA256 of
-- t.body>") with payment.webhook_secret through zever.webhook.verify (constant time, several
-- v1 values and secrets for rotation, replay window `tolerance` seconds) and returns the body's
-- JSON; "invalid" or "expired" else. Adapters: stub (default). payment.wrap(impl):
-- impl:charge(p), impl:refund(id, p), impl:get(id).

local battery = require "zever.battery"
local webhook = require "zever.webhook"
local json = require "zever.json"

local type, error, tostring, lower, find = type, error, tostring, string.lower, string.find

local M = {}

local Payments = battery.define("payment", "the payment provider is closed")
M.error = Payments.error

local function key_of(k, fname)
  if k == nil then return nil end
  if type(k) ~= "string" or k == "" or #k > 255 then
    error(fname .. ": idempotency_key must be a string of 1..255 bytes", 3)
  end
  return k
end

function Payments:charge(p)
  if type(p) ~= "table" then error("payment:charge: expects a table", 2) end
  if type(p.amount) ~= "number" or p.amount % 1 ~= 0 or p.amount <= 0 then
    error("payment:charge: amount must be a positive whole number of minor units", 2)
  end
  if type(p.currency) ~= "string" or not find(p.currency, "^%a%a%a$") then
    error("payment:charge: currency must be a three-letter code", 2)
  end
  battery.opt_table(p.metadata, "payment:charge", "metadata")
  local req = { amount = p.amount, currency = lower(p.currency), customer = p.customer,
    source = p.source, description = p.description, metadata = p.metadata,
    idempotency_key = key_of(p.idempotency_key, "payment:charge") }
  if self.closed then return nil, Payments.CLOSED end
  return self.impl:charge(req)
end

function Payments:refund(id, p)
  if type(id) ~= "string" then error("payment:refund: id must be a string", 2) end
  battery.opt_table(p, "payment:refund", "opts")
  p = p or {}
  if p.amount ~= nil and (type(p.amount) ~= "number" or p.amount % 1 ~= 0 or p.amount <= 0) then
    error("payment:refund: amount must be a positive whole number", 2)
  end
  if self.closed then return nil, Payments.CLOSED end
  return self.impl:refund(id, { amount = p.amount,
    idempotency_key = key_of(p.idempotency_key, "payment:refund") })
end

function Payments:get(id)
  if type(id) ~= "string" then error("payment:get: id must be a string", 2) end
  if self.closed then return nil, Payments.CLOSED end
  local c = self.impl:get(id)
  if not c then return nil, Payments.error("not_found", "no charge has this id") end
  return c
end

-- Shared with zever.billing: the signed event of a webhook request, decoded.
function M.verify_event(battery_name, secret, body, header, opts)
  if type(body) ~= "string" then error(battery_name .. ":verify_webhook: body must be a string", 3) end
  if secret == nil or secret == "" then
    return nil, require("zever.errors").new(battery_name, "invalid",
      battery_name .. ": no webhook_secret is configured")
  end
  if type(header) ~= "string" then
    return nil, require("zever.errors").new(battery_name, "invalid", "the signature header is missing")
  end
  local ok, err = webhook.verify(secret, body, header, opts)
  if not ok then return nil, err end
  local event, jerr = json.decode(body)
  if type(event) ~= "table" then
    return nil, require("zever.errors").new(battery_name, "invalid", "the body is not a JSON object: " ..
      tostring(jerr))
  end
  return event
end

function Payments:verify_webhook(body, header, opts)
  return M.verify_event("payment", self.webhook_secret, body, header, opts)
end

function M.wrap(impl, section)
  if type(impl) ~= "table" or type(impl.charge) ~= "function" then
    error("payment.wrap: expects an adapter object with charge", 2)
  end
  return battery.object(Payments, impl, { webhook_secret = section and section.webhook_secret })
end

-- The stub adapter: opts.webhook_secret, opts.clock.
function M.new(opts)
  return battery.default(M.wrap, "adapters.payment.stub", "payment.new", opts)
end

return M
