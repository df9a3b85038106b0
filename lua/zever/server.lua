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
local sys = require "zever.sys"
local json = require "zever.json"

local format, now, floor, type = string.format, sys.now, math.floor, type
local ffi = require "ffi"

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

-- The answer goes out through zv_http_respond_ffi (host/http/l_http.c) when it can: the
-- request's trace then runs through it instead of stopping at a classic C API call. Responses
-- with up to two headers (the content type and one more) take that way; others, and every case
-- in which creq:respond raises, go through creq:respond. No loop here: a loop inside the
-- request's trace makes LuaJIT abort it.
require "zever.cdef.http"
local respond_ffi
do
  local ok, fn = pcall(function() return ffi.C.zv_http_respond_ffi end)
  if ok then respond_ffi = fn end
end
local hbuf = ffi.new("zv_http_str_t[4]")

local function respond(creq, code, body, h)
  local n = #h
  if respond_ffi and type(code) == "number" and type(body) == "string" and n <= 4 then
    local rc
    if n == 0 then
      rc = respond_ffi(creq, code, body, #body, hbuf, 0)
    elseif n == 2 then
      local a, b = h[1], h[2]
      if type(a) == "string" and type(b) == "string" then
        hbuf[0].p, hbuf[0].n, hbuf[1].p, hbuf[1].n = a, #a, b, #b
        rc = respond_ffi(creq, code, body, #body, hbuf, 1)
      end
    elseif n == 4 then
      local a, b, c, d = h[1], h[2], h[3], h[4]
      if type(a) == "string" and type(b) == "string" and type(c) == "string"
        and type(d) == "string" then
        hbuf[0].p, hbuf[0].n, hbuf[1].p, hbuf[1].n = a, #a, b, #b
        hbuf[2].p, hbuf[2].n, hbuf[3].p, hbuf[3].n = c, #c, d, #d
        rc = respond_ffi(creq, code, body, #body, hbuf, 2)
      end
    end
    if rc == 0 then return true end
    if rc == 1 then return nil, "closed" end
  end
  return creq:respond(code, body, h)
end

-- opts: host, port, access_log (false | "text" | "json"), limits (a table of zever.http limits).
-- zever.http runs the request function in a pooled coroutine of its own, so a handler may wait.
function M.listen(app, opts)
  local conf = { host = opts.host or "127.0.0.1", port = opts.port or 8080, reuseport = true }
  for k, v in pairs(opts.limits or {}) do conf[k] = v end
  local log = opts.access_log == "json" and access_json or opts.access_log and access_text or nil
  app.access_log = log
  return http.listen(conf, function(creq, method, path, query)
    local started = log and now()
    local res, req = app:dispatch(method, path, query, creq)
    -- The C request's headers are gone once it is answered: take the id first if it is logged.
    if log == access_json then local _ = req.id end
    respond(creq, res.code, res.body, res.headers)
    if started then
      io.stderr:write(log(req, res, #res.body, started))
    end
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
