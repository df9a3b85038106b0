-- adapters.notification.log: the zero-infrastructure notifier: each notification is one JSON
-- line in notification.log_file (stderr when empty), like the log mailer. It delivers nothing.
--
--   {"time":"2026-12-02T01:20:00Z","id":"...","channel":"sms","to":"user:42","title":"...",
--    "body":"...","data":{...}}
--
--   impl:send(n) -> true | nil, err      n: the front-end's checked table (with id and time)
--   log.open(section) -> impl | nil, err (the adapter contract)

local jsonl = require "adapters.jsonl"

local setmetatable = setmetatable

local M = {}

local Log = {}
Log.__index = Log

function Log:send(n)
  return self.out:write(n)
end

function Log:close()
  return self.out:close()
end

function M.new(opts)
  local out, err = jsonl.open(opts and opts.log_file, "notification")
  if not out then return nil, err end
  return setmetatable({ out = out }, Log)
end

function M.open(section)
  return M.new{ log_file = section.log_file }
end

return M
