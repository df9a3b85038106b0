-- Handlers of service BookingService (dsl/testdata/go_forms.zen:39).
-- Generated once by `zever gen`; yours now: it is never overwritten. Each function gets the
-- decoded, validated input and ctx = { app, req, res, principal, page }, and returns the
-- output table, or nil and { code = "not_found", message = "..." } (the code picks the
-- HTTP status; see docs/zen-backends.md).

local M = {}

-- POST /v1/bookings/{id}/cancel  CancelBooking(id: uuid) -> Booking
function M.CancelBooking(input, ctx) -- luacheck: no unused args
  return nil, { code = "unimplemented", message = "BookingService.CancelBooking is not written yet" }
end

-- POST /v1/archived-bookings/{booking_id}  ArchiveBooking(booking_id: uuid) -> Booking
function M.ArchiveBooking(input, ctx) -- luacheck: no unused args
  return nil, { code = "unimplemented", message = "BookingService.ArchiveBooking is not written yet" }
end

return M
