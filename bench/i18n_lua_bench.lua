-- i18n_lua_bench.lua: app.i18n:t through the front-end over the memory adapter (the file
-- adapter holds the same compiled catalogue), printed as Go-style lines:
--
--   BenchmarkI18nPlain        a plain message by locale string (64 keys)
--   BenchmarkI18nFallback     a key only the default locale has, asked for in "pt-BR"
--   BenchmarkI18nRequest      a plain message for a request whose locale was negotiated
--   BenchmarkI18nInterpolate  "Hello %{name}!" with one variable (builds the string)
--   BenchmarkI18nPlural       a plural message by CLDR rule (ru), count interpolated
--
-- Run: bin/zever run bench/i18n_lua_bench.lua [filter]. Target (issue #23): lookup <= 100 ns.

local i18n_m = require "zever.i18n"

local bench = require("bench.harness").new(arg and arg[1], { seconds = 0.2 }).loop

local en, keys = {}, {}
for i = 1, 64 do
  keys[i] = "page.key_" .. i
  en["key_" .. i] = "Text number " .. i
end
local i18n = i18n_m.new{ translations = {
  en = { page = en, hello = "Hello %{name}!", only_en = "English" },
  ru = { inbox = { one = "%{count} сообщение", few = "%{count} сообщения",
    many = "%{count} сообщений", other = "%{count} сообщения" } },
  ["pt-BR"] = { page = { key_1 = "Texto" } },
} }
local req = { header = function() return "ru-RU,ru;q=0.9" end }
i18n:locale(req)
local names = { { name = "Ann" }, { name = "Bob" } }
local counts = {}
for i = 1, 16 do counts[i] = { count = i } end

bench("I18nPlain", function(n)
  local len = 0
  for i = 1, n do len = len + #i18n:t("en", keys[i % 64 + 1]) end
  return len
end)

bench("I18nFallback", function(n)
  local len = 0
  for _ = 1, n do len = len + #i18n:t("pt-BR", "only_en") end
  return len
end)

bench("I18nRequest", function(n)
  local len = 0
  for _ = 1, n do len = len + #i18n:t(req, "only_en") end
  return len
end)

bench("I18nInterpolate", function(n)
  local len = 0
  for i = 1, n do len = len + #i18n:t("en", "hello", names[i % 2 + 1]) end
  return len
end)

bench("I18nPlural", function(n)
  local len = 0
  for i = 1, n do len = len + #i18n:t("ru", "inbox", counts[i % 16 + 1]) end
  return len
end)
