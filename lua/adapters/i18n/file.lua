-- adapters.i18n.file: translations from the app's locales/ folder (i18n.dir), Rails' layout:
-- every *.yaml, *.yml or *.json file in it maps locales to nested keys, any number of files per
-- locale (locales/en.yaml, locales/users.en.yaml, ...).
--
--   locales/en.yaml:  en:
--                       hello: "Hello %{name}"
--                       inbox: { one: "%{count} message", other: "%{count} messages" }
--
--   local impl, err = file.new{ dir = "/app/locales", default_locale = "en" }
--   impl.catalog          the compiled catalogue (adapters.i18n.catalog)
--   impl:reload()         -> true | nil, err    reads the folder again (a failure keeps the old)
--   impl:stats()          -> { locales, files }
--   file.open(section)    -> impl | nil, err    (the adapter contract)
--
-- A missing folder is no translations (every key is missing: the zero-infrastructure default);
-- a file that does not parse, a key defined twice, a value that is not text: "invalid", with the
-- file named, when the app starts.

local errors = require "zever.errors"
local file = require "zever.file"
local read = require "zever.config.read"
local assets = require "zever.assets"
local catalog = require "adapters.i18n.catalog"

local setmetatable, tostring, ipairs, sort, match = setmetatable, tostring, ipairs, table.sort,
  string.match

local M = {}

local File = {}
File.__index = File

local function fail(msg)
  return nil, errors.new("i18n", "invalid", "i18n: " .. msg)
end

local function load(dir, default)
  local trees = {}
  local names = {}
  -- zever.assets: from a bundle, the locales are the bundle's (file.read follows it too).
  local listing = dir ~= "" and assets.listdir(dir) or nil
  for _, name in ipairs(listing or {}) do
    if match(name, "%.ya?ml$") or match(name, "%.json$") then names[#names + 1] = name end
  end
  sort(names)
  for _, name in ipairs(names) do
    local path = dir .. "/" .. name
    local src = file.read(path)
    if src == nil then return fail("cannot read " .. path) end
    local tree, err
    if match(name, "%.json$") then tree, err = read.json(src, path)
    else tree, err = read.yaml(src, path) end
    if tree == nil then
      local where = path .. (err and err.line and (":" .. err.line) or "")
      return fail(where .. ": " .. tostring(err and err.message or err))
    end
    trees[#trees + 1] = { tree = tree, where = path }
  end
  local cat, cerr = catalog.compile(trees, default)
  if not cat then return fail(cerr) end
  return cat, #names
end

function File:reload()
  local cat, n = load(self.dir, self.default)
  if not cat then return nil, n end
  self.catalog, self.files = cat, n
  return true
end

function File:stats()
  return { locales = #self.catalog.locales, files = self.files }
end

function M.new(opts)
  local impl = setmetatable({ dir = opts.dir or "", default = opts.default_locale or "en" }, File)
  local ok, err = impl:reload()
  if not ok then return nil, err end
  return impl
end

function M.open(section)
  return M.new{ dir = section.dir, default_locale = section.default_locale }
end

return M
