-- adapters.notification.log: the zero-infrastructure notifier: each notification is one JSON
-- line in notification.log_file (stderr when empty), like the log mailer. It delivers nothing.
--
--   {"time":"2026-12-02T01:20:00Z","id":"...","channel":"sms","to":"user:42","title":"...",
--    "body":"...","data":{...}}
--
--   impl:send(n) -> true | nil, err      n: the front-end's checked table (with id and time)
--   log.open(section) -> impl | nil, err (the adapter contract)

return require("adapters.jsonl").adapter("notification", "send")
