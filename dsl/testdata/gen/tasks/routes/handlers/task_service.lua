-- Handlers of service TaskService (dsl/testdata/tasks.zen:13).
-- Generated once by `zever gen`; yours now: it is never overwritten. Each function gets the
-- decoded, validated input and ctx = { app, req, res, principal, page }, and returns the
-- output table, or nil and { code = "not_found", message = "..." } (the code picks the
-- HTTP status; see docs/zen-backends.md).

local M = {}

-- POST /v1/tasks  CreateTask(title: string, priority: Priority) -> Task
function M.CreateTask(input, ctx) -- luacheck: no unused args
  return nil, { code = "unimplemented", message = "TaskService.CreateTask is not written yet" }
end

-- GET /v1/users/{user_id}/tasks  ListTasks(user_id: uuid) -> Task
function M.ListTasks(input, ctx) -- luacheck: no unused args
  return nil, { code = "unimplemented", message = "TaskService.ListTasks is not written yet" }
end

return M
