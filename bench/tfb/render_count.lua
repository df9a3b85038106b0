-- bench/tfb/render_count.lua: N renders of bench/tfb's fortunes page (12 rows whose messages all
-- need escaping, plus the added one, sorted with zever.sort), for callgrind: run it at two N and
-- take the slope (instructions per render), e.g.
--   for n in 2000 12000; do N=$n valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.$n \
--     bin/zever run bench/tfb/render_count.lua; done
local template = require "zever.template"
local sort = require "zever.sort"
local views = template.views{ dir = "bench/tfb/app/views" }
local rows0 = {}
for i = 1, 12 do rows0[i] = { id = i, message = "fortune <" .. i .. "> & 'x' number " .. i } end

local n = 0
for _ = 1, tonumber(os.getenv("N")) do
  local rows = {}
  for i = 1, 12 do rows[i] = rows0[i] end
  rows[13] = { id = 0, message = "Additional fortune added at request time." }
  sort.by(rows, "message")
  n = n + #views:render("fortunes", { fortunes = rows }, { layout = false })
end
print(n)
