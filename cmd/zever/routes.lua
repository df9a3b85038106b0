-- zever routes [app]: the routes of an app: method, pattern, name and the handler's file:line.
-- The app: the positional app.lua or folder, --app PATH, or -C DIR (zever.cli.app).

local json = require "zever.json"
local cliapp = require "zever.cli.app"

return {
  name = "routes",
  json = true,
  dry_run = false,
  summary = "List an app's routes with their handlers",
  usage = "zever routes [app.lua | dir] [--json]",
  flags = {
    cliapp.FLAG,
    { name = "json", summary = "print a JSON array" },
  },
  run = function(args, flags)
    if args[2] then return 2, "one app only; usage: zever routes [app.lua | dir] [--json]" end
    local target, terr = cliapp.resolve(flags, args[1], "routes")
    if not target then return 2, terr end
    local ok, app = pcall(cliapp.load, target)
    if not ok then return 1, tostring(app) end
    local routes = app:list_routes()
    if flags.json then
      for _, r in ipairs(routes) do r.name = r.name or json.null end
      print(json.encode(routes))
      return 0
    end
    local rows = { { "METHOD", "PATTERN", "NAME", "HANDLER" } }
    for _, r in ipairs(routes) do rows[#rows + 1] = { r.method, r.pattern, r.name or "-", r.source } end
    local width = { 0, 0, 0 }
    for _, row in ipairs(rows) do
      for i = 1, 3 do if #row[i] > width[i] then width[i] = #row[i] end end
    end
    for _, row in ipairs(rows) do
      print(string.format("%-" .. width[1] .. "s  %-" .. width[2] .. "s  %-" .. width[3] .. "s  %s",
        row[1], row[2], row[3], row[4]))
    end
    return 0
  end,
}
