-- zever.server: serving an app over HTTP.
--
--   server.listen(app, opts)  -> the zever.http server, on this thread's event loop
--   server.run(opts)          -> exit code: the `zever serve` process (main thread)
--   server.worker(payload)    -- entry point of each worker thread (zever.threads)
--   server.reexec()           -- this process becomes a fresh run of its command line
--
-- The process model (DESIGN.md §2): the main thread starts N worker threads; each has its own
-- Lua state and event loop, loads the app, and listens on the same address with SO_REUSEPORT,
-- so the kernel spreads connections. The main thread only waits for signals: the first
-- SIGTERM/SIGINT drains every worker (stop accepting, finish in-flight requests up to the
-- deadline) and exits 0; a second one exits at once. SIGHUP reloads: the configuration and the
-- app are read again (opts.reload), a new set of workers starts on the same address, and the
-- old set drains once the new one had a moment to bind (see M.run). A reload that fails (the
-- configuration is invalid, the app does not load) is logged and the old workers keep serving.

local http = require "zever.http"
local systemd = require "zever.systemd"
local loop = require "zever.loop"
local sys = require "zever.sys"
local json = require "zever.json"

local format, now, floor, type, pairs, ipairs, tostring = string.format, sys.now, math.floor,
  type, pairs, ipairs, tostring
local ffi = require "ffi"

local M = {}

M.load_app = require("zever.app").load

local function access_text(req, res, bytes, started)
  local id = rawget(req, "_request_id") -- set by zever.middleware.request_id
  local tenant = rawget(req, "tenant")  -- set by app.tenant:middleware() (zever.tenant)
  return format("%s %s %d %d %.3fms%s%s\n", req.method, req.path, res.code, bytes,
    (now() - started) * 1000, id and " id=" .. id or "", tenant and " tenant=" .. tenant or "")
end

-- The line's table starts from constant values so that precompiled bytecode keeps its seven
-- slots (spec/zever/hot_templates_spec.lua); id and tenant may be nil (then not written).
local function access_json(req, res, bytes, started)
  local t = { method = false, path = false, status = 0, bytes = 0, ms = 0, id = false,
    tenant = false }
  t.method, t.path, t.status, t.bytes = req.method, req.path, res.code, bytes
  t.ms = floor((now() - started) * 1e6) / 1000
  t.id, t.tenant = req.id, rawget(req, "tenant")
  return json.encode(t) .. "\n"
end

-- The answer goes out through zv_http_respond_ffi (host/http/l_http.c) when it can: the
-- request's trace then runs through it instead of stopping at a classic C API call. Responses
-- with up to four headers (the content type and three more: a security header and a request id
-- from middleware are common) take that way; others, and every case in which creq:respond
-- raises, go through creq:respond. No loop here: a loop inside the request's trace makes LuaJIT
-- abort it, so each count has its own straight-line case.
require "zever.cdef.http"
local respond_ffi
do
  local ok, fn = pcall(function() return ffi.C.zv_http_respond_ffi end)
  if ok then respond_ffi = fn end
end
local hbuf = ffi.new("zv_http_str_t[8]")

