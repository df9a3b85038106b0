-- adapters.jsonl: one JSON object per line, appended to a file or written to stderr: what the
-- log adapters of notification and analytics write (like the log mailer).
--
--   local out, err = jsonl.open(path)     path "" or nil: stderr
--   out:write(tbl)  -> true | nil, err     one line, one write: lines of several workers do not
--                                          interleave (O_APPEND, unbuffered)
--   out:close()
--
-- It must not know any battery.

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

return M
