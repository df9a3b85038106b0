-- adapters.flag.file: flags from a YAML or JSON file (flag.file, FLAG_FILE), reloaded when the
-- file changes. The zero-infrastructure default: without a file every flag is absent and the
-- getters return their fallbacks.
--
--   local impl, err = file.new{ file = "/app/flags.yaml", watch = true }
--   impl.flags                 the compiled flags (adapters.flag.rules), replaced on each reload
--   impl:reload()              -> true | nil, err   reads the file again now
--   impl:stats()               -> { flags, reloads, failed_reloads, file, last_error }
--   impl:close()               stops watching
--   file.open(section)         -> impl | nil, err   (the adapter contract)
--
-- The format is the extension's: .json is JSON, anything else YAML (zever.config.read, which
-- reports file:line). A file that is missing, unreadable or invalid when the adapter opens is
-- an error ("invalid"): the app does not start on flags it cannot read. A reload that fails
-- keeps the flags it had (a half-saved or broken edit loses nothing) and is counted; the next
-- change that fixes the file is taken.
--
-- Watching: the file's folder is watched (zever.loop.watch, inotify), not the file itself, so
-- editors that save by writing a new file and renaming it over the old one are seen too. The
-- watcher reacts on the worker's loop, so each worker of `zever serve` reloads its own copy; a
-- plain script sees changes while it runs the loop. A burst of events (an editor's writes) is
-- one reload 20 ms after the last one.

local errors = require "zever.errors"
local file = require "zever.file"
local loop = require "zever.loop"
local paths = require "zever.config.paths"
local read = require "zever.config.read"
local rules = require "adapters.flag.rules"

local setmetatable, tostring, pairs, match = setmetatable, tostring, pairs, string.match

local M = {}

local File = {}
File.__index = File

local function fail(msg)
  return nil, errors.new("flag", "invalid", msg)
end

local function load(path)
  local src = file.read(path)
  if src == nil then return fail("flag: cannot read " .. path) end
  local tree, err
  if match(path, "%.[jJ][sS][oO][nN]$") then
    tree, err = read.json(src, path)
  else
    tree, err = read.yaml(src, path)
  end
  if tree == nil then
    local where = err and err.file or path
    if err and err.line then where = where .. ":" .. err.line end
    return fail("flag: " .. where .. ": " .. tostring(err and err.message or err))
  end
  local flags, cerr = rules.compile(tree, path)
  if not flags then return fail("flag: " .. cerr) end
  return flags
end

function File:reload()
  if not self.path then return true end
  local flags, err = load(self.path)
  if not flags then
    self.failed_reloads = self.failed_reloads + 1
    self.last_error = err.message
    return nil, err
  end
  self.flags = flags
  self.reloads = self.reloads + 1
  self.last_error = nil
  return true
end

function File:stats()
  local n = 0
  for _ in pairs(self.flags) do n = n + 1 end
  return { flags = n, reloads = self.reloads, failed_reloads = self.failed_reloads,
    file = self.path, last_error = self.last_error }
end

function File:close()
  if self.watcher then self.watcher:stop() end
  if self.timer then self.timer:stop() end
  self.watcher, self.timer = nil, nil
  return true
end

function M.new(opts)
  local path = opts.file
  if path == "" then path = nil end
  local impl = setmetatable({ flags = {}, path = path, reloads = 0, failed_reloads = 0 }, File)
  if not path then return impl end
  local flags, err = load(path)
  if not flags then return nil, err end
  impl.flags = flags
  if opts.watch ~= false then
    local base = match(path, "[^/]*$")
    local timer
    impl.watcher = loop.watch(paths.dirname(path), function(name)
      if name ~= base then return end
      if timer then timer:stop() end
      timer = loop.after(0.02, function() impl:reload() end)
      impl.timer = timer
    end)
  end
  return impl
end

function M.open(section)
  return M.new{ file = section.file, watch = section.watch }
end

return M
