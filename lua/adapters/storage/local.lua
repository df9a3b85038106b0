-- adapters.storage.local: objects as files under a root folder (storage.root, default
-- "storage" next to the app). Keys are checked by the front-end (zever.storage) before they
-- reach here: relative paths without "..", so a key never leaves the root.
--
--   impl:put(key, data)           -> size            atomic: a temporary file renamed over
--   impl:get(key[, first, last])  -> bytes | nil     bytes first..last (0-based, inclusive)
--   impl:head(key, n)             -> the first n bytes | nil   (sniffing, image headers)
--   impl:stat(key)                -> { size, modified } | nil
--   impl:delete(key)              -> true | false (missing)
--   impl:move(from, to)           -> true | false (from missing)
--   local.open(section)           -> impl (the adapter contract)
--
-- Folders, the root included, are made on put and move (mkdir -p); empty ones are left
-- behind on delete. A write that fails (disk full, permissions) raises nothing: put returns
-- nil, err ("unavailable") and the old object, when there was one, is untouched.

local ffi = require "ffi"
local errors = require "zever.errors"
local sys = require "zever.sys"
local crypto = require "zever.crypto"

require "zever.cdef.libc"

local open, rename, remove, setmetatable, match, type, error, tostring = io.open, os.rename,
  os.remove, setmetatable, string.match, type, error, tostring

local M = {}

local Local = {}
Local.__index = Local

local function unavailable(msg) return nil, errors.new("storage", "unavailable", "storage: " .. msg) end

local function mkdir_p(dir)
  if sys.isdir(dir) then return true end
  local parent = match(dir, "^(.*)/[^/]+$")
  if parent and parent ~= "" then mkdir_p(parent) end
  ffi.C.mkdir(dir, 493)   -- 0755; a concurrent mkdir's EEXIST is fine
  return sys.isdir(dir)
end

function Local:path(key) return self.root .. "/" .. key end

function Local:put(key, data)
  local path = self:path(key)
  local dir = match(path, "^(.*)/[^/]+$")
  if not mkdir_p(dir) then return unavailable("cannot create the folder of " .. key) end
  local tmp = dir .. "/.tmp-" .. crypto.b64url(crypto.random_bytes(9))
  local f = open(tmp, "wb")
  if not f then return unavailable("cannot write " .. key) end
  local ok = f:write(data)
  ok = f:close() and ok
  if not ok then
    remove(tmp)
    return unavailable("writing " .. key .. " failed")
  end
  local rok, rerr = rename(tmp, path)
  if not rok then
    remove(tmp)
    return unavailable("cannot rename into " .. key .. ": " .. tostring(rerr))
  end
  return #data
end

function Local:get(key, first, last)
  local f = open(self:path(key), "rb")
  if not f then return nil end
  if first == nil then
    local s = f:read("*a")
    f:close()
    return s
  end
  f:seek("set", first)
  local s = f:read(last - first + 1) or ""
  f:close()
  return s
end

function Local:head(key, n)
  local f = open(self:path(key), "rb")
  if not f then return nil end
  local s = f:read(n) or ""
  f:close()
  return s
end

function Local:stat(key)
  local path = self:path(key)
  if sys.isdir(path) then return nil end
  local f = open(path, "rb")
  if not f then return nil end
  local size = f:seek("end")
  f:close()
  return { size = size, modified = sys.mtime(path) }
end

function Local:delete(key)
  local path = self:path(key)
  if sys.isdir(path) then return false end
  return remove(path) ~= nil
end

function Local:move(from, to)
  local src = self:path(from)
  if not self:stat(from) then return false end
  local dst = self:path(to)
  if not mkdir_p(match(dst, "^(.*)/[^/]+$")) then return unavailable("cannot create the folder of " .. to) end
  local ok, err = rename(src, dst)
  if not ok then return unavailable("cannot move " .. from .. ": " .. tostring(err)) end
  return true
end

function M.new(opts)
  local root = opts and opts.root
  if type(root) ~= "string" or root == "" then error("storage local: root must be a folder", 2) end
  -- The root is made by the first put (zever doctor resolving the battery creates nothing).
  return setmetatable({ root = (root:gsub("/+$", "")) }, Local)
end

function M.open(section)
  return M.new{ root = section.root }
end

return M
