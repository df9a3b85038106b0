-- services_callgrind.lua: fixed-count loops over the lookups of the app-service batteries, for
-- instruction counts that load cannot move (as frontends_callgrind.lua). The count of an op is
-- the slope between two runs, so start-up and trace compilation cancel out:
--
--   for n in 100000 300000; do
--     valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file=cg.$n \
--       bin/zever run bench/services_callgrind.lua flag_bool $n
--   done   # Ir per op = (Ir(300000) - Ir(100000)) / 200000 (callgrind_annotate: PROGRAM TOTALS)
--
-- Cases: flag_bool (a boolean flag, 64 names), flag_rollout (a 25 % rollout, 64 keys: the hash
-- in C), i18n_plain (a message by locale, 64 keys), i18n_plural (ru plural with its count).

local which, n = arg[1], tonumber(arg[2] or "200000")
local flag = require "zever.flag"
local i18n_m = require "zever.i18n"

local tree, names, keys = {}, {}, {}
for i = 1, 64 do
  names[i] = "feature_" .. i
  tree[names[i]] = (i % 2 == 0)
  keys[i] = "user-" .. (1000 + i)
end
tree.pilot = { rollout = 25 }
local flags = flag.new{ flags = tree }

local en, tkeys = {}, {}
for i = 1, 64 do
  en["key_" .. i] = "Text " .. i
  tkeys[i] = "page.key_" .. i
end
local i18n = i18n_m.new{ translations = { en = { page = en }, ru = { inbox = {
  one = "%{count} сообщение", few = "%{count} сообщения", many = "%{count} сообщений",
  other = "%{count} сообщения" } } } }
local counts = {}
for i = 1, 16 do counts[i] = { count = i } end

local sink = 0
if which == "flag_bool" then
  for i = 1, n do if flags:bool(names[i % 64 + 1], false) then sink = sink + 1 end end
elseif which == "flag_rollout" then
  for i = 1, n do if flags:enabled("pilot", keys[i % 64 + 1]) then sink = sink + 1 end end
elseif which == "i18n_plain" then
  for i = 1, n do sink = sink + #i18n:t("en", tkeys[i % 64 + 1]) end
elseif which == "i18n_plural" then
  for i = 1, n do sink = sink + #i18n:t("ru", "inbox", counts[i % 16 + 1]) end
else
  error("usage: services_callgrind.lua flag_bool|flag_rollout|i18n_plain|i18n_plural [n]")
end
io.write(sink, "\n")
