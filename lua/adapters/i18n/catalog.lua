-- adapters.i18n.catalog: what the i18n adapters share: locale trees turned into the flat,
-- precompiled catalogue zever.i18n reads, and the CLDR plural rules. It must not read files or
-- know the front-end.
--
--   catalog.compile(trees[, default]) -> cat | nil, message
--       trees: { { [locale] = nested mapping of keys to messages }, where = "en.yaml" }, ...
--       cat.tables[locale][key] = message       every locale's table already holds its parents'
--                                               and the default locale's keys (fallbacks)
--       cat.locales                             sorted locale tags ("en", "pt-br")
--       cat.rules[locale]                       its plural rule: fn(n, i, v) -> category
--       cat.default                             the default locale (always in tables)
--   catalog.normalize(tag)  -> "pt-br" for "pt_BR"; nil when tag is not a language tag
--   catalog.parent(tag)     -> "pt" for "pt-br", nil for "pt"
--   catalog.plural(locale, n) -> "zero" | "one" | "two" | "few" | "many" | "other"
--
-- A message is a string, compiled: a string without placeholders stays a string; one with
-- %{name} placeholders becomes { "lit", "name", "lit", ... } (odd: literal text, even: the
-- variable's name); "%%{" is a literal "%{" (any other "%" is plain text). A mapping whose
-- keys are CLDR plural categories (with "other") is a plural message: { plural = true,
-- one = msg, other = msg, ... }. Other nested mappings are key paths joined with ".":
-- en: { users: { title: "Users" } } is the key "users.title". A key of two files or a value
-- that is not text is refused with the file named.
--
-- Plural rules are CLDR 44's cardinal rules (unicode.org/cldr/charts/44/supplemental/
-- language_plural_rules.html) for the operands a Lua number has: n, i (the
-- integer part) and v (0 for a whole number, else 1: "1.0" is not distinguishable from "1").

local type, pairs, ipairs, next, tostring, format, lower, gsub, find, sub, match, sort, concat,
  floor = type, pairs, ipairs, next, tostring, string.format, string.lower, string.gsub,
  string.find, string.sub, string.match, table.sort, table.concat, math.floor
local getmetatable = getmetatable

local M = {}

-- --- plural rules ----------------------------------------------------------------------------

local function other() return "other" end

local function one_if_1(n, _, v)
  if n == 1 and v == 0 then return "one" end
  return "other"
end

-- fr, pt, es, it: "many" for whole millions (1000000, 2000000: "de" in French).
local function millions(i, v)
  return v == 0 and i ~= 0 and i % 1000000 == 0
end

local function slavic(i, v, pl)
  if v ~= 0 then return "other" end
  local m10, m100 = i % 10, i % 100
  if m10 == 1 and m100 ~= 11 and not (pl and i ~= 1) then return "one" end
  if m10 >= 2 and m10 <= 4 and not (m100 >= 12 and m100 <= 14) then return "few" end
  return "many"
end

local RULES = {
  en = one_if_1, de = one_if_1, nl = one_if_1, sv = one_if_1, da = one_if_1, nb = one_if_1,
  fi = one_if_1, el = one_if_1, tr = function(n) return n == 1 and "one" or "other" end,
  it = function(_, i, v)
    if i == 1 and v == 0 then return "one" end
    if millions(i, v) then return "many" end
    return "other"
  end,
  es = function(n, i, v)
    if n == 1 then return "one" end
    if millions(i, v) then return "many" end
    return "other"
  end,
  fr = function(_, i, v)
    if i == 0 or i == 1 then return "one" end
    if millions(i, v) then return "many" end
    return "other"
  end,
  pt = function(_, i, v)
    if i == 0 or i == 1 then return "one" end
    if millions(i, v) then return "many" end
    return "other"
  end,
  ["pt-pt"] = function(_, i, v)
    if i == 1 and v == 0 then return "one" end
    if millions(i, v) then return "many" end
    return "other"
  end,
  ru = function(_, i, v) return slavic(i, v, false) end,
  uk = function(_, i, v) return slavic(i, v, false) end,
  pl = function(_, i, v)
    if i == 1 and v == 0 then return "one" end
    return slavic(i, v, true)
  end,
  cs = function(_, i, v)
    if v ~= 0 then return "many" end
    if i == 1 then return "one" end
    if i >= 2 and i <= 4 then return "few" end
    return "other"
  end,
  ar = function(n)
    if n == 0 then return "zero" end
    if n == 1 then return "one" end
    if n == 2 then return "two" end
    local m = n % 100
    if n % 1 == 0 and m >= 3 and m <= 10 then return "few" end
    if n % 1 == 0 and m >= 11 and m <= 99 then return "many" end
    return "other"
  end,
  ja = other, zh = other, ko = other, vi = other, th = other, id = other,
}
RULES.sk = RULES.cs

M.RULES = RULES

