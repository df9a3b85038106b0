-- Job handlers. Generated once by `zever gen`; yours now: it is never overwritten.
-- Each is function(args, job): args are the job's JSON arguments, job is
-- { id, name, queue, attempt }. A raise fails the attempt (retried per the schema's retry:).

local M = {}

-- SendDigest()  queue digests  (dsl/testdata/tasks.zen:33)
M["SendDigest"] = function(args, job) -- luacheck: no unused args
  error("job SendDigest is not written yet")
end

-- SendReminder(task_id: uuid)  queue reminders  (dsl/testdata/tasks.zen:22)
M["SendReminder"] = function(args, job) -- luacheck: no unused args
  error("job SendReminder is not written yet")
end

return M
