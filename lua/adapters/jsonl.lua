-- adapters.jsonl: one JSON object per line, appended to a file or written to stderr: what the
-- log adapters of notification and analytics write (like the log mailer).
--
--   local out, err = jsonl.open(path)     path "" or nil: stderr
--   out:write(tbl)  -> true | nil, err     one line, one write: lines of several workers do not
--                                          interleave (O_APPEND, unbuffered)
--   out:close()
--   jsonl.adapter(battery, verb) -> an adapter module { new(opts), open(section) } whose
--                                   impl:<verb>(t) writes t as one line to opts.log_file
--                                   (section.log_file): the log adapters of notification
--                                   ("send") and analytics ("record")
--
-- It must not know any battery beyond the name it is given.

local json = require "zever.json"
local errors = require "zever.errors"

local open, stderr, setmetatable, tostring = io.open, io.stderr, setmetatable, tostring

local M = {}

local Out = {}
Out.__index = Out

function Out:write(t)
  local line = json.encode(t) .. "\n"
  local ok, err = self.f:write(line)
  if not ok then
    return nil, errors.new(self.battery, "unavailable", self.battery .. ": " .. tostring(err))
  end
  return true
end

function Out:close()
  if self.f ~= stderr and self.f then self.f:close() end
  self.f = nil
  return true
end

function M.open(path, battery)
  battery = battery or "jsonl"
  if path == nil or path == "" then return setmetatable({ f = stderr, battery = battery }, Out) end
  local f, err = open(path, "a")
  if not f then
    return nil, errors.new(battery, "unavailable",
      battery .. ": cannot open " .. path .. ": " .. tostring(err))
  end
  f:setvbuf("no")
  return setmetatable({ f = f, battery = battery }, Out)
end

function M.adapter(battery, verb)
  local Log = {}
  Log.__index = Log
  Log[verb] = function(self, t) return self.out:write(t) end
  function Log:close() return self.out:close() end
  local A = {}
  function A.new(opts)
    local out, err = M.open(opts and opts.log_file, battery)
    if not out then return nil, err end
    return setmetatable({ out = out }, Log)
  end
  function A.open(section)
    return A.new{ log_file = section.log_file }
  end
  return A
end

return M
