-- Job handlers. Generated once by `zever gen`; yours now: it is never overwritten.
-- Each is function(args, job): args are the job's JSON arguments, job is
-- { id, name, queue, attempt }. A raise fails the attempt (retried per the schema's retry:).

local M = {}

-- GenerateDailyReport()  queue reports  (dsl/testdata/go_reference.zen:80)
M["GenerateDailyReport"] = function(args, job) -- luacheck: no unused args
  error("job GenerateDailyReport is not written yet")
end

-- SendWelcomeEmail(user_id: string)  queue default  (dsl/testdata/go_reference.zen:75)
M["SendWelcomeEmail"] = function(args, job) -- luacheck: no unused args
  error("job SendWelcomeEmail is not written yet")
end

return M
