-- adapters.analytics.log: the zero-infrastructure analytics sink: each call is one JSON line in
-- analytics.log_file (stderr when empty), in the shape of Segment's tracking API:
--
--   {"type":"track","event":"Signed Up","user_id":"42","properties":{...},"time":"...","id":"..."}
--   {"type":"identify","user_id":"42","traits":{...},"time":"...","id":"..."}
--
--   impl:record(e) -> true | nil, err     e: the front-end's checked table
--   log.open(section) -> impl | nil, err  (the adapter contract)

return require("adapters.jsonl").adapter("analytics", "record")
