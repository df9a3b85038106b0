-- Handlers of service PaymentService (dsl/testdata/go_forms.zen:29).
-- Generated once by `zever gen`; yours now: it is never overwritten. Each function gets the
-- decoded, validated input and ctx = { app, req, res, principal, page }, and returns the
-- output table, or nil and { code = "not_found", message = "..." } (the code picks the
-- HTTP status; see docs/zen-backends.md).

local M = {}

-- POST /v1/payments/charge  Charge(order_id: uuid) -> Order
function M.Charge(input, ctx) -- luacheck: no unused args
  return nil, { code = "unimplemented", message = "PaymentService.Charge is not written yet" }
end

return M
