-- zever.i18n: the front-end of the translation battery (app.i18n): messages by key for a
-- locale, %{name} interpolation, CLDR plural rules, locale negotiation from Accept-Language,
-- and missing keys reported in development.
--
--   local i18n = require("zever.i18n").new{ translations = { en = { hi = "Hi %{name}" } } }
--   i18n:t(who, key[, vars])  -> text     who: a locale ("fr", "pt_BR"), a request, or nil
--   i18n:exists(who, key)     -> boolean
--   i18n:locale(req)          -> the request's locale (req.locale when set, else negotiated
--                                from Accept-Language and kept in req.locale)
--   i18n:locales()            -> sorted locale tags with translations
--   i18n:middleware()         -> middleware setting req.locale, Content-Language, Vary
--   i18n:missing()            -> { { locale, key, count }, ... } the keys asked but not found
--   i18n:reload()             -> true | nil, err   (file adapter)
--   i18n.plural(locale, n)    -> the CLDR category ("one", "few", ...) of n in locale
--
-- Lookup: the locale's own key, then its parent's ("pt-br" -> "pt"), then the default
-- locale's (i18n.default_locale, "en"); a locale without translations uses the default's. The
-- catalogue is flattened at load, so a lookup is two table reads. A key found nowhere is
-- missing: t returns the key itself (a page shows "users.title", it does not fail), counts it
-- in missing(), and, when missing is "log" ("auto" in development, ZEVER_ENV=development), logs
-- one warning per locale and key; "raise" raises instead (for specs that want every key).
--
-- A plural message (a mapping with "one", "other", ...) picks its form by vars.count through
-- the locale's CLDR rule ("other" when count is absent or the form is not translated);
-- %{count} is interpolated like any variable. Variables are written with tostring; a variable
-- missing from vars leaves its placeholder in the text. Nothing is escaped here: the template
-- that prints the text escapes it.
--
-- i18n.wrap(impl[, opts]) puts this front-end over an adapter whose impl.catalog is what
-- adapters.i18n.catalog.compile makes (replaced whole on reload). opts.missing: "ignore",
-- "log", "raise"; opts.log: a logger for "log" (zever.log's interface).

local battery = require "zever.battery"
local accept = require "zever.accept"
local catalog = require "adapters.i18n.catalog"

local type, error, tostring, rawget, rawset, pairs, ipairs, floor, concat, sort, sub, find =
  type, error, tostring, rawget, rawset, pairs, ipairs, math.floor, table.concat, table.sort,
  string.sub, string.find
local normalize, parent = catalog.normalize, catalog.parent

local M = {}

M.plural = catalog.plural

local I18n = battery.define("i18n", "the translations are closed")
M.error = I18n.error

local MAX_ALIASES = 256     -- raw locale strings remembered (they may come from requests)
local MAX_MISSING = 1000    -- distinct missing keys counted

-- The catalogue tag serving who (a locale string): itself, a parent, or the default.
local function resolve_tag(cat, who)
  local tag = normalize(who)
  while tag do
    if cat.tables[tag] then return tag end
    tag = parent(tag)
  end
  return cat.default
end

-- The tag for a locale string, remembered per catalogue (bounded: the strings may be hostile).
local function tag_of(self, who)
  local cat = self.impl.catalog
  if cat.tables[who] then return who end
  if self.alias_cat ~= cat or self.aliases_n >= MAX_ALIASES then
    self.aliases, self.aliases_n, self.alias_cat = {}, 0, cat
  end
  local tag = self.aliases[who]
  if tag == nil then
    tag = resolve_tag(cat, who)
    self.aliases[who] = tag
    self.aliases_n = self.aliases_n + 1
  end
  return tag
end

local function negotiate(cat, header)
  if header == nil or header == "" then return cat.default end
  local ranges = accept.tokens(header)
  local offers = { cat.default }
  for _, tag in ipairs(cat.locales) do
    if tag ~= cat.default then offers[#offers + 1] = tag end
  end
  -- RFC 4647 lookup: "pt-BR" also asks for "pt", at the same q (an exact match is more
  -- specific, so it still wins a tie).
  local n = #ranges
  for i = 1, n do
    local r = ranges[i]
    local primary = r.value:match("^[^%-]+")
    if primary ~= r.value then ranges[#ranges + 1] = { value = primary, q = r.q, i = r.i } end
  end
  return accept.best_language(ranges, offers) or cat.default
end

function I18n:locale(req)
  if type(req) ~= "table" then error("i18n:locale: expects a request", 2) end
  local loc = rawget(req, "locale")
  if loc then return loc end
  local header = req.header and req:header("accept-language")
  loc = negotiate(self.impl.catalog, header)
  rawset(req, "locale", loc)
  return loc
end

local function missing(self, tag, key)
  local id = tag .. "\0" .. key
  local m = self.missed
  local n = m[id]
  if n then
    m[id] = n + 1
  elseif self.missed_n < MAX_MISSING then
    m[id] = 1
    self.missed_n = self.missed_n + 1
    if self.report == "log" and self.log then
      self.log:warn("i18n: missing translation", { locale = tag, key = key })
    end
  end
  if self.report == "raise" then
    error("i18n: missing translation " .. tag .. "." .. key, 3)
  end
  return key
end

local function interpolate(self, parts, vars)
  local buf = self.buf
  local n = #parts
  for i = 1, n, 2 do
    buf[i] = parts[i]
    local name = parts[i + 1]
    if name ~= nil then
      local v = vars and vars[name]
      if v == nil then buf[i + 1] = "%{" .. name .. "}"
      elseif type(v) == "string" then buf[i + 1] = v
      else buf[i + 1] = tostring(v) end
    end
  end
  return concat(buf, "", 1, n)
end

local function lookup(self, who, key)
  local cat = self.impl.catalog
  local tag
  if type(who) == "string" then
    tag = tag_of(self, who)
  elseif who == nil then
    tag = cat.default
  elseif type(who) == "table" then
    tag = rawget(who, "locale")
    if tag == nil then tag = self:locale(who) end
    tag = tag_of(self, tag)
  else
    error("i18n:t: who must be a locale, a request or nil", 3)
  end
  return cat.tables[tag][key], tag, cat
end

function I18n:t(who, key, vars)
  if type(key) ~= "string" then error("i18n:t: key must be a string", 2) end
  if vars ~= nil and type(vars) ~= "table" then error("i18n:t: vars must be a table", 2) end
  if self.closed then return key end
  local m, tag, cat = lookup(self, who, key)
  if m == nil then return missing(self, tag, key) end
  if type(m) == "string" then return m end
  if m.plural then
    local n = vars and vars.count
    local form = "other"
    if type(n) == "number" then
      local a = n < 0 and -n or n
      local i = floor(a)
      form = cat.rules[tag](a, i, a == i and 0 or 1)
    end
    m = m[form] or m.other
    if type(m) == "string" then return m end
  end
  return interpolate(self, m, vars)
end

function I18n:exists(who, key)
  if type(key) ~= "string" then error("i18n:exists: key must be a string", 2) end
  if self.closed then return false end
  return (lookup(self, who, key)) ~= nil
end

function I18n:locales()
  local out = {}
  if self.closed then return out end
  for i, tag in ipairs(self.impl.catalog.locales) do out[i] = tag end
  return out
end

function I18n:missing()
  local out = {}
  for id, n in pairs(self.missed) do
    local z = find(id, "\0", 1, true)
    out[#out + 1] = { locale = sub(id, 1, z - 1), key = sub(id, z + 1), count = n }
  end
  sort(out, function(a, b)
    if a.locale ~= b.locale then return a.locale < b.locale end
    return a.key < b.key
  end)
  return out
end

function I18n:middleware()
  return function(req, res, nxt)
    local loc = self:locale(req)
    res:header("content-language", loc)
    res:header("vary", "Accept-Language")
    return nxt()
  end
end

function I18n:reload()
  if self.closed then return nil, I18n.CLOSED end
  if not self.impl.reload then return true end
  return self.impl:reload()
end

local REPORTS = { ignore = true, log = true, raise = true }

function M.wrap(impl, opts)
  if type(impl) ~= "table" or type(impl.catalog) ~= "table" then
    error("i18n.wrap: expects an adapter object with a catalog", 2)
  end
  opts = opts or {}
  local report = opts.missing or "ignore"
  if not REPORTS[report] then error("i18n.wrap: missing must be ignore, log or raise", 2) end
  return battery.object(I18n, impl, { report = report, log = opts.log, buf = {},
    missed = {}, missed_n = 0, aliases = {}, aliases_n = 0, alias_cat = impl.catalog })
end

-- From the config section: missing "auto" is "log" in development, "ignore" elsewhere.
function M.wrap_config(impl, section, ctx)
  local report = section.missing or "auto"
  if report == "auto" then
    report = os.getenv("ZEVER_ENV") == "development" and "log" or "ignore"
  end
  local log
  if report == "log" and ctx then log = ctx:get("log") end
  return M.wrap(impl, { missing = report, log = log })
end

-- A memory catalogue: opts.translations ({ [locale] = nested keys }), opts.default_locale,
-- opts.missing, opts.log.
function M.new(opts)
  return battery.default(M.wrap, "adapters.i18n.memory", "i18n.new", opts)
end

return M
