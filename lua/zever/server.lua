-- zever.server: serving an app over HTTP.
--
--   server.listen(app, opts)  -> the zever.http server, on this thread's event loop
--   server.run(opts)          -> exit code: the `zever serve` process (main thread)
--   server.worker(payload)    -- entry point of each worker thread (zever.threads)
--
-- The process model (DESIGN.md §2): the main thread starts N worker threads; each has its own
-- Lua state and event loop, loads the app, and listens on the same address with SO_REUSEPORT,
-- so the kernel spreads connections. The main thread only waits for signals: the first
-- SIGTERM/SIGINT drains every worker (stop accepting, finish in-flight requests up to the
-- deadline) and exits 0; a second one exits at once.

local http = require "zever.http"
local loop = require "zever.loop"
local sched = require "zever.sched"
local sys = require "zever.sys"
local json = require "zever.json"

local format, now, floor = string.format, sys.now, math.floor
local spawn = sched.spawn

local M = {}

M.load_app = require("zever.app").load

local function access_text(req, res, bytes, started)
  return format("%s %s %d %d %.3fms\n", req.method, req.path, res.code, bytes,
    (now() - started) * 1000)
end

local function access_json(req, res, bytes, started)
  return json.encode({ method = req.method, path = req.path, status = res.code, bytes = bytes,
    ms = floor((now() - started) * 1e6) / 1000, id = req.id }) .. "\n"
end

-- Serves one request from zever.http: runs inside a pooled coroutine.
local function handle(app, creq, method, path, query)
  local started = app.access_log and now()
  local res, req = app:dispatch(method, path, query, creq)
  -- The C request's headers are gone once it is answered: take the id first if it is logged.
  if started and app.access_log == access_json then local _ = req.id end
  creq:respond(res.code, res.body, res.headers)
  if started then
    io.stderr:write(app.access_log(req, res, #res.body, started))
  end
end

-- opts: host, port, access_log (false | "text" | "json"), limits (a table of zever.http limits).
function M.listen(app, opts)
  local conf = { host = opts.host or "127.0.0.1", port = opts.port or 8080, reuseport = true }
  for k, v in pairs(opts.limits or {}) do conf[k] = v end
  app.access_log = opts.access_log == "json" and access_json or opts.access_log and access_text
    or nil
  -- spawn passes four arguments: the app is bound here, so that the query string is the fourth.
  local function serve(creq, method, path, query)
    return handle(app, creq, method, path, query)
  end
  return http.listen(conf, function(creq, method, path, query)
    spawn(serve, creq, method, path, query)
  end)
end

-- Each worker thread: load the app, listen, serve until told to drain.
function M.worker(payload, index)
  local opts = json.decode(payload)
  local app = M.load_app(opts.app)
  local srv, err = M.listen(app, opts)
  if not srv then error(err, 0) end
  require("zever.threads").on_message(function(msg)
    if msg == "drain" then
      srv:drain(opts.drain or 10, function() loop.stop() end)
    end
  end)
  if index == 1 and not opts.quiet then
    io.stderr:write(format("zever: serving %s on http://%s:%d (%d workers)\n", opts.app, opts.host,
      srv:port(), opts.workers))
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

-- The `zever serve` process. opts: app, host, port, workers, access_log, drain, limits.
function M.run(opts)
  local _, path = M.load_app(opts.app)   -- fail early, in the main thread, with a clear message
  opts.app = path
  opts.port = probe(opts.host, opts.port)
  local threads = require "zever.threads"
  local pool = threads.start(opts.workers, "zever.server", json.encode(opts))
  local alive, failed, signals = opts.workers, false, 0
  pool:on_exit(function(i, ok, err)
    alive = alive - 1
    if not ok then
      failed = true
      io.stderr:write(format("zever: worker %d failed: %s\n", i, tostring(err)))
      if signals == 0 then pool:send(0, "drain") end
    end
    if alive == 0 then loop.stop() end
  end)
  local function on_signal(name)
    signals = signals + 1
    if signals > 1 then
      io.stderr:write("zever: second ", name, ", exiting now\n")
      os.exit(1)
    end
    io.stderr:write(format("zever: %s, draining (up to %gs)\n", name, opts.drain))
    pool:send(0, "drain")
  end
  local term, int = loop.signal("SIGTERM", on_signal), loop.signal("SIGINT", on_signal)
  while alive > 0 do loop.run() end
  term:stop()
  int:stop()
  pool:join()
  return failed and 1 or 0
end

return M
