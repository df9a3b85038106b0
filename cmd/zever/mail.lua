-- zever mail test --to ADDR [--from ADDR] [--app DIR]: sends a test message through the
-- configured mailer (zever.yaml's mailer section, env MAILER_*), prints its Message-ID and
-- exits 0; a refused or failed send prints the error and exits 1. With the log mailer the
-- message becomes one JSON line on stderr or in mailer.log_file (relative to the app folder).
-- The app folder: -C DIR or --app DIR (zever.cli.app); --dir DIR is a deprecated alias.
-- --json prints {"message_id": ...}; --dry-run says where the message would go and sends nothing.

local cliapp = require "zever.cli.app"

local USAGE = "zever mail test --to ADDR [--from ADDR] [--app DIR] [--json] [--dry-run]"
local format = string.format

local function usage(msg)
  io.stderr:write("zever mail: ", msg, "\nUsage: ", USAGE, "\n")
  return 2
end

return {
  name = "mail",
  summary = "Send a test message with the configured mailer",
  usage = USAGE,
  json = { "test" },
  dry_run = { "test" },
  flags = {
    { name = "to", arg = "ADDR", summary = "recipient (required)" },
    { name = "from", arg = "ADDR", summary = "sender (default: mailer.from)" },
    cliapp.FLAG,
    { name = "dir", arg = "DIR", summary = "deprecated: use -C DIR or --app DIR" },
  },
  run = function(args, flags)
    if args[1] ~= "test" or #args > 1 then
      local hint = args[1] and require("cmd.zever").suggest(args[1], { "test" }) or ""
      return usage(args[1] and ('unknown subcommand "' .. args[1] .. '".' .. hint) or "missing subcommand.")
    end
    if not flags.to or flags.to == "" then return usage("--to is required.") end
    local target, terr = cliapp.resolve(flags, nil, "mail")
    if not target then return 2, terr end
    local cfg, err = cliapp.config(target)
    if not cfg then return 1, "invalid configuration:\n" .. tostring(err) end
    local from = flags.from
    if not from and cfg.mailer.from == "" then from = "zever@localhost" end
    if flags["dry-run"] then
      -- Nothing is resolved: an SMTP mailer would connect, the log mailer would append.
      local m = cfg.mailer
      local via = m.adapter == "smtp" and ("smtp " .. m.smtp_host .. ":" .. m.smtp_port)
        or ("log " .. (cfg.mailer.log_file ~= "" and cfg.mailer.log_file or "stderr"))
      require("zever.cli.output").would(flags, { { action = "send",
        target = format("a test message to %s via %s",
        flags.to, via), to = flags.to, from = from or cfg.mailer.from, adapter = cfg.mailer.adapter } })
      return 0
    end
    local c = require("zever.container").new(cfg)
    local mailer, merr = c:get("mailer")
    if not mailer then
      c:close()
      return 1, tostring(merr)
    end
    local id, serr = mailer:send{
      from = from,
      to = flags.to,
      subject = "zever mail test",
      text = "This is a test message from `zever mail test`.\n\nIf you can read it, the "
        .. cfg.mailer.adapter .. " mailer works.\n",
    }
    c:close()
    if not id then return 1, tostring(serr) end
    require("zever.cli.output").emit(flags, { message_id = id }, id)
    return 0
  end,
}