local function rule_of(locale)
  local r = RULES[locale]
  if r then return r end
  local primary = match(locale, "^(%a+)")
  return primary and RULES[primary] or one_if_1
end
M.rule_of = rule_of

function M.plural(locale, n)
  n = n < 0 and -n or n
  local i = floor(n)
  return rule_of(locale)(n, i, n == i and 0 or 1)
end

-- --- tags ------------------------------------------------------------------------------------

function M.normalize(tag)
  if type(tag) ~= "string" then return nil end
  tag = lower(gsub(tag, "_", "-"))
  if not match(tag, "^%a%a%a?%f[^%a]") or find(tag, "[^%w%-]") or #tag > 35 then return nil end
  return tag
end

function M.parent(tag)
  return match(tag, "^(.+)%-[^%-]+$")
end

-- --- messages --------------------------------------------------------------------------------

local CATEGORIES = { zero = true, one = true, two = true, few = true, many = true, other = true }

local function compile_message(s)
  if not find(s, "%{", 1, true) then return s end
  local parts, buf, pos, n = {}, {}, 1, #s
  while pos <= n do
    local a = find(s, "%", pos, true)
    if not a then
      buf[#buf + 1] = sub(s, pos)
      break
    end
    if sub(s, a, a + 2) == "%%{" then
      buf[#buf + 1] = sub(s, pos, a - 1) .. "%{"
      pos = a + 3
    else
      local name, e = match(s, "^%%{([%w_]+)}()", a)
      if name then
        parts[#parts + 1] = concat(buf) .. sub(s, pos, a - 1)
        parts[#parts + 1] = name
        buf, pos = {}, e
      else
        buf[#buf + 1] = sub(s, pos, a)
        pos = a + 1
      end
    end
  end
  local lit = concat(buf)
  if #parts == 0 then return lit end
  parts[#parts + 1] = lit
  return parts
end
M.compile_message = compile_message

local function is_null(v)
  return type(v) == "table" and getmetatable(v) ~= nil and tostring(v) == "null"
end

local function is_plural(t)
  if next(t) == nil or t.other == nil then return false end
  for k in pairs(t) do
    if not CATEGORIES[k] then return false end
  end
  return true
end

-- Flattens tree into out (key prefix p); nil, message on a bad value or a duplicate.
local function flatten(tree, p, out, where)
  for k, v in pairs(tree) do
    local key = p .. tostring(k)
    if out[key] ~= nil then return nil, format("%s: the key %q is defined twice", where, key) end
    if type(v) == "string" then
      out[key] = compile_message(v)
    elseif type(v) == "number" or type(v) == "boolean" then
      out[key] = tostring(v)
    elseif type(v) == "table" and not is_null(v) and v[1] == nil and next(v) ~= nil then
      if is_plural(v) then
        local m = { plural = true }
        for cat, text in pairs(v) do
          if type(text) ~= "string" then
            return nil, format("%s: %q: the plural form %q must be text", where, key, cat)
          end
          m[cat] = compile_message(text)
        end
        out[key] = m
      else
        local ok, err = flatten(v, key .. ".", out, where)
        if not ok then return nil, err end
      end
    else
      return nil, format("%s: %q must be text, a plural mapping or nested keys", where, key)
    end
  end
  return true
end

function M.compile(trees, default)
  default = M.normalize(default or "en") or "en"
  local own = {}   -- own[locale] = flat table of that locale's keys
  for _, t in ipairs(trees) do
    local where = t.where or "translations"
    for locale, tree in pairs(t.tree or {}) do
      local tag = M.normalize(tostring(locale))
      if not tag then return nil, format("%s: %q is not a language tag", where, tostring(locale)) end
      if is_null(tree) then tree = {} end
      if type(tree) ~= "table" then
        return nil, format("%s: %q must map keys to messages", where, tostring(locale))
      end
      local flat = own[tag] or {}
      own[tag] = flat
      local ok, err = flatten(tree, "", flat, where .. ": " .. tag)
      if not ok then return nil, err end
    end
  end
  local tables, locales = {}, {}
  for tag in pairs(own) do
    -- The chain: the locale, its parents, the default locale (later ones only fill gaps).
    local merged = {}
    local chain, t = { tag }, M.parent(tag)
    while t do chain[#chain + 1] = t; t = M.parent(t) end
    if tag ~= default then chain[#chain + 1] = default end
    for _, c in ipairs(chain) do
      for k, v in pairs(own[c] or {}) do
        if merged[k] == nil then merged[k] = v end
      end
    end
    tables[tag] = merged
    locales[#locales + 1] = tag
  end
  sort(locales)
  local rules = {}
  for _, tag in ipairs(locales) do rules[tag] = rule_of(tag) end
  if not tables[default] then tables[default] = {} end
  rules[default] = rules[default] or rule_of(default)
  return { tables = tables, locales = locales, default = default, rules = rules }
end

return M
