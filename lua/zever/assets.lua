-- zever.assets: the app's own files (zever.yaml, migrations, templates, locales, data the app
-- reads at run time) from the bundle when the process runs from one (`zever bundle`,
-- docs/deploy.md), from disk otherwise. In a bundle the app folder is the working directory
-- (or -C DIR): a path inside it names the bundle's copy when the bundle has one, and the disk
-- otherwise (the SQLite file, logs and uploads stay on disk, next to where the service runs).
--
--   assets.bundled             -> true in a bundle
--   assets.open(path)          -> a read-only file (read, lines, seek, close) | nil, message
--   assets.read(path)          -> the file's bytes | nil when it is missing or unreadable
--   assets.loadfile(path)      -> chunk | nil, message (a bundled .lua is precompiled)
--   assets.listdir(path)       -> sorted names (files and folders) | nil, message
--   assets.exists(path)        -> boolean
--   assets.root([dir])         -> the app folder a bundle's files stand for; dir sets it
--                                 (zever.cli.app does, for the app a command resolved)
--   assets.name(path)          -> "app/<path in the app>" when path lies in the app folder
--   assets.module(name)        -> true when require(name) would find a Lua file (the bundle's
--                                 searcher order, or package.path outside a bundle)
--
-- It must not write: the bundle is read-only, and disk writes belong to their batteries.

local bundle = require "zever.bundle"

local open, type, sub, find, format = io.open, type, string.sub, string.find, string.format

local M = {}

M.bundled = bundle.active

-- The root lives in the host (zever.bundle.root), shared by every worker thread's state; the
-- working directory until a command resolves its app folder.
function M.root(dir)
  if dir ~= nil then
    if type(dir) ~= "string" then error("assets.root: want a folder", 2) end
    return bundle.root(require("zever.config.paths").absolute(dir))
  end
  return bundle.root() or require("zever.config.paths").cwd()
end

function M.name(path)
  if not M.bundled then return nil end
  if type(path) ~= "string" then error("assets: want a path (string)", 2) end
  local paths = require "zever.config.paths"
  local root = M.root() or "."
  local abs = paths.absolute(path)
  if abs == root then return "app" end
  if sub(abs, 1, #root + 1) ~= root .. "/" then return nil end
  return "app/" .. sub(abs, #root + 2)
end

local function disk_read(path)
  local f = open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

function M.read(path)
  local name = M.name(path)
  if name then
    local s = bundle.read(name)
    if s then return s end
  end
  return disk_read(path)
end

function M.exists(path)
  local name = M.name(path)
  if name and (bundle.read(name) or #bundle.list(name .. "/") > 0) then return true end
  local f = open(path, "rb")
  if f then f:close() return true end
  return require("zever.sys").isdir(path)
end

function M.loadfile(path)
  local name = M.name(path)
  if name and #bundle.list(name) > 0 then
    local chunk, err = bundle.load(name)
    if chunk or err ~= format("cannot open %s in the bundle", name) then return chunk, err end
  end
  return loadfile(path)
end

function M.listdir(path)
  local name = M.name(path)
  if name then
    local seen, out = {}, {}
    local prefix = name .. "/"
    for _, n in ipairs(bundle.list(prefix)) do
      local first = sub(n, #prefix + 1):match("^[^/]+")
      if first and not seen[first] then
        seen[first] = true
        out[#out + 1] = first
      end
    end
    if #out > 0 then return out end
  end
  return require("zever.sys").listdir(path)
end

local SEARCH = { "lua/%s.lua", "lua/%s/init.lua", "%s.lua", "%s/init.lua", "app/%s.lua",
  "app/%s/init.lua" } -- host/runtime/bundle_state.c's order

function M.module(name)
  if type(name) ~= "string" then error("assets.module: want a module name", 2) end
  if not M.bundled then return package.searchpath(name, package.path) ~= nil end
  local rel = name:gsub("%.", "/")
  for _, p in ipairs(SEARCH) do
    if bundle.has(format(p, rel)) then return true end
  end
  return false
end

-- A read-only file over a string: what io.open gives, for the calls readers make.
local Memfile = {}
Memfile.__index = Memfile

function Memfile:read(what)
  what = what or "*l"
  local s, pos = self.s, self.pos
  if pos > #s and what ~= "*a" then return nil end
  if what == "*a" or what == "a" then
    self.pos = #s + 1
    return sub(s, pos)
  elseif what == "*l" or what == "l" or what == "*L" or what == "L" then
    local nl = find(s, "\n", pos, true)
    local stop = nl or #s
    self.pos = stop + 1
    if (what == "*L" or what == "L") or not nl then return sub(s, pos, stop) end
    return sub(s, pos, stop - 1)
  elseif type(what) == "number" then
    self.pos = pos + what
    return sub(s, pos, pos + what - 1)
  end
  error("assets: read format " .. tostring(what) .. " is not supported", 2)
end

function Memfile:lines()
  return function() return self:read("*l") end
end

function Memfile:seek(whence, offset)
  whence, offset = whence or "cur", offset or 0
  local base = whence == "set" and 0 or whence == "end" and #self.s or self.pos - 1
  self.pos = base + offset + 1
  return base + offset
end

function Memfile:close() self.s = "" return true end

function M.open(path)
  local name = M.name(path)
  if name then
    local s = bundle.read(name)
    if s then return setmetatable({ s = s, pos = 1 }, Memfile) end
  end
  return open(path, "rb")
end

return M
