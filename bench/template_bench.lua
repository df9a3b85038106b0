-- template_bench.lua: zever.template rendering a 100-row HTML table (issue #18's target: at most
-- 30 us a render) against the same page built by hand with string concatenation into a buffer
-- (etlua's approach, and what the compiled template does itself), printed as Go-style lines:
--
--   BenchmarkTemplateTable100   N  x ns/op  y B/op
--
-- Run: bin/zever run bench/template_bench.lua [filter]
-- Instructions a render (load-independent): TEMPLATE_RENDERS=N renders N times and prints
-- nothing else; the slope of callgrind's totals between two N is the count a render:
--   for n in 1000 3000; do TEMPLATE_RENDERS=$n valgrind --tool=callgrind \
--     --callgrind-out-file=/tmp/cg.$n bin/zever run bench/template_bench.lua; done
--   (grep totals: in each; (Ir(3000) - Ir(1000)) / 2000; TEMPLATE_CONCAT=1 for the baseline)
-- Rows are 100 users { id (number), name, email (strings, one in ten with a character to
-- escape) }; every string cell is HTML-escaped in both, the id written as a number. The
-- template is compiled once (a view set caches it); only rendering is timed.

local template = require "zever.template"
local bench = require("bench.harness").new(arg and arg[1])

local escape = template.escape
local concat = table.concat

local rows = {}
for i = 1, 100 do
  rows[i] = { id = i, name = (i % 10 == 0) and ("O'Brien & Sons " .. i) or ("User " .. i),
    email = "user" .. i .. "@example.com" }
end

local SOURCE = [[
<table>
  <thead><tr><th>id</th><th>name</th><th>email</th></tr></thead>
  <tbody>
<% for i = 1, #users do local u = users[i] -%>
    <tr><td><%= u.id %></td><td><%= u.name %></td><td><%= u.email %></td></tr>
<% end -%>
  </tbody>
</table>
]]

local fn = assert(template.compile(SOURCE, "table.etlua"))
local dir = os.tmpname()
os.remove(dir)
os.execute("mkdir -p " .. dir)
local f = assert(io.open(dir .. "/table.etlua", "wb"))
f:write(SOURCE)
f:close()
local views = template.views{ dir = dir }
local data = { users = rows }

-- The baseline: the same page, by hand, into a buffer concatenated once.
local function by_hand(users)
  local b, n = {}, 0
  n = n + 1; b[n] = "<table>\n  <thead><tr><th>id</th><th>name</th><th>email</th></tr></thead>\n  <tbody>\n"
  for i = 1, #users do
    local u = users[i]
    n = n + 1; b[n] = "    <tr><td>"
    n = n + 1; b[n] = escape(u.id)
    n = n + 1; b[n] = "</td><td>"
    n = n + 1; b[n] = escape(u.name)
    n = n + 1; b[n] = "</td><td>"
    n = n + 1; b[n] = escape(u.email)
    n = n + 1; b[n] = "</td></tr>\n"
  end
  n = n + 1; b[n] = "  </tbody>\n</table>\n"
  return concat(b, "", 1, n)
end

-- Both give the same page.
local page = views:render("table", data)
assert(page == by_hand(rows), "the template and the baseline differ")
assert(page == fn(setmetatable({ users = rows }, { __index = _G })))

local sink = 0
local fixed = tonumber(os.getenv("TEMPLATE_RENDERS"))
if fixed then
  local concat_only = os.getenv("TEMPLATE_CONCAT") == "1"
  for _ = 1, fixed do
    sink = sink + (concat_only and #by_hand(rows) or #views:render("table", data))
  end
  os.remove(dir .. "/table.etlua")
  os.remove(dir)
  return
end
bench.loop("TemplateTable100", function(n)
  for _ = 1, n do sink = sink + #views:render("table", data) end
end)
bench.loop("TemplateTable100Concat", function(n)
  for _ = 1, n do sink = sink + #by_hand(rows) end
end)

os.remove(dir .. "/table.etlua")
os.remove(dir)
io.write(sink > 0 and "" or "?")
