-- adapters.trace.stdout: each finished span as one JSON line (zever.trace's record: name,
-- kind, trace_id, span_id, parent_id, service, status, message, attributes, start and end in
-- Unix nanoseconds as decimal text), on stdout or appended to section.file.
--
--   stdout.open(section) -> impl ;  impl:export(span) ;  impl:flush() ;  impl:close()

local json = require "zever.json"
local errors = require "zever.errors"

local M = {}

local Impl = {}
Impl.__index = Impl

function Impl:export(span)
  local rec = require("zever.trace").record(span)
  rec.attributes = json.object(rec.attributes)
  self.out:write(json.encode(rec), "\n")
  self.exported = self.exported + 1
end

function Impl:flush()
  self.out:flush()
  return true
end

function Impl:stats()
  return { exported = self.exported }
end

function Impl:close()
  self.out:flush()
  if self.own then self.out:close() end
  return true
end

function M.open(section)
  section = section or {}
  local file = section.file
  if file ~= nil and file ~= "" then
    local f, err = io.open(file, "ab")
    if not f then return nil, errors.new("trace", "invalid", "trace: cannot open file: " .. err) end
    f:setvbuf("line")
    return setmetatable({ out = f, own = true, exported = 0 }, Impl)
  end
  return setmetatable({ out = section.stream or io.stdout, exported = 0 }, Impl)
end

return M
