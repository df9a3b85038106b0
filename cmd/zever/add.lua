-- zever add BATTERY[/ADAPTER]: adds a battery to an app: its zever.yaml section (and those of
-- what it needs: jobs brings queue, an adapter "db" brings db, a Redis adapter the redis:
-- section), from the stanzas `zever new` writes (zever.cli.scaffold), then says how to use it.
-- Idempotent: a battery already configured with that adapter is left as it is; one configured
-- with another adapter is an error (exit 1) and nothing is written. The new file is loaded as
-- the configuration before it replaces the old one. No migration is needed: the batteries on
-- the database create their tables on first use (CREATE TABLE IF NOT EXISTS).

local cliapp = require "zever.cli.app"
local scaffold = require "zever.cli.scaffold"

local format = string.format

-- The docs page of a battery whose page has another name.
local PAGES = { session = "sessions", password = "passwords", log = "app" }

local USAGE = "zever add BATTERY[/ADAPTER] [--app DIR] [--dry-run]"

local slurp = require("zever.file").read

local function put(path, text)
  local f, err = io.open(path, "wb")
  if not f then return nil, err end
  f:write(text)
  f:close()
  return true
end

-- The top-level sections a YAML text has, and the adapter each names (nil: the default).
local function sections(text)
  local out, current = {}, nil
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    local top = line:match("^([%w_]+):")
    if top then
      current = top
      out[top] = out[top] or { adapter = nil }
    elseif current then
      local a = line:match("^%s+adapter:%s*([%w_]+)")
      if a then out[current].adapter = a end
    end
  end
  return out
end

return {
  name = "add",
  summary = "Add a battery to the app's zever.yaml (idempotent)",
  usage = USAGE,
  flags = {
    cliapp.FLAG,
    { name = "dry-run", summary = "print what would be appended, write nothing" },
  },
  run = function(args, flags)
    local spec = args[1]
    if not spec or args[2] then return 2, "one battery; usage: " .. USAGE end
    local battery, adapter = spec:match("^([%w_]+)/([%w_]+)$")
    battery = battery or spec
    local ok, err = scaffold.check(battery, adapter)
    if not ok then return 2, err end
    local target, terr = cliapp.resolve(flags, nil, "add")
    if not target then return 2, terr end
    local path = target.dir .. "/zever.yaml"
    local text = slurp(path) or ""
    local have = sections(text)
    local plan = assert(scaffold.plan({ battery }, adapter and { [battery] = adapter } or {}))
    local name = (text:match("\napp:%s*\n%s+name:%s*\"?([%w_.-]+)") or
      target.dir:match("([^/]+)$") or "app")
    local parts, added, kept = {}, {}, {}
    if scaffold.uses_redis(plan) and not have.redis then parts[#parts + 1] = scaffold.REDIS end
    for _, b in ipairs(plan.order) do
      local want = plan.adapter[b]
      if have[b] then
        local current = have[b].adapter or scaffold.default_adapter(b)
        if b == battery and adapter and current ~= adapter then
          return 1, format("%s is configured with adapter %s in %s; change it there (nothing " ..
            "was written)", b, current, path)
        end
        kept[#kept + 1] = b .. " (" .. current .. ")"
      else
        parts[#parts + 1] = scaffold.stanza(b, want, name)
        added[#added + 1] = b .. " (" .. want .. ")"
      end
    end
    if #parts == 0 then
      print(format("%s: already configured: %s", path, table.concat(kept, ", ")))
      return 0
    end
    local new = text .. ((text == "" or text:match("\n$")) and "" or "\n") .. table.concat(parts)
    if flags["dry-run"] then
      io.write(table.concat(parts))
      return 0
    end
    local wok, werr = put(path, new)
    if not wok then return 1, tostring(werr) end
    local cfg, cerr = cliapp.config(target)
    if not cfg then
      put(path, text)
      return 1, "the configuration would not load (zever.yaml is unchanged): " .. tostring(cerr)
    end
    print(format("added to %s: %s", path, table.concat(added, ", ")))
    if #kept > 0 then print("already configured: " .. table.concat(kept, ", ")) end
    for _, b in ipairs(plan.order) do
      print(format("  app.%s in a handler; docs/%s.md", b, PAGES[b] or b))
    end
    print("check it: zever doctor")
    return 0
  end,
}
