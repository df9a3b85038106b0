-- Handlers of service UserService (dsl/testdata/go_reference.zen:50).
-- Generated once by `zever gen`; yours now: it is never overwritten. Each function gets the
-- decoded, validated input and ctx = { app, req, res, principal, page }, and returns the
-- output table, or nil and { code = "not_found", message = "..." } (the code picks the
-- HTTP status; see docs/zen-backends.md).

local M = {}

-- GET /v1/users/{id}  GetUser(id: uuid) -> User
function M.GetUser(input, ctx) -- luacheck: no unused args
  return nil, { code = "unimplemented", message = "UserService.GetUser is not written yet" }
end

-- POST /v1/users  CreateUser(email: string) -> User
function M.CreateUser(input, ctx) -- luacheck: no unused args
  return nil, { code = "unimplemented", message = "UserService.CreateUser is not written yet" }
end

-- GET /v1/orders  ListOrders(user_id: uuid) -> Order
function M.ListOrders(input, ctx) -- luacheck: no unused args
  return nil, { code = "unimplemented", message = "UserService.ListOrders is not written yet" }
end

-- GET /v1/summaries  Summaries() -> PostSummary
function M.Summaries(input, ctx) -- luacheck: no unused args
  return nil, { code = "unimplemented", message = "UserService.Summaries is not written yet" }
end

return M
