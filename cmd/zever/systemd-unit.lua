-- zever systemd-unit [app] [--name NAME] [--exec PATH] [--listen HOST:PORT] [-o DIR]: prints a
-- hardened systemd service for the app and the .socket unit that activates it (docs/deploy.md).
-- With -o DIR it writes DIR/NAME.service and DIR/NAME.socket instead (systemd-analyze verify
-- takes them from there).
--
-- The service runs as a dynamic user in a read-only system (ProtectSystem=strict) with one
-- writable state directory, /var/lib/NAME, which is its working directory: a bundle's app
-- folder, so its SQLite file lives there. Type=notify: zever says READY=1 once every worker
-- listens on the socket systemd passed (LISTEN_FDS), RELOADING=1 on `systemctl reload`
-- (SIGHUP), STOPPING=1 on drain, and pings WatchdogSec.

local sys = require "zever.sys"
local cliapp = require "zever.cli.app"
local paths = require "zever.config.paths"

local format, concat = string.format, table.concat

local M = {}

-- The two units' text for opts = { name, exec, listen, drain, dsn }.
local function render(o)
  local service = {
    "[Unit]",
    format("Description=%s (zever app)", o.name),
    format("Requires=%s.socket", o.name),
    format("After=network.target %s.socket", o.name),
    "",
    "[Service]",
    "Type=notify",
    "NotifyAccess=main",
    format("ExecStart=%s", o.exec),
    "ExecReload=/bin/kill -HUP $MAINPID",
    "Restart=on-failure",
    "RestartSec=1s",
    "WatchdogSec=30s",
    format("TimeoutStopSec=%ds", math.ceil(o.drain) + 5),
    "KillMode=mixed",
    "DynamicUser=yes",
    format("StateDirectory=%s", o.name),
    "WorkingDirectory=%S/" .. o.name,
  }
  if o.dsn then service[#service + 1] = format("Environment=DB_DSN=%s", o.dsn) end
  for _, line in ipairs({
    "UMask=0077",
    "LimitNOFILE=65536",
    "NoNewPrivileges=yes",
    "CapabilityBoundingSet=",
    "ProtectSystem=strict",
    "ProtectHome=yes",
    "PrivateTmp=yes",
    "PrivateDevices=yes",
    "ProtectKernelTunables=yes",
    "ProtectKernelModules=yes",
    "ProtectKernelLogs=yes",
    "ProtectControlGroups=yes",
    "ProtectClock=yes",
    "ProtectHostname=yes",
    "ProtectProc=invisible",
    "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
    "RestrictNamespaces=yes",
    "RestrictRealtime=yes",
    "RestrictSUIDSGID=yes",
    "LockPersonality=yes",
    "SystemCallArchitectures=native",
    "SystemCallFilter=@system-service",
    "SystemCallErrorNumber=EPERM",
    "# LuaJIT compiles to machine code: MemoryDenyWriteExecute=yes would stop its JIT.",
    "",
    "[Install]",
    "WantedBy=multi-user.target",
    "",
  }) do service[#service + 1] = line end
  local socket = concat({
    "[Unit]",
    format("Description=%s (zever app) socket", o.name),
    "",
    "[Socket]",
    format("ListenStream=%s", o.listen),
    "NoDelay=true",
    "Backlog=511",
    "",
    "[Install]",
    "WantedBy=sockets.target",
    "",
  }, "\n")
  return concat(service, "\n"), socket
end

M.command = {
  name = "systemd-unit",
  summary = "Print a hardened systemd service and socket unit for the app",
  usage = "zever systemd-unit [app] [--name NAME] [--exec PATH] [--listen HOST:PORT] [-o DIR]",
  json = true,
  dry_run = true,
  flags = {
    cliapp.FLAG,
    { name = "name", arg = "NAME", summary = "the units' name (default: the app folder's name)" },
    { name = "exec", arg = "PATH", summary = "the program systemd starts: a bundle, or zever " ..
      "(default: this bundle, or this zever serving the app folder)" },
    { name = "listen", arg = "HOST:PORT", summary = "the socket's address (default: http.listen)" },
    { name = "o", arg = "DIR", summary = "write NAME.service and NAME.socket in DIR" },
  },
  run = function(args, flags)
    if args[2] then return 2, "one app only; usage: " .. M.command.usage end
    local target, terr = cliapp.resolve(flags, args[1], "systemd-unit")
    if not target then return 2, terr end
    local cfg, err = cliapp.config(target)
    if not cfg then return 1, "invalid configuration:\n" .. tostring(err) end
    local name = flags.name or (target.dir:match("([^/]+)$") or "app"):gsub("[^%w_.-]", "-")
    if not name:match("^[%w_.-]+$") then return 2, "--name wants letters, digits, _ . -" end
    local exec = flags.exec
    if exec then
      exec = paths.absolute(exec) .. " serve"
    elseif require("zever.bundle").active then
      exec = sys.exe() .. " serve"
    else
      exec = format("%s serve %s", sys.exe(), target.file or target.dir)
    end
    local listen = flags.listen or cfg.http.listen
    if not listen:match("^%[?[^%]]*%]?:%d+$") then
      return 2, 'want --listen host:port, got "' .. listen .. '"'
    end
    -- A SQLite database goes to the state directory, the one writable place.
    local file = (cfg.db.dsn or ""):match("^sqlite:(.+)$")
    local dsn = file and file ~= ":memory:" and
      format("sqlite:/var/lib/%s/%s", name, file:match("([^/]+)$")) or nil
    local service, socket = render({ name = name, exec = exec, listen = listen,
      drain = cfg.http.drain or 10, dsn = dsn })
    local output = require "zever.cli.output"
    if flags.o then
      if flags["dry-run"] then
        output.would(flags, { { action = "write", target = flags.o .. "/" .. name .. ".service" },
          { action = "write", target = flags.o .. "/" .. name .. ".socket" } })
        return 0
      end
      local written = {}
      for _, ext in ipairs({ "service", "socket" }) do
        local text = ext == "service" and service or socket
        local path = flags.o .. "/" .. name .. "." .. ext
        local f, ferr = io.open(path, "w")
        if not f then return 1, format("cannot write %s: %s", path, tostring(ferr)) end
        f:write(text)
        f:close()
        written[#written + 1] = path
        if not flags.json then print(path) end
      end
      if flags.json then output.emit(flags, { written = written }) end
      return 0
    end
    -- Without -o nothing is written: --dry-run prints the units as usual.
    output.emit(flags, { name = name, service = service, socket = socket },
      "# " .. name .. ".service\n" .. service .. "\n# " .. name .. ".socket\n" .. socket:gsub("\n$", ""))
    return 0
  end,
}

return M.command
