-- zever new NAME: creates an app folder that serves and passes its own `zever test` at once:
-- app.lua, handlers/, schema/app.zen, migrations/, spec/, zever.yaml with only the batteries
-- picked (--batteries, --adapters; zever.cli.scaffold has the catalogue and the templates),
-- zever.test.yaml, .gitignore, README.md and data/. It refuses a folder that exists and is not
-- empty unless --force (which writes the app's files over, and removes nothing). --dry-run
-- prints what it would write and writes nothing. Unknown batteries and adapters are usage
-- errors with a did-you-mean. --json prints one document instead of the lines (what it wrote,
-- what it would write, the battery list). It must not load a battery: it only writes text.

local sys = require "zever.sys"
local scaffold = require "zever.cli.scaffold"

local format = string.format

-- Writes content to path, making its folders; true | nil, message.
local function write(path, content)
  local dir = path:match("^(.*)/[^/]*$")
  if dir then
    local ok, err = scaffold.mkdir_p(dir)
    if not ok then return nil, err end
  end
  local f, err = io.open(path, "wb")
  if not f then return nil, err end
  f:write(content)
  f:close()
  return true
end

local USAGE = "zever new NAME [--batteries db,cache,...] [--adapters cache=redis,...] [--dry-run]"
  .. " [--force] [--list-batteries] [--json]"

-- zever.json and zever.cli.output load only under --json: `zever new` stays a start-up and
-- a few writes.
local function emit(flags, data)
  require("zever.cli.output").emit(flags, data)
end

local function list_batteries(flags)
  local rows = scaffold.list()
  if flags.json then
    local json = require "zever.json"
    local out = {}
    for i, r in ipairs(rows) do
      out[i] = { name = r[1], default = r[2], adapters = json.array(scaffold.adapters(r[1])),
        doc = r[4] }
    end
    emit(flags, json.array(out))
    return 0
  end
  local w1, w2 = 7, 7
  for _, r in ipairs(rows) do
    if #r[1] > w1 then w1 = #r[1] end
    if #r[2] > w2 then w2 = #r[2] end
  end
  print(format("%-" .. w1 .. "s  %-" .. w2 .. "s  %s", "BATTERY", "DEFAULT", "ADAPTERS"))
  for _, r in ipairs(rows) do
    print(format("%-" .. w1 .. "s  %-" .. w2 .. "s  %-24s %s", r[1], r[2], r[3], r[4]))
  end
  return 0
end

return {
  name = "new",
  json = true,
  dry_run = true,
  summary = "Create a new app folder (app.lua, handlers/, spec/, zever.yaml, ...)",
  usage = USAGE,
  help = "NAME is the folder to create; its last part is the app's name. Default batteries: db\n"
    .. "(SQLite in data/). --batteries picks others (jobs brings queue; a db adapter brings db);\n"
    .. "--adapters picks their adapters (cache=redis, db=postgres). The app passes `zever test`\n"
    .. "and serves /, /healthz and /readyz as soon as it is written.",
  flags = {
    { name = "batteries", arg = "LIST", type = "list",
      summary = "batteries to configure, comma-separated (default db; 'none' for none)" },
    { name = "adapters", arg = "LIST", type = "list",
      summary = "battery=adapter items, comma-separated (cache=redis,queue=redis)" },
    { name = "dry-run", summary = "print the files and zever.yaml, write nothing" },
    { name = "force", summary = "write into a folder that is not empty (the app's files are replaced)" },
    { name = "list-batteries", summary = "list the batteries and their adapters" },
  },
  run = function(args, flags)
    if flags["list-batteries"] then return list_batteries(flags) end
    local dir = args[1]
    if not dir or args[2] then return 2, "want one folder; usage: " .. USAGE end
    local names = flags.batteries or { "db" }
    if #names == 1 and names[1] == "none" then names = {} end
    local adapters, aerr = scaffold.parse_adapters(flags.adapters)
    if not adapters then return 2, aerr end
    local plan, err = scaffold.plan(names, adapters)
    if not plan then return 2, err end
    local name = dir:gsub("/+$", ""):match("([^/]+)$") or "app"
    if not name:match("^[%w_.-]+$") then
      return 2, format('"%s": an app name is letters, digits, "_", "-" and "."', name)
    end
    local files = scaffold.files(name, plan)
    -- The migrations of the batteries with tables in the app's database, as `zever add` writes
    -- them (zever.cli.tables), numbered in the plan's order.
    local tables = require "zever.cli.tables"
    for _, b in ipairs(plan.order) do
      local m = tables.for_battery(b, plan.adapter[b], nil)
      if m then
        local n = 0
        for _, f in ipairs(files) do
          if f.path:match("^migrations/%d+_") then n = n + 1 end
        end
        files[#files + 1] = { path = format("migrations/%04d_%s.lua", n + 1, m.name), content = m.text }
      end
    end
    local base = dir:gsub("/+$", "")
    -- The JSON document of what was (or would be) written: paths relative to the app folder.
    local function doc()
      local json = require "zever.json"
      local paths, picked = {}, {}
      for _, f in ipairs(files) do paths[#paths + 1] = f.path end
      for _, b in ipairs(plan.order) do picked[b] = plan.adapter[b] end
      return { app = name, dir = base, batteries = json.array(plan.order), adapters = picked,
        files = json.array(paths), config = scaffold.config(name, plan) }
    end
    if flags["dry-run"] then
      if flags.json then
        local d, actions = doc(), {}
        for i, p in ipairs(d.files) do actions[i] = { action = "write", target = base .. "/" .. p } end
        d.files = nil
        require("zever.cli.output").would(flags, actions, d)
        return 0
      end
      for _, f in ipairs(files) do print("would write " .. base .. "/" .. f.path) end
      print("")
      io.write(scaffold.config(name, plan))
      return 0
    end
    if sys.isdir(dir) and #(sys.listdir(dir) or {}) > 0 and not flags.force then
      return 1, format('"%s" exists and is not empty (--force writes the app into it)', dir)
    end
    if not sys.isdir(dir) and sys.mtime(dir) then
      return 1, format('"%s" exists and is not a folder', dir)
    end
    for _, f in ipairs(files) do
      local ok, werr = write(base .. "/" .. f.path, f.content)
      if not ok then return 1, tostring(werr) end
    end
    if flags.json then
      local d = doc()
      d.config = nil
      emit(flags, d)
      return 0
    end
    print(format("created %s (batteries: %s)", base,
      #plan.order > 0 and table.concat(plan.order, ", ") or "none"))
    for _, f in ipairs(files) do
      if not f.path:match("%.keep$") then print("  " .. f.path) end
    end
    print(format("next: cd %s && zever test && zever dev", base))
    return 0
  end,
}
