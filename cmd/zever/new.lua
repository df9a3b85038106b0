-- zever new DIR: creates a new app folder: app.lua (a hello route), zever.yaml (the database in
-- data/, the app's own settings under app:) and an empty migrations/ folder. It refuses a
-- folder that exists and is not empty (exit 1), and writes nothing else.

local sys = require "zever.sys"

local APP = [[
-- %s: a zever app. Serve it with `zever serve`, list its routes with `zever routes`.
local zever = require "zever"
local app = zever.app()

app:get("/hello", function()
  return "hello from " .. app:config().app.name
end)

return app
]]

local CONFIG = [[
# zever.yaml: every key is optional (zever config show prints them all; docs/config.md).
# Relative paths are relative to this folder, whatever the current directory.
db:
  dsn: sqlite:data/app.db
app:
  name: %s
]]

local function write(path, text)
  local f, err = io.open(path, "wb")
  if not f then return nil, err end
  f:write(text)
  f:close()
  return true
end

return {
  name = "new",
  summary = "Create a new app folder (app.lua, zever.yaml, migrations/)",
  usage = "zever new DIR",
  run = function(args)
    local dir = args[1]
    if not dir or args[2] then return 2, "want one folder; usage: zever new DIR" end
    if sys.isdir(dir) and #(sys.listdir(dir) or {}) > 0 then
      return 1, '"' .. dir .. '" exists and is not empty'
    end
    local q = "'" .. dir:gsub("'", "'\\''") .. "'"
    local r = os.execute("mkdir -p " .. q .. "/migrations " .. q .. "/data")
    if r ~= 0 and r ~= true then
      return 1, 'cannot create "' .. dir .. '"'
    end
    local name = dir:gsub("/+$", ""):match("([^/]+)$") or "app"
    local ok, err = write(dir .. "/app.lua", string.format(APP, name))
    if ok then ok, err = write(dir .. "/zever.yaml", string.format(CONFIG, string.format("%q", name))) end
    if not ok then return 1, tostring(err) end
    print("created " .. dir .. ": app.lua, zever.yaml, migrations/, data/")
    print("next: zever serve " .. dir)
    return 0
  end,
}
