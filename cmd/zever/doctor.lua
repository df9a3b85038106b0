-- zever doctor [--dir DIR] [--json]: loads the configuration and resolves every configured
-- battery that has a registered adapter implementation in this build, for real (the db opens
-- its database and runs SELECT 1). One row per check: OK or FAIL, the battery, its adapter and
-- the reason. Exits 1 if any row fails. Batteries whose adapter is not implemented yet get no
-- row; the last line says which were skipped. Messages never contain secrets (the container
-- scrubs them).

local sys = require "zever.sys"

local function row(rows, ok, battery, adapter, reason)
  rows[#rows + 1] = { status = ok and "OK" or "FAIL", battery = battery, adapter = adapter or "-",
    reason = reason }
end

return {
  name = "doctor",
  summary = "Check the configuration and every configured battery",
  usage = "zever doctor [--dir DIR] [--json]",
  flags = {
    { name = "dir", arg = "DIR", summary = "the folder of zever.yaml (default: .)" },
    { name = "json", summary = "print a JSON array of rows" },
  },
  run = function(_, flags)
    local config = require "zever.config"
    local adapters = require "zever.adapters"
    local rows, skipped = {}, {}
    local cfg, err = config.load{ dir = flags.dir or "." }
    local failed = false
    if not cfg then
      row(rows, false, "config", nil, tostring(err):gsub("\n", "; "))
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
        else
          local t0 = sys.now()
          local b, rerr = c:get(name)
          if not b then
            row(rows, false, name, adapter, tostring(rerr))
            failed = true
          else
            local entry = adapters.get(name, adapter)
            local ok, cerr = true, nil
            if entry and entry.check then
              local pok, r, e = pcall(entry.check, b)
              if not pok then ok, cerr = false, r elseif not r then ok, cerr = false, e end
            end
            if ok then
              row(rows, true, name, adapter, string.format("resolved%s in %.1f ms",
                entry and entry.check and " and checked" or "", (sys.now() - t0) * 1000))
            else
              local text = type(cerr) == "table" and cerr.message or tostring(cerr)
              row(rows, false, name, adapter, c:scrub(text))
              failed = true
            end
          end
        end
      end
      local ok, cerrs = c:close()
      if not ok then
        row(rows, false, "close", nil, tostring(cerrs):gsub("\n", "; "))
        failed = true
      end
    end
    if flags.json then
      print(require("zever.json").encode({ rows = rows, skipped = skipped }))
    else
      local wb, wa = 0, 0
      for _, r in ipairs(rows) do
        if #r.battery > wb then wb = #r.battery end
        if #r.adapter > wa then wa = #r.adapter end
      end
      for _, r in ipairs(rows) do
        print(string.format("%-4s  %-" .. wb .. "s  %-" .. wa .. "s  %s", r.status, r.battery, r.adapter,
          r.reason))
      end
      if #skipped > 0 then
        print("skipped (no adapter implementation in this build): " .. table.concat(skipped, ", "))
      end
    end
    return failed and 1 or 0
  end,
}
