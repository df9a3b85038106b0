-- zever add BATTERY[/ADAPTER]: adds a battery to an app: its zever.yaml section (and those of
-- what it needs: jobs brings queue, an adapter "db" brings db, a Redis adapter the redis:
-- section), from the stanzas `zever new` writes (zever.cli.scaffold), then says how to use it.
-- Idempotent: a battery already configured with that adapter is left as it is; one configured
-- with another adapter is an error (exit 1) and nothing is written. The new file is loaded as
-- the configuration before it replaces the old one. A battery that keeps tables in the app's
-- database (cache/db, queue/db, jobs, scheduler/db, idempotency/db, session/db, search, vectors)
-- gets a migration in db.migrations (NNNN_zever_<battery>.lua, from zever.cli.tables) that
-- `zever migrate up` runs; one already there is kept, so a second add changes nothing.
-- --dry-run lists what it would append and write; --json prints {added, kept, migrations}.

local cliapp = require "zever.cli.app"
local scaffold = require "zever.cli.scaffold"
local tables = require "zever.cli.tables"
local output = require "zever.cli.output"
local json = require "zever.json"

local format = string.format

-- The docs page of a battery whose page has another name.
local PAGES = { session = "sessions", password = "passwords", log = "app" }

local USAGE = "zever add BATTERY[/ADAPTER] [--app DIR] [--dry-run] [--json]"

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
  json = true,
  dry_run = true,
  flags = {
    cliapp.FLAG,
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
    local is_app, nerr = cliapp.is_app(target)
    if not is_app then return 1, nerr end
    local path = target.dir .. "/zever.yaml"
    local text = slurp(path) or ""
    local have = sections(text)
    local plan = assert(scaffold.plan({ battery }, adapter and { [battery] = adapter } or {}))
    local name = (text:match("\napp:%s*\n%s+name:%s*\"?([%w_.-]+)") or
      target.dir:match("([^/]+)$") or "app")
    local parts, added, kept, effective = {}, {}, {}, {}
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
        effective[b] = current
      else
        parts[#parts + 1] = scaffold.stanza(b, want, name)
        added[#added + 1] = b .. " (" .. want .. ")"
        effective[b] = want
      end
    end
    -- The migrations of the batteries that keep tables in the app's database, each written once
    -- (a migration named NNNN_zever_<battery>.lua already there is kept).
    local cfg = cliapp.config(target)
    local dir = cfg and cfg.db.migrations or (target.dir .. "/migrations")
    local migrations, next_version = {}, nil
    for _, b in ipairs(plan.order) do
      local m = tables.for_battery(b, effective[b], have[b] and cfg or nil)
      if m and not tables.existing(dir, b) then
        local file = tables.next_path(dir, b)
        next_version = (next_version or tonumber(file:match("/(%d+)_zever_[%w_]+%.lua$")))
          + (#migrations > 0 and 1 or 0)
        m.path = format("%s/%04d_zever_%s.lua", dir, next_version, b)
        m.battery = b
        migrations[#migrations + 1] = m
      end
    end
    local function rel(p) return require("zever.config.paths").relative(p) end
    if #parts == 0 and #migrations == 0 then
      output.emit(flags, { added = json.array({}), kept = json.array(kept), migrations = json.array({}) },
        format("%s: already configured: %s", path, table.concat(kept, ", ")))
      return 0
    end
    local new = text .. ((text == "" or text:match("\n$")) and "" or "\n") .. table.concat(parts)
    if flags["dry-run"] then
      local actions = {}
      if #parts > 0 then
        actions[1] = { action = "append to", target = format("%s: %s", path, table.concat(added, ", ")),
          text = table.concat(parts) }
      end
      for _, m in ipairs(migrations) do
        actions[#actions + 1] = { action = "write", target = format("%s (tables %s)", rel(m.path),
          table.concat(m.tables, ", ")) }
      end
      output.would(flags, actions)
      if not flags.json and #parts > 0 then io.write("\n", table.concat(parts)) end
      return 0
    end
    if #parts > 0 then
      local wok, werr = put(path, new)
      if not wok then return 1, tostring(werr) end
      local ncfg, cerr = cliapp.config(target)
      if not ncfg then
        put(path, text)
        return 1, "the configuration would not load (zever.yaml is unchanged): " .. tostring(cerr)
      end
      -- Table names come from the configuration as written now (the stanza's defaults).
      for _, m in ipairs(migrations) do
        local again = tables.for_battery(m.battery, effective[m.battery], ncfg)
        m.text, m.tables = again.text, again.tables
      end
    end
    if #migrations > 0 and not require("zever.sys").isdir(dir) then
      os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "'")
    end
    local wrote = {}
    for _, m in ipairs(migrations) do
      local wok, werr = put(m.path, m.text)
      if not wok then return 1, format("cannot write %s: %s", m.path, tostring(werr)) end
      wrote[#wrote + 1] = rel(m.path)
    end
    if flags.json then
      output.emit(flags, { added = json.array(added), kept = json.array(kept),
        migrations = json.array(wrote) })
      return 0
    end
    if #added > 0 then print(format("added to %s: %s", path, table.concat(added, ", "))) end
    if #kept > 0 then print("already configured: " .. table.concat(kept, ", ")) end
    for _, w in ipairs(wrote) do print("wrote " .. w) end
    for _, b in ipairs(plan.order) do
      print(format("  app.%s in a handler; docs/%s.md", b, PAGES[b] or b))
    end
    print(#wrote > 0 and "next: zever migrate up, then zever doctor" or "check it: zever doctor")
    return 0
  end,
}
