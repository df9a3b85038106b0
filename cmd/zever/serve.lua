-- zever serve [app] [--listen host:port] [--workers N] ...: serves an app over HTTP with N
-- worker threads, each with its own event loop and Lua state, sharing the port with
-- SO_REUSEPORT.
--
-- Settings come from the flags, then the configuration (zever.yaml / zever.json next to the
-- app, ZEVER_ENV's file, HTTP_* variables: zever.config), then the defaults. Every numeric
-- flag is checked before anything starts (exit 2 with a message). SIGHUP reads the
-- configuration and the app again and replaces the workers (zever.server.run).

local sys = require "zever.sys"
local cliapp = require "zever.cli.app"

local format, tonumber, type = string.format, tonumber, type

local function cpu_count()
  local f = io.popen("nproc 2>/dev/null")
  local n = f and tonumber(f:read("*l"))
  if f then f:close() end
  return n or 1
end

-- Flags of zever.http options: flag name, option (= http.* field), kind, lowest value.
local LIMITS = {
  { "max-body", "max_body_bytes", "integer", 0 },
  { "max-stream", "max_stream_bytes", "integer", 0 },
  { "max-header", "max_header_bytes", "integer", 64 },
  { "max-connections", "max_connections", "integer", 1 },
  { "header-timeout", "header_timeout", "duration", 0.001 },
  { "body-timeout", "body_timeout", "duration", 0.001 },
  { "keepalive-timeout", "keepalive_timeout", "duration", 0.001 },
  { "write-timeout", "write_timeout", "duration", 0.001 },
  { "handler-timeout", "handler_timeout", "duration", 0 },
}

-- A duration flag: seconds ("2.5") or a zever.duration ("3s", "1m30s", "PT3S").
local function duration(raw)
  local n = tonumber(raw)
  if n then return n end
  local ok, secs = pcall(require("zever.duration").parse, raw)
  if ok and type(secs) == "number" then return secs end
end

-- The value of flag name (raw text) checked as kind >= min; or nil, message.
local function check(name, raw, kind, min)
  local v = kind == "duration" and duration(raw) or tonumber(raw)
  if v == nil or v ~= v or v == math.huge then
    return nil, format('--%s wants %s, got "%s"', name,
      kind == "duration" and "a duration in seconds (or like 3s, 1m30s)" or "a number", raw)
  end
  if kind == "integer" and v % 1 ~= 0 then
    return nil, format('--%s wants a whole number, got "%s"', name, raw)
  end
  if v < min then
    return nil, format('--%s must be >= %s, got "%s"', name, tostring(min), raw)
  end
  return v
end

-- TLS from the flags over the configuration: false (plain HTTP), the options of zever.tls (with
-- redirect_host/redirect_port for the plain-HTTP redirect listener), or nil, message. The
-- certificate and key are loaded and checked here, before anything starts.
local function tls_options(http, flags, h2)
  local cert = flags["tls-cert"] or http.tls_cert or ""
  local key = flags["tls-key"] or http.tls_key or ""
  local redirect = flags["tls-redirect"] or http.tls_redirect or ""
  if cert == "" and key == "" then
    if redirect ~= "" then return nil, "--tls-redirect needs --tls-cert and --tls-key" end
    return false
  end
  if cert == "" or key == "" then
    return nil, "TLS needs both a certificate and a key (--tls-cert and --tls-key, or " ..
      "http.tls_cert and http.tls_key)"
  end
  local t = { cert = cert, key = key, min_version = http.tls_min_version,
    ciphers = http.tls_ciphers, alpn = http.tls_alpn, h2 = h2 or nil,
    ocsp = flags["tls-ocsp"] or http.tls_ocsp }
  if h2 and t.alpn == "http/1.1" then t.alpn = "h2,http/1.1" end
  local ctx, err = require("zever.tls").context(t)
  if not ctx then return nil, "invalid TLS configuration: " .. tostring(err) end
  if redirect ~= "" then
    local rh, rp = redirect:match("^%[?([^%]]*)%]?:(%d+)$")
    if not rh then return nil, 'want --tls-redirect host:port, got "' .. redirect .. '"' end
    t.redirect_host, t.redirect_port = rh, tonumber(rp)
  end
  return t
end

-- Builds zever.server.run's options from the flags over the configuration; nil, message on a
-- bad flag or configuration (exit 2).
local function options(args, flags)
  -- The app: positional, --app or -C DIR; a folder serves its http.app (zever.cli.app), which
  -- config.load has made absolute against the app folder.
  local target, terr = cliapp.resolve(flags, args[1], "serve")
  if not target then return nil, terr end
  local cfg, err = cliapp.config(target)
  if not cfg then return nil, "invalid configuration:\n" .. tostring(err) end
  local http = cfg.http
  local app = target.file or http.app
  local listen = flags.listen or http.listen
  local host, port = listen:match("^%[?([^%]]*)%]?:(%d+)$")
  if not host then return nil, 'want --listen host:port, got "' .. listen .. '"' end
  local workers = http.workers
  if flags.workers ~= nil then
    local w, e = check("workers", flags.workers, "integer", 1)
    if not w then return nil, e end
    workers = w
  end
  if workers == 0 then workers = cpu_count() end
  local log = flags["access-log"] or http.access_log
  if log ~= "text" and log ~= "json" and log ~= "off" then
    return nil, '--access-log wants text, json or off, got "' .. log .. '"'
  end
  local drain = http.drain
  if flags.drain ~= nil then
    local d, e = check("drain", flags.drain, "duration", 0)
    if not d then return nil, e end
    drain = d
  end
  local limits = {}
  for _, l in ipairs(LIMITS) do
    local v = http[l[2]]
    if flags[l[1]] ~= nil then
      local e
      v, e = check(l[1], flags[l[1]], l[3], l[4])
      if not v then return nil, e end
    end
    limits[l[2]] = v
  end
  local h2 = flags.h2 and true or http.h2
  local tls, tls_err = tls_options(http, flags, h2)
  if tls == nil then return nil, tls_err end
  return {
    app = app, root = target.dir, host = host, port = tonumber(port), workers = workers,
    access_log = log ~= "off" and log or false, drain = drain, limits = limits,
    home = sys.home(), tls = tls or nil, h2 = h2 or nil,
  }
end

local flags = {
  cliapp.FLAG,
  { name = "listen", arg = "HOST:PORT", summary = "address to listen on (default 127.0.0.1:8080)" },
  { name = "workers", arg = "N", summary = "worker threads (default: CPU count)" },
  { name = "access-log", arg = "FORMAT", summary = "text (default), json or off" },
  { name = "drain", arg = "SECONDS",
    summary = "how long in-flight requests may run after SIGTERM (default 10)" },
  { name = "max-body", arg = "BYTES", summary = "request body limit (default 1 MiB)" },
  { name = "max-stream", arg = "BYTES",
    summary = "body limit of a stream_body route without max_body (default 1 GiB)" },
  { name = "max-header", arg = "BYTES", summary = "request line + headers limit (default 8192)" },
  { name = "max-connections", arg = "N", summary = "open connections per worker (default 10000)" },
  { name = "header-timeout", arg = "SECONDS", summary = "time to read the headers (default 10)" },
  { name = "body-timeout", arg = "SECONDS", summary = "time to read the body (default 30)" },
  { name = "keepalive-timeout", arg = "SECONDS", summary = "idle keep-alive (default 75)" },
  { name = "write-timeout", arg = "SECONDS",
    summary = "no write progress this long closes (default 60)" },
  { name = "handler-timeout", arg = "SECONDS",
    summary = "a handler's time to answer; 0 = none (default 60)" },
  { name = "tls-cert", arg = "FILE", summary = "serve HTTPS with this PEM certificate (chain)" },
  { name = "tls-key", arg = "FILE", summary = "the PEM private key of --tls-cert" },
  { name = "tls-ocsp", arg = "FILE", summary = "staple this DER OCSP response (docs/tls.md)" },
  { name = "tls-redirect", arg = "HOST:PORT",
    summary = "also listen for plain HTTP there and redirect it to HTTPS" },
  { name = "h2", summary = "serve HTTP/2 too: h2 by ALPN over TLS, h2c (prior knowledge) without" },
}

return {
  name = "serve",
  json = false,
  dry_run = false,
  why = "a server that runs until stopped",
  -- The collector stays stopped (host/main.c) while the main thread loads the configuration
  -- and the app, which it keeps; zever.server.run restarts it once the workers are started.
  gc = "own",
  summary = "Serve an app over HTTP",
  usage = "zever serve [app.lua | dir] [--listen host:port] [--workers N] [--drain SECONDS] ...",
  flags = flags,
  options = options,   -- zever dev: the same flags over the same configuration
  run = function(args, given)
    -- The main thread only supervises (configuration, workers, signals): its Lua runs
    -- interpreted, which costs less than compiling code that runs once (each worker turns its
    -- own JIT on when it listens: zever.server.worker).
    require("jit").off()
    local opts, err = options(args, given)
    if not opts then return 2, err end
    -- SIGHUP: the same flags over the configuration as it is now.
    opts.reload = function() return options(args, given) end
    local server = require "zever.server"
    local ok, code = pcall(server.run, opts)
    if not ok then return 1, tostring(code) end
    return code
  end,
}
