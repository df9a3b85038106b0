-- adapters.analytics.log: the zero-infrastructure analytics sink: each call is one JSON line in
-- analytics.log_file (stderr when empty), in the shape of Segment's tracking API:
--
--   {"type":"track","event":"Signed Up","user_id":"42","properties":{...},"time":"...","id":"..."}
--   {"type":"identify","user_id":"42","traits":{...},"time":"...","id":"..."}
--
--   impl:record(e) -> true | nil, err     e: the front-end's checked table
--   log.open(section) -> impl | nil, err  (the adapter contract)

local jsonl = require "adapters.jsonl"

local setmetatable = setmetatable

local M = {}

local Log = {}
Log.__index = Log

function Log:record(e)
  return self.out:write(e)
end

function Log:close()
  return self.out:close()
end

function M.new(opts)
  local out, err = jsonl.open(opts and opts.log_file, "analytics")
  if not out then return nil, err end
  return setmetatable({ out = out }, Log)
end

function M.open(section)
  return M.new{ log_file = section.log_file }
end

return M