local function respond(creq, code, body, h)
  -- How many headers: told by the first empty slot, not by #h, which a trace runs as a call of
  -- lj_tab_len (~30 instructions, with finish's two: ~110 of a /hello request, BENCHMARKS.md
  -- "Session 14"). A headers array is a sequence of name, value pairs: a hole or an odd count
  -- fails the type checks below and goes to creq:respond, as before.
  if respond_ffi and type(code) == "number" and type(body) == "string" then
    local rc
    local a, b = h[1], h[2]
    if a == nil then
      rc = respond_ffi(creq, code, body, #body, hbuf, 0)
    elseif h[3] == nil then
      if type(a) == "string" and type(b) == "string" then
        hbuf[0].p, hbuf[0].n, hbuf[1].p, hbuf[1].n = a, #a, b, #b
        rc = respond_ffi(creq, code, body, #body, hbuf, 1)
      end
    elseif h[5] == nil then
      local c, d = h[3], h[4]
      if type(a) == "string" and type(b) == "string" and type(c) == "string"
        and type(d) == "string" then
        hbuf[0].p, hbuf[0].n, hbuf[1].p, hbuf[1].n = a, #a, b, #b
        hbuf[2].p, hbuf[2].n, hbuf[3].p, hbuf[3].n = c, #c, d, #d
        rc = respond_ffi(creq, code, body, #body, hbuf, 2)
      end
    elseif h[7] == nil then
      local c, d, e, f = h[3], h[4], h[5], h[6]
      if type(a) == "string" and type(b) == "string" and type(c) == "string"
        and type(d) == "string" and type(e) == "string" and type(f) == "string" then
        hbuf[0].p, hbuf[0].n, hbuf[1].p, hbuf[1].n = a, #a, b, #b
        hbuf[2].p, hbuf[2].n, hbuf[3].p, hbuf[3].n = c, #c, d, #d
        hbuf[4].p, hbuf[4].n, hbuf[5].p, hbuf[5].n = e, #e, f, #f
        rc = respond_ffi(creq, code, body, #body, hbuf, 3)
      end
    elseif h[9] == nil then
      local c, d, e, f, g, k = h[3], h[4], h[5], h[6], h[7], h[8]
      if type(a) == "string" and type(b) == "string" and type(c) == "string"
        and type(d) == "string" and type(e) == "string" and type(f) == "string"
        and type(g) == "string" and type(k) == "string" then
        hbuf[0].p, hbuf[0].n, hbuf[1].p, hbuf[1].n = a, #a, b, #b
        hbuf[2].p, hbuf[2].n, hbuf[3].p, hbuf[3].n = c, #c, d, #d
        hbuf[4].p, hbuf[4].n, hbuf[5].p, hbuf[5].n = e, #e, f, #f
        hbuf[6].p, hbuf[6].n, hbuf[7].p, hbuf[7].n = g, #g, k, #k
        rc = respond_ffi(creq, code, body, #body, hbuf, 4)
      end
    end
    if rc == 0 then return true end
    if rc == 1 then return nil, "closed" end
  end
  -- Answered already: the handler timeout cancelled the request (503 went out).
  if creq:answered() then return nil, "closed" end
  return creq:respond(code, body, h)
end

-- opts: host, port, access_log (false | "text" | "json"), limits (a table of zever.http
-- options: max_body_bytes, the timeouts, max_connections, ...).
-- zever.http runs the request function in a pooled coroutine of its own, so a handler may wait.
function M.listen(app, opts)
  local conf = { host = opts.host or "127.0.0.1", port = opts.port or 8080, reuseport = true }
  if opts.fd then conf.fd = opts.fd end -- socket activation: accept on systemd's socket
  for k, v in pairs(opts.limits or {}) do conf[k] = v end
  if app.statics and #app.statics > 0 then conf.static = app.statics end
  -- A route with a timeout of its own needs the watchdog even when the server has none.
  -- Request bodies stream only when a route asks for it (stream_body): then up to the largest
  -- of the routes' max_body (default http.max_stream_bytes) (docs/streaming.md).
  local stream_max = 0
  for _, route in pairs(app.routes or {}) do
    if route.timeout then conf.watchdog = true end
    if route.stream_body then
      stream_max = math.max(stream_max, route.max_body or conf.max_stream_bytes or 2 ^ 30)
    end
  end
  conf.max_stream_bytes = stream_max
  if opts.tls then
    local ctx, err = require("zever.tls").context(opts.tls)
    if not ctx then error(tostring(err), 0) end
    conf.tls = ctx
  end
  -- HTTP/2: over TLS (ALPN h2), or h2c with prior knowledge on a plain port.
  if opts.h2 then conf.tls = require("zever.h2").layer(conf.tls) end
  local log = opts.access_log == "json" and access_json or opts.access_log and access_text or nil
  app.access_log = log
  app.access_log_id = log == access_json or nil
  local quiet = rawget(app, "quiet_paths") -- app:health()'s paths stay out of the access log
  local observe = rawget(app, "observe_request") -- app:metrics(): the HTTP metrics
  local obs_start, obs_finish = observe and observe.start, observe and observe.finish
  return http.listen(conf, function(creq, method, path, query, streamed)
    local started = log and now()
    local t0 = obs_start and obs_start()
    local res, req, rid = app:dispatch(method, path, query, creq, streamed)
    -- The C request's headers are gone once it is answered: take the id first if it is logged.
    if log == access_json then local _ = req.id end
    -- A streamed response (zever.stream) was finished by dispatch.
    if not res.streamed then respond(creq, res.code, res.body, res.headers) end
    if t0 then obs_finish(t0, rid, method, res.code) end
    if started and not (quiet and quiet[path]) then
      io.stderr:write(log(req, res, res.streamed and res.sent or #res.body, started))
    end
  end)
end

-- Each worker thread: load the app, listen, serve until told to drain.
function M.worker(payload, index)
  -- Loading the app runs once: interpreting it costs less than recording and compiling its
  -- loops (a third of the instructions before the first request, BENCHMARKS.md "Deploy:
  -- static files from the bundle, first request"); the JIT is on from the first request.
  require("jit").off()
  -- No collection while the app loads (most of what it allocates stays: modules, routes): the
  -- collector is stopped here and restarted before the first request, its first cycle due
  -- when the heap has doubled ("restart", -1 sets LuaJIT's threshold from the pause). A higher
  -- pause alone did not help: it applies only once the state's first cycle has ended.
  collectgarbage("stop")
  -- The payload: the options as JSON, then after a newline the configuration the main thread
  -- loaded for this app (zever.app.export), which the worker takes instead of reading it again.
  local nl = payload:find("\n", 1, true)
  local opts = json.decode(nl and payload:sub(1, nl - 1) or payload)
  if nl then require("zever.app").preload(payload:sub(nl + 1)) end
  local app = M.load_app(opts.app, opts.root)
  local srv, err = M.listen(app, opts)
  if not srv then error(err, 0) end
  -- Start serving with the JIT on and clean: drop any traces of loading the app and reset
  -- LuaJIT's hot counters (setting hotloop, here to its default, re-initialises them). Functions that ran
  -- while the app loaded would otherwise get hot first and become roots of their own, so a
  -- request would run as several traces linked through the interpreter instead of one from the
  -- request function down (~120 instructions a request on /hello, BENCHMARKS.md).
  collectgarbage("restart", -1)
  local jit = require "jit"
  jit.on()
  jit.flush()
  jit.opt.start("hotloop=56")
  -- zever dev: say "listening" to the main thread, which watches ready_dir (see M.run).
  if opts.ready_dir then
    local f = io.open(format("%s/%d.%d", opts.ready_dir, opts.generation or 0, index), "w")
    if f then f:close() end
  end
  -- systemd (Type=notify): the last worker of this generation to listen says READY=1.
  systemd.arrived(opts.generation or 0, opts.workers, "serving " .. tostring(opts.app))
  -- TLS with a redirect port: plain HTTP there answers with the HTTPS address.
  local redir
  if opts.tls and opts.tls.redirect_port then
    redir, err = http.listen({ host = opts.tls.redirect_host, port = opts.tls.redirect_port,
      reuseport = true }, require("zever.tls").redirect(srv:port()))
    if not redir then error(err, 0) end
  end
  local retired = false
  require("zever.threads").on_message(function(msg)
    if msg == "drain" then
      if redir then redir:drain(opts.drain or 10) end
      srv:drain(opts.drain or 10, function() loop.stop() end)
    elseif msg == "retire" and not retired then
      -- zever dev's reload. Stop listening; what comes on the open connections is answered
      -- with Connection: close (srv:close), so keep-alive clients move to the new workers
      -- between requests instead of meeting a closed socket; a second later drain what is
      -- left (idle connections, requests still running).
      retired = true
      srv:close()
      loop.after(1, function()
        if not pcall(srv.drain, srv, opts.drain or 10, function() loop.stop() end) then
          loop.stop()   -- every connection closed already: the server finished
        end
      end)
    end
  end)
  if index == 1 and not opts.quiet then
    io.stderr:write(format("zever: serving %s on %s://%s:%d (%d workers)\n", opts.app,
      opts.tls and "https" or "http", opts.host, srv:port(), opts.workers))
  end
  loop.run()
  local ok, errs = app:close()
  if not ok then io.stderr:write("zever: closing the app: ", tostring(errs), "\n") end
end

-- Checks that host:port is free and returns the port (a free one for port 0). Workers bind with
-- SO_REUSEPORT, which would happily share a port with another zever process of the same user;
-- the probe binds without it, so a port in use is an error here rather than a silent split.
local function probe(host, port)
  local srv, err = http.listen({ host = host, port = port, reuseport = false }, function() end)
  if not srv then error(err, 0) end
  local got = srv:port()
  srv:close()
  return got
end

-- Descriptors a worker needs beside its connections (listener, epoll, loop, files, clients).
local FD_RESERVE = 64

-- Raises RLIMIT_NOFILE for workers x max_connections and warns when that cannot fit; then the
-- per-worker cap is lowered to what fits, so that the cap, not accept(2)'s EMFILE, is what a
-- flood of connections meets. Returns the max_connections the workers use.
local function fit_nofile(opts)
  local limits = opts.limits or {}
  local per = limits.max_connections or 10000
  local want = opts.workers * (per + FD_RESERVE) + FD_RESERVE
  local soft, hard = http.nofile(want)
  if not soft or soft >= want then return per end
  local fit = floor((soft - FD_RESERVE) / opts.workers) - FD_RESERVE
  if fit < 1 then fit = 1 end
  io.stderr:write(format("zever: http.max_connections %d x %d workers needs %d file " ..
    "descriptors; RLIMIT_NOFILE is %d (hard %s): each worker takes at most %d connections " ..
    "(raise the limit with ulimit -n, or lower http.max_connections)\n", per, opts.workers,
    want, soft, tostring(hard), fit))
  return fit
end

-- Starts one set of workers for opts; returns the generation { pool, alive, opts }.
local function start_workers(opts, on_all_exited)
  local threads = require "zever.threads"
  local payload = {}
  for k, v in pairs(opts) do
    if type(v) ~= "function" then payload[k] = v end
  end
  payload.preset = nil
  local gen = { alive = opts.workers, opts = opts, failed = false }
  gen.pool = threads.start(opts.workers, "zever.server",
    json.encode(payload) .. (opts.preset and "\n" .. opts.preset or ""))
  gen.pool:on_exit(function(i, ok, err)
    gen.alive = gen.alive - 1
    if not ok then
      gen.failed = true
      io.stderr:write(format("zever: worker %d failed: %s\n", i, tostring(err)))
    end
    on_all_exited(gen, ok)
  end)
  return gen
end

-- How long an old set of workers keeps listening beside the new one after a reload, so that
-- the new workers have bound the address before the old ones stop accepting.
local RELOAD_OVERLAP = 0.5

-- The `zever serve` process. opts: app, root (the app folder, for its zever.yaml; default: the
-- app file's folder), host, port, workers, access_log, drain, limits, and
-- reload (optional): a function returning fresh opts (or nil, message) for SIGHUP.
-- watch (optional, zever dev): called once with reload(why), which reloads as SIGHUP does.
-- ready_dir (optional, zever dev): each worker writes <generation>.<index> there once it
-- listens; the old workers of a reload drain as soon as every new one did (fs events), not
-- after RELOAD_OVERLAP.
function M.run(opts)
  -- Fail early, in the main thread, with a clear message; the workers take the configuration
  -- it loaded (zever.app.export).
  local zapp = require "zever.app"
  zapp.exporting = true
  local loaded, app, path = pcall(M.load_app, opts.app, opts.root)
  zapp.exporting = false
  if not loaded then error(app, 0) end
  opts.app = path
  opts.preset = zapp.export(app)
  local asked_port = opts.port
  -- Socket activation (LISTEN_FDS): every worker accepts on systemd's first socket, which
  -- stays open across restarts, so no connection is refused; there is nothing to probe.
  local fds = systemd.listen_fds()
  if fds then opts.fd = fds[1] end
  if not opts.fd then opts.port = probe(opts.host, opts.port) end
  if opts.tls and opts.tls.redirect_port then
    opts.tls.asked_redirect = opts.tls.redirect_port
    opts.tls.redirect_port = probe(opts.tls.redirect_host, opts.tls.redirect_port)
  end
  opts.limits = opts.limits or {}
  opts.limits.max_connections = fit_nofile(opts)
  local gens, current, signals, failed = {}, nil, 0, false
  local function live()
    local n = 0
    for _, g in ipairs(gens) do n = n + g.alive end
    return n
  end
  local function on_exited(gen, ok)
    if not ok and gen == current then
      failed = true
      if signals == 0 then gen.pool:send(0, "drain") end
    end
    if gen.retired and gen.alive == 0 and signals == 0 then
      -- From here on every new connection reaches the workers of the reload.
      io.stderr:write("zever: reload done, the previous workers finished\n")
    end
    if live() == 0 then loop.stop() end
  end
  current = start_workers(opts, on_exited)
  gens[1] = current
  -- `zever serve` comes here with the collector stopped (gc = "own" in cmd/zever/serve.lua):
  -- what it loaded stays; from here on it collects, its first cycle due when the heap doubled.
  if not collectgarbage("isrunning") then collectgarbage("restart", -1) end
  local function on_signal(name)
    signals = signals + 1
    if signals > 1 then
      io.stderr:write("zever: second ", name, ", exiting now\n")
      os.exit(1)
    end
    io.stderr:write(format("zever: %s, draining (up to %gs)\n", name, current.opts.drain))
    systemd.stopping()
    systemd.forward(name == "SIGINT" and 2 or 15) -- as PID 1: the other processes stop too
    for _, g in ipairs(gens) do
      if g.alive > 0 then g.pool:send(0, "drain") end
    end
  end
  local generation = 0
  local function on_hup(why)
    if signals > 0 then return end
    why = why or "SIGHUP"
    if not opts.reload then
      io.stderr:write("zever: SIGHUP ignored (nothing to reload)\n")
      return
    end
    io.stderr:write("zever: ", why, ", reloading the configuration and the app\n")
    systemd.reloading()
    local ok, new, err = pcall(opts.reload)
    if ok and new then
      ok, err = pcall(function()
        zapp.exporting = true
        local fresh, a, p = pcall(M.load_app, new.app, new.root)
        zapp.exporting = false
        if not fresh then error(a, 0) end
        new.app = p
        new.preset = zapp.export(a)
        if new.host == current.opts.host and new.port == asked_port then
          new.port = current.opts.port -- the same address: share it (SO_REUSEPORT)
        else
          asked_port = new.port
          new.port = probe(new.host, new.port)
        end
        local rt, ct = new.tls, current.opts.tls
        if rt and rt.redirect_port then
          if ct and ct.redirect_host == rt.redirect_host and ct.asked_redirect == rt.redirect_port then
            rt.redirect_port = ct.redirect_port
          else
            rt.asked_redirect = rt.redirect_port
            rt.redirect_port = probe(rt.redirect_host, rt.redirect_port)
          end
        end
        new.limits = new.limits or {}
        new.limits.max_connections = fit_nofile(new)
        new.reload = opts.reload
      end)
    elseif ok then
      ok = false
    else
      err = new
    end
    if not ok then
      io.stderr:write("zever: reload failed, the current workers keep serving: ",
        tostring(err), "\n")
      systemd.ready("reload failed; serving the previous configuration")
      return
    end
    local old = current
    generation = generation + 1
    new.fd = opts.fd
    new.generation, new.ready_dir = generation, opts.ready_dir
    local function retire()
      if old.alive > 0 and not old.retired then
        old.retired = true
        old.pool:send(0, opts.ready_dir and "retire" or "drain")
      end
    end
    if opts.ready_dir then
      local prefix, seen, watcher = generation .. ".", 0, nil
      watcher = loop.watch(opts.ready_dir, function(name)
        if name and name:sub(1, #prefix) == prefix and os.remove(opts.ready_dir .. "/" .. name) then
          seen = seen + 1
          if seen == new.workers then
            watcher:stop()
            retire()
          end
        end
      end)
    end
    current = start_workers(new, on_exited)
    gens[#gens + 1] = current
    loop.after(opts.ready_dir and 10 or RELOAD_OVERLAP, retire)
  end
  local term, int = loop.signal("SIGTERM", on_signal), loop.signal("SIGINT", on_signal)
  local hup = loop.signal("SIGHUP", on_hup)
  local init = systemd.init(loop) -- as PID 1 (a container): reap orphans
  local interval = systemd.watchdog_interval() -- WatchdogSec=: WATCHDOG=1 at half of it
  local watchdog = interval and loop.every(interval, function() systemd.notify("WATCHDOG=1") end)
  if opts.watch then opts.watch(on_hup) end
  while live() > 0 do loop.run() end
  term:stop()
  int:stop()
  hup:stop()
  if watchdog then watchdog:stop() end
  if init then init:stop() end
  for _, g in ipairs(gens) do
    g.pool:join()
    if g.failed and g == current then failed = true end
  end
  return failed and 1 or 0
end

-- Replaces this process with a fresh run of its own command line (read from
-- /proc/self/cmdline), so that the configuration and the app are read again: SIGHUP of
-- `zever worker`, after it drained. Returns only on failure: nil, message.
function M.reexec()
  local f = io.open("/proc/self/cmdline", "rb")
  if not f then return nil, "cannot read /proc/self/cmdline" end
  local line = f:read("*a")
  f:close()
  local args = {}
  for a in line:gmatch("([^%z]*)%z") do args[#args + 1] = a end
  if #args == 0 then return nil, "empty command line" end
  require "zever.cdef.libc" -- execv, strerror
  local argv = ffi.new("char *[?]", #args + 1)
  local keep = {}
  for i, a in ipairs(args) do
    keep[i] = ffi.new("char[?]", #a + 1, a)
    argv[i - 1] = keep[i]
  end
  argv[#args] = nil
  io.stderr:flush()
  io.stdout:flush()
  ffi.C.execv(sys.exe(), argv)
  return nil, "execv failed: " .. ffi.string(ffi.C.strerror(ffi.errno()))
end

return M
