-- zever config show [--json] [--app DIR]: prints the merged configuration (defaults, zever.yaml
-- or zever.json, the ZEVER_ENV overlay, environment variables) with every secret replaced by
-- "[REDACTED]" (lua/zever/config/redact.lua says which). The text form is YAML that loads back
-- as zever.yaml; --json prints one JSON object. A config error exits 1 with the messages.
-- The app folder: -C DIR or --app DIR (zever.cli.app); --dir DIR is a deprecated alias.

local cliapp = require "zever.cli.app"

local USAGE = "zever config show [--json] [--app DIR]"

return {
  name = "config",
  json = { "show" },
  dry_run = false,
  summary = "Show the merged configuration with secrets redacted",
  usage = USAGE,
  flags = {
    { name = "json", summary = "print a JSON object" },
    cliapp.FLAG,
    { name = "dir", arg = "DIR", summary = "deprecated: use -C DIR or --app DIR" },
  },
  run = function(args, flags)
    if args[1] ~= "show" or #args > 1 then
      local hint = args[1] and require("cmd.zever").suggest(args[1], { "show" }) or ""
      io.stderr:write("zever config: ", args[1] and ('unknown subcommand "' .. args[1] .. '".' .. hint)
        or "missing subcommand.", "\nUsage: ", USAGE, "\n")
      return 2
    end
    local config = require "zever.config"
    local target, terr = cliapp.resolve(flags, nil, "config")
    if not target then return 2, terr end
    local cfg, err = cliapp.config(target)
    if not cfg then return 1, "invalid configuration:\n" .. tostring(err) end
    local shown = config.redact(cfg)
    if flags.json then
      print(require("zever.json").encode(config.plain(shown)))
      return 0
    end
    local src = config.sources(cfg)
    local layers = { "defaults" }
    for _, f in ipairs(src.files) do layers[#layers + 1] = f end
    if #src.vars > 0 then
      table.sort(src.vars)
      layers[#layers + 1] = "environment (" .. table.concat(src.vars, ", ") .. ")"
    end
    io.write("# zever config: ", table.concat(layers, " + "), "\n", config.render(shown))
    return 0
  end,
}
