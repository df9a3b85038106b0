-- zever doctor [--app DIR] [--json]: loads the configuration and resolves every configured
-- battery that has a registered adapter implementation in this build, for real, and pings what
-- it resolved: the db opens its database and runs SELECT 1; a battery on Redis connects to its
-- server (its own url, else redis.url) and sends PING. One row per check: OK or FAIL, the
-- battery, its adapter and the reason. Exits 1 if any row fails. A configured adapter this
-- build lacks is a FAIL row saying so; batteries with no adapter at all get no row, the last
-- line says which were skipped. Messages never contain secrets (the container scrubs them, and
-- the dispatcher hides URL passwords in anything else).
--
-- The db row says more once the database answered: the server (PostgreSQL's version, or
-- SQLite's), the latency of one SELECT 1 round trip, and for a pooled adapter the pool's state
-- (db:pool_stats(): open, idle, busy, waiting of size). --json gives them as the row's db field.

local sys = require "zever.sys"
local cliapp = require "zever.cli.app"

local format = string.format

local function row(rows, ok, battery, adapter, reason)
  rows[#rows + 1] = { status = ok and "OK" or "FAIL", battery = battery, adapter = adapter or "-",
    reason = reason }
end

-- PING on a private blocking connection to the server the battery uses: true | nil, message.
local function ping_redis(cfg, section)
  local url = (section.url ~= nil and section.url ~= "") and section.url or cfg.redis.url
  local timeout = math.min(cfg.redis.timeout, 2)
  local redis = require "zever.redis"
  local c, err = redis.connect(url, { sync = true, timeout = timeout })
  if not c then return nil, "redis: " .. tostring(err and err.message or err) end
  local pong, perr = c:call("PING")
  c:close()
  if pong ~= "PONG" then return nil, "redis: PING: " .. tostring(perr and perr.message or pong) end
  return true
end

-- The db's details: { server =, latency_ms =, pool = } and one line saying them. Each part is
-- asked only of a database that has it (server_version and pool_stats are postgres's); a part
-- that fails is left out, the check itself already said whether the database answers.
local function db_details(db)
  local d, parts = {}, {}
  if db.dialect == "postgres" and db.server_version then
    local ok, _, text = pcall(db.server_version, db)
    if ok and text then d.server = "PostgreSQL " .. text end
  elseif db.dialect == "sqlite" then
    local ok, r = pcall(db.first, db, "SELECT sqlite_version() AS v")
    if ok and r then d.server = "SQLite " .. r.v end
  end
  if d.server then parts[#parts + 1] = d.server end
  local t0 = sys.now()
  local ok = pcall(db.first, db, "SELECT 1 AS ok")
  if ok then
    d.latency_ms = math.floor((sys.now() - t0) * 1e5 + 0.5) / 100
    parts[#parts + 1] = format("SELECT 1 in %.2f ms", d.latency_ms)
  end
  if db.dialect == "postgres" and db.pool_stats then
    local pok, p = pcall(db.pool_stats, db)
    if pok and type(p) == "table" then
      d.pool = { size = p.size, open = p.open, idle = p.idle, busy = p.busy, waiting = p.waiting }
      parts[#parts + 1] = format("pool %s/%s open (%s idle, %s busy, %s waiting)", tostring(p.open),
        tostring(p.size), tostring(p.idle), tostring(p.busy), tostring(p.waiting))
    end
  end
  return d, table.concat(parts, ", ")
end

-- What the battery's check is: the adapter's own (db: SELECT 1), or PING for Redis.
local function check(cfg, name, entry, battery)
  if entry and entry.check then
    local pok, r, e = pcall(entry.check, battery)
    if not pok then return nil, r end
    if not r then return nil, e end
    return true, "checked"
  end
  if cfg[name].adapter == "redis" then
    local ok, err = ping_redis(cfg, cfg[name])
    if not ok then return nil, err end
    return true, "pinged"
  end
  return true, nil
end

return {
  name = "doctor",
  json = true,
  dry_run = false,
  summary = "Check the configuration and ping every configured battery",
  usage = "zever doctor [--app DIR] [--json]",
  flags = {
    cliapp.FLAG,
    { name = "dir", arg = "DIR", summary = "deprecated: use -C DIR or --app DIR" },
    { name = "json", summary = "print a JSON array of rows" },
  },
  run = function(_, flags)
    local config = require "zever.config"
    local adapters = require "zever.adapters"
    local target, terr = cliapp.resolve(flags, nil, "doctor")
    if not target then return 2, terr end
    local rows, skipped = {}, {}
    local cfg, err = cliapp.config(target)
    local failed = false
    if not cfg then
      row(rows, false, "config", nil, (tostring(err):gsub("\n", "; ")))
      failed = true
    else
      local src = config.sources(cfg)
      local from = #src.files > 0 and table.concat(src.files, ", ") or "defaults only"
      if #src.vars > 0 then from = from .. " + " .. #src.vars .. " environment variable(s)" end
      row(rows, true, "config", nil, "loaded from " .. from)
      local c = require("zever.container").new(cfg)
      for _, name in ipairs(config.schema.batteries) do
        local adapter = cfg[name].adapter
        if #adapters.names(name) == 0 then
          skipped[#skipped + 1] = name
        elseif not adapters.get(name, adapter) then
          row(rows, false, name, adapter, cliapp.missing_adapter(name, adapter))
          failed = true
        else
          local t0 = sys.now()
          local b, rerr = c:get(name)
          if not b then
            row(rows, false, name, adapter, tostring(rerr))
            failed = true
          else
            local ok, how = check(cfg, name, adapters.get(name, adapter), b)
            if ok then
              row(rows, true, name, adapter, format("resolved%s in %.1f ms", how and (" and " .. how) or "",
                (sys.now() - t0) * 1000))
              if name == "db" and type(b) == "table" and b.dialect then
                local d, line = db_details(b)
                if line ~= "" then rows[#rows].reason = rows[#rows].reason .. "; " .. line end
                rows[#rows].db = d
              end
            else
              local text = type(how) == "table" and how.message or tostring(how)
              row(rows, false, name, adapter, c:scrub(text))
              failed = true
            end
          end
        end
      end
      local ok, cerrs = c:close()
      if not ok then
        row(rows, false, "close", nil, (tostring(cerrs):gsub("\n", "; ")))
        failed = true
      end
    end
    local redact = require("cmd.zever").redact
    for _, r in ipairs(rows) do r.reason = redact(r.reason) end
    if flags.json then
      print(require("zever.json").encode({ rows = rows, skipped = skipped }))
    else
      local wb, wa = 0, 0
      for _, r in ipairs(rows) do
        if #r.battery > wb then wb = #r.battery end
        if #r.adapter > wa then wa = #r.adapter end
      end
      for _, r in ipairs(rows) do
        print(format("%-4s  %-" .. wb .. "s  %-" .. wa .. "s  %s", r.status, r.battery, r.adapter,
          r.reason))
      end
      if #skipped > 0 then
        print("skipped (no adapter implementation in this build): " .. table.concat(skipped, ", "))
      end
    end
    return failed and 1 or 0
  end,
}
