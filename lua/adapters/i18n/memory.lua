-- adapters.i18n.memory: translations given by the program (specs, an app that builds them).
--
--   local impl = memory.new{ translations = { en = { hello = "Hello %{name}" } },
--                            default_locale = "en" }
--   impl.catalog                   the compiled catalogue (adapters.i18n.catalog)
--   impl:set(tree)                 -> true | nil, message   replaces every translation at once
--   memory.open(section)           -> impl (the adapter contract)
--
-- A tree that does not compile raises in new (a programmer's table) and is refused by set.

local catalog = require "adapters.i18n.catalog"

local error, setmetatable = error, setmetatable

local M = {}

local Memory = {}
Memory.__index = Memory

function Memory:set(tree)
  local cat, err = catalog.compile({ { tree = tree, where = "translations" } }, self.default)
  if not cat then return nil, err end
  self.catalog = cat
  return true
end

function Memory:stats()
  return { locales = #self.catalog.locales }
end

function M.new(opts)
  opts = opts or {}
  local impl = setmetatable({ default = opts.default_locale or "en" }, Memory)
  local ok, err = impl:set(opts.translations or {})
  if not ok then error("i18n memory: " .. err, 2) end
  return impl
end

function M.open(section)
  return M.new{ translations = section.translations, default_locale = section.default_locale }
end

return M
