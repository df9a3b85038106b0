-- spec.support.process: runs a shell command and returns what it printed and its exit code.
-- Specs use it to drive the real zever binary (zever.sys.exe() is the binary running the specs,
-- so `make asan` checks the sanitized binary end to end).

local sys = require "zever.sys"

local M = {}

local function read_all(path)
  local f = io.open(path, "rb")
  if not f then return "" end
  local s = f:read("*a")
  f:close()
  os.remove(path)
  return s
end

-- Quotes s for /bin/sh.
function M.quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- Runs cmdline under /bin/sh; returns { stdout =, stderr =, code = }.
function M.run(cmdline)
  local err = os.tmpname()
  local p = assert(io.popen("(" .. cmdline .. ") 2>" .. err .. "; echo \"\n__rc=$?\""))
  local out = p:read("*a")
  p:close()
  local body, code = out:match("^(.*)\n__rc=(%d+)\n?$")
  return { stdout = body, stderr = read_all(err), code = tonumber(code) }
end

-- Runs the zever binary with the given arguments (each quoted).
function M.zever(...)
  local parts = { M.quote(sys.exe()) }
  for i = 1, select("#", ...) do parts[#parts + 1] = M.quote((select(i, ...))) end
  return M.run(table.concat(parts, " "))
end

return M
