-- adapters.secrets.file: one file per secret in a folder (secrets.dir, default "secrets" next
-- to the app; /run/secrets is Docker's and Kubernetes' convention), the file's content the
-- value (one trailing newline removed).
--
--   impl:get(name) -> value | nil | nil, err
--   file.open(section) -> impl (the adapter contract)
--
-- A file that group or others may read or write (mode & 077), or that another user owns (root
-- may own it), is refused: get returns nil, err ("insecure", naming the file and its mode, never
-- its content) rather than a value anyone on the machine could have read or planted. The mode
-- comes from stat(2) in C (host/secrets/). A name is letters, digits, "_", "-" and "." (not
-- starting with "."), so it never leaves the folder; another name is "invalid".

local ffi = require "ffi"
local errors = require "zever.errors"
local file = require "zever.file"

local setmetatable, format, find, sub, tonumber, type, error, pcall = setmetatable, string.format,
  string.find, string.sub, tonumber, type, error, pcall

local M = {}

require "zever.cdef.secrets"

local C = ffi.C
local stat
do
  local ok = pcall(function() return C.zv_secrets_stat end)
  if ok then
    local out = ffi.new("uint32_t[3]")
    stat = function(path)
      local rc = C.zv_secrets_stat(path, out, out + 1, out + 2)
      if rc ~= 0 then return nil end
      return tonumber(out[0]), tonumber(out[1]), tonumber(out[2])
    end
  else
    stat = require("zever.secrets_core").stat
  end
end
M.stat = stat

local File = {}
File.__index = File

function File:get(name)
  if not find(name, "^[%w_%-][%w_%-.]*$") then
    return nil, errors.new("secrets", "invalid", format("secrets: %q is not a secret name", name))
  end
  local path = self.dir .. "/" .. name
  local mode, uid, euid = stat(path)
  if not mode then return nil end
  if mode % 64 ~= 0 then          -- mode & 077: group or other bits set
    return nil, errors.new("secrets", "insecure", format(
      "secrets: %s is readable or writable by group or others (mode %o): chmod 600 it", path,
      mode % 4096))
  end
  if uid ~= euid and uid ~= 0 then
    return nil, errors.new("secrets", "insecure", format(
      "secrets: %s belongs to user %d, not to this process (%d)", path, uid, euid))
  end
  local v = file.read(path)
  if v == nil then return nil end
  if sub(v, -1) == "\n" then v = sub(v, 1, -2) end
  if sub(v, -1) == "\r" then v = sub(v, 1, -2) end
  return v
end

function M.new(opts)
  local dir = opts and opts.dir
  if type(dir) ~= "string" or dir == "" then error("secrets file: dir must be a folder", 2) end
  return setmetatable({ dir = dir }, File)
end

function M.open(section)
  return M.new{ dir = section.dir }
end

return M
