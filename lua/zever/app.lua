-- zever.app: the application: routes, middleware, groups, named routes, error handling, and
-- dispatch of one request to a response.
--
--   local app = zever.app()
--   app:use(function(req, res, next) ... return next() end)
--   app:get("/hello", function(req, res) return "hello world" end)
--   app:get("user", "/users/:id", handler)          -- named: app:url_for("user", {id = 42})
--   app:route({"GET", "POST"}, "/form", handler)
--   app:get("/report", handler, { timeout = 5 })    -- route options: timeout (seconds) replaces
--                                                    -- http.handler_timeout for this route
--   app:group("/admin", function(r) r:use(auth); r:get("/stats", stats) end)
--   app:on_error(function(err, req, res) ... end)
--   app:static("/assets", "public", { max_age = 3600, immutable = false, index = "index.html",
--                                     precompressed = true })      -- docs/static.md
--
-- Routing is zever.router (a C radix trie). Middleware runs in registration order; app-level
-- middleware also runs for 404 and 405 answers, group middleware only for the group's routes.
-- A handler or middleware may wait (zever.sleep, I/O): dispatch runs inside a coroutine.

local router = require "zever.router"
local request = require "zever.request"
local response = require "zever.response"

local type, error, tostring, select, ipairs, pairs = type, error, tostring, select, ipairs, pairs
local format, concat, sort, xpcall, traceback = string.format, table.concat, table.sort, xpcall,
  debug.traceback
local apply, finish = response.apply, response.finish
local sub = string.sub
local ffi = require "ffi"

local M = {}

-- The router's FFI entry point (see zv_router_match_ffi in host/router/l_router.c): the common
-- case of dispatch (a hit, no percent-encoded parameter) without the classic C API, so that
-- LuaJIT compiles the call into the request's trace. Without the symbol (a host built without
-- -Wl,-E) every match goes through trie:match.
require "zever.cdef.router"
local match_ffi
do
  local ok, fn = pcall(function() return ffi.C.zv_router_match_ffi end)
  if ok then match_ffi = fn end
end
local found = ffi.new("zv_router_ffi_match_t")
local empty_params = router.empty_params
-- The routers the apps made: only these reach the FFI call, which trusts its pointer.
local tries = setmetatable({}, { __mode = "k" })

local METHODS = { GET = true, HEAD = true, POST = true, PUT = true, PATCH = true, DELETE = true,
  OPTIONS = true }

local App = {}

-- Batteries hang off the app (app.db, app.cache, ...): the container resolves each on first use
-- from the app's configuration (zever.yaml next to the app, then the environment).
-- app.metrics is also callable: app:metrics(opts) installs GET /metrics (zever.metrics).
-- The names are one string until an app is first asked for a key it does not hold: a worker
-- whose requests never do so keeps one string instead of a set of 35, and every string a
-- state holds counts toward the size of LuaJIT's string table, which each collection cycle
-- sweeps (docs/app.md, "Start-up heap").
local BATTERY_NAMES = "db cache queue jobs scheduler mailer limiter idempotency search vectors " ..
  "log crypto session password auth lock eventbus outbox breaker webhook flag i18n permission " ..
  "tenant storage media secrets notification analytics payment billing geo workflow metrics trace"
local BATTERIES

-- app.views: the app's templates (zever.template), in the folder http.views names (default
-- "views" next to app.lua), with url_for among the helpers; made on first use.
local function views_of(app)
  local cfg = app:config()
  local views = require("zever.template").views{ dir = cfg.http.views,
    helpers = { url_for = function(name, params) return app:url_for(name, params) end } }
  rawset(app, "views", views)
  return views
end

local MOUNTS = { static = true, websocket = true, broadcast = true, health = true }

function App.__index(app, key)
  local method = App[key]
  if method ~= nil then return method end
  if key == "views" then return views_of(app) end
  if BATTERIES == nil then
    BATTERIES = {}
    for name in BATTERY_NAMES:gmatch("%S+") do BATTERIES[name] = true end
  end
  if BATTERIES[key] then
    local battery, err = app:container():get(key)
    if battery == nil then error(tostring(err), 2) end
    rawset(app, key, battery)
    return battery
  end
  -- app:static, app:websocket, app:broadcast, app:health: zever.app.mounts, on first use.
  if MOUNTS[key] then
    require("zever.app.mounts").install(App)
    MOUNTS = {}
    return App[key]
  end
end

-- Set by zever.testing while it loads an app: apps made meanwhile call it with their merged
-- configuration before their container is built (a spec's own database file, captured mail).
M.configure = nil

-- True while `zever test` runs: the configuration is the test environment's (zever.test.yaml)
-- and the database a fresh :memory: one unless that configuration names one.
M.testing = false

local Group = {}
Group.__index = Group

function M.new()
  local trie = router.new()
  tries[trie] = true
  local app = setmetatable({
    trie = trie,
    routes = {},          -- { method, pattern, name, handler, chain, source }, by route id
    names = {},           -- name -> route
    middleware = {},      -- app-level, in order
    full_chains = setmetatable({}, { __mode = "k" }), -- chain -> chain with app middleware
    error_handler = nil,
    statics = {},         -- app:static mounts, served by zever.http in C before dispatch
    hits = {},            -- method -> path -> route id: the router's parameterless hits (match)
    nhits = 0,
    dir = M.loading_dir or ".", -- where its zever.yaml and relative database paths live
    _configure = M.configure,   -- zever.testing's hook: fn(app, cfg) before the container is built
  }, App)
  app.response_class = response.class(app)   -- res.app for res:render
  app.root = setmetatable({ app = app, prefix = "", middleware = app.middleware }, Group)
  return app
end

-- The next() a middleware receives: a callable object rather than a closure, because creating
-- closures stops LuaJIT's compiler (FNEW is not compiled) and this runs on every request. Its
-- constructor has constant values only, then the fields are set: a key whose value is an
-- expression has only a nil slot in the template, which precompiled bytecode (build/bc) drops,
-- and { chain = chain, i = i + 1, ... } cost 1,806 instructions instead of 846 loaded from
-- bytecode, four new-key inserts and their rehashes (BENCHMARKS.md "Session 10: /hello").
local steps, metas = {}, {} -- per position in a chain: see ensure_steps below

-- A result of nil or res itself (what a middleware's `return next()` gives) is answered here:
-- response.apply is then called once a request, for the handler's result, not once a step, so
-- it does not get hot before the request does (a function trace of its own, whose exits would
-- return below it: "NYI: return to lower frame").
local function run_chain(chain, i, req, res)
  local fn = chain[i]
  local a, b, c
  -- The last step: the next slot is empty (a chain is a sequence); not i == #chain, which a
  -- trace runs as a call of lj_tab_len.
  if chain[i + 1] == nil then
    a, b, c = fn(req, res)
  else
    local nxt = { chain = false, i = 0, req = false, res = false }
    nxt.chain, nxt.i, nxt.req, nxt.res = chain, i + 1, req, res
    a, b, c = fn(req, res, setmetatable(nxt, metas[i + 1] or metas[0]))
  end
  if a == nil or a == res then return res end
  return apply(res, a, b, c)
end

local function call_next(self)
  local i = self.i
  return (steps[i] or run_chain)(self.chain, i, self.req, self.res)
end

-- One copy of run_chain and of call_next per position in a chain (steps[i] runs chain[i], and
-- the next() that leads there has the metatable metas[i], whose __call is its own copy), so that
-- a request through middleware never has the same function twice on its stack. With one of
-- each for every position, a chain of k steps called them k times a request: they got hot
-- before the request's loop or function did and closed as traces of their own with an
-- "up-recursion" link, the request's trace stopped there, and those traces' exits fell back to
-- the interpreter (aborts "NYI: return to lower frame": returning into the xpcall below them;
-- BENCHMARKS.md "Session 11: dispatch"). A copy is the same bytecode (string.dump, load) with
-- the original's upvalues joined, made when a route or app:use first makes a chain that long.
-- Positions past MAX_STEPS share run_chain and metas[0].
local MAX_STEPS = 16
local dump, upvaluejoin, getinfo = string.dump, debug.upvaluejoin, debug.getinfo

local function copy_of(fn, name)
  local copy = load(dump(fn), name, "b")
  for k = 1, getinfo(fn, "u").nups do upvaluejoin(copy, k, fn, k) end
  return copy
end

steps[1], metas[0] = run_chain, { __call = call_next }

local function ensure_steps(n)
  if n > MAX_STEPS then n = MAX_STEPS end
  for i = #steps + 1, n do
    steps[i] = copy_of(run_chain, "=zever.app step " .. i)
    metas[i] = { __call = copy_of(call_next, "=zever.app next " .. i) }
  end
end

local function source_of(fn)
  local info = debug.getinfo(fn, "S")
  return info.short_src .. ":" .. tostring(info.linedefined)
end

-- Registers one route; the group's middleware chain is captured now, app-level middleware is
-- looked up per request so that app:use after a route still applies (as in Express).
local function add(group, methods, name, pattern, handler, level, opts)
  local app = group.app
  if type(pattern) ~= "string" then error("route pattern must be a string", level) end
  if type(handler) ~= "function" then error("route handler must be a function", level) end
  local timeout, source, stream_body, max_body
  if opts ~= nil then
    for k in pairs(opts) do
      if k ~= "timeout" and k ~= "source" and k ~= "stream_body" and k ~= "max_body" then
        error("unknown route option " .. tostring(k), level)
      end
    end
    -- stream_body: the handler reads the body itself (req:read, req:body_reader, req:form
    -- spooling from the socket) up to max_body bytes (docs/streaming.md).
    stream_body = opts.stream_body
    if stream_body ~= nil and type(stream_body) ~= "boolean" then
      error("route option stream_body must be a boolean", level)
    end
    max_body = opts.max_body
    if max_body ~= nil and (type(max_body) ~= "number" or max_body < 0 or max_body % 1 ~= 0) then
      error("route option max_body must be an integer number of bytes >= 0", level)
    end
    if max_body ~= nil and not stream_body then
      error("route option max_body is for stream_body routes (http.max_body_bytes bounds the others)",
        level)
    end
    timeout = opts.timeout
    if timeout ~= nil and (type(timeout) ~= "number" or timeout ~= timeout or timeout < 0 or
      timeout > 1e9) then
      error("route option timeout must be a number of seconds >= 0", level)
    end
    -- source: the function `zever routes` names instead of handler (a generated route's wrapper
    -- names the app's own handler).
    source = opts.source
    if source ~= nil and type(source) ~= "function" then
      error("route option source must be a function", level)
    end
  end
  if name ~= nil and type(name) ~= "string" then error("route name must be a string", level) end
  if name and app.names[name] then
    error(format('route name "%s" is already used by %s', name, app.names[name].pattern), level)
  end
  local full = group.prefix .. pattern
  if group.prefix ~= "" and pattern == "/" then full = group.prefix end
  local chain = {}
  if group ~= app.root then
    for _, mw in ipairs(group.middleware) do chain[#chain + 1] = mw end
  end
  chain[#chain + 1] = handler
  ensure_steps(#chain)
  -- The parameter names in pattern order (':' and '*' start a parameter only at the start of a
  -- segment), which is the order the router reports their values in.
  local param_names = {}
  for pname in full:gmatch("/[:*]([%w_]+)") do param_names[#param_names + 1] = pname end
  local route = { method = nil, pattern = full, name = name, handler = handler, chain = chain,
    source = source_of(source or handler), param_names = param_names, timeout = timeout,
    stream_body = stream_body or nil, max_body = max_body,
    -- Whether dispatch has anything of the route's own to apply (timeout, body rules): decided
    -- here, so that a request of a route without them reads none of them.
    has_options = (timeout ~= nil or stream_body or max_body ~= nil) or nil }
  for _, m in ipairs(methods) do
    if type(m) ~= "string" or not METHODS[m:upper()] then
      error("unsupported HTTP method " .. tostring(m), level)
    end
    local r = {}
    for k, v in pairs(route) do r[k] = v end
    r.method = m:upper()
    local id = #app.routes + 1
    local ok, err = pcall(app.trie.add, app.trie, r.method, full, id)
    if not ok then error((tostring(err):gsub("^[^:]*:%d+: ", "")), level) end
    app.routes[id] = r
  end
  -- A new route may change what a path hits (a HEAD route beside a GET one): ask again.
  app.hits, app.nhits = {}, 0
  if name then app.names[name] = route end
  return group
end

-- (name, pattern, handler[, opts]) or (pattern, handler[, opts]).
local function route_args(...)
  local n = select("#", ...)
  local last = select(n, ...)
  if n >= 3 and type(last) == "table" then
    if n >= 4 then return ... end
    local pattern, handler = ...
    return nil, pattern, handler, last
  end
  if n >= 3 then return ... end
  local pattern, handler = ...
  return nil, pattern, handler
end

local function define(method)
  local fn = function(self, ...)
    local name, pattern, handler, opts = route_args(...)
    return add(self.root or self, { method }, name, pattern, handler, 3, opts)
  end
  App[method:lower()] = fn
  Group[method:lower()] = fn
end
for _, m in ipairs({ "GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD" }) do define(m) end

local function route(self, methods, ...)
  if type(methods) == "string" then methods = { methods } end
  if type(methods) ~= "table" then error("route methods must be a string or a list", 2) end
  local name, pattern, handler, opts = route_args(...)
  return add(self.root or self, methods, name, pattern, handler, 3, opts)
end
App.route, Group.route = route, route

local function use(self, mw)
  if type(mw) ~= "function" then error("middleware must be a function(req, res, next)", 2) end
  local list = self.middleware
  list[#list + 1] = mw
  return self
end
App.use, Group.use = use, use

local function group(self, prefix, fn)
  if type(prefix) ~= "string" or prefix:sub(1, 1) ~= "/" or prefix:sub(-1) == "/" then
    error('group prefix must start with "/" and not end with one, got ' .. tostring(prefix), 2)
  end
  if type(fn) ~= "function" then error("group wants a function(r)", 2) end
  local parent = self.root or self
  local mws = {}
  if parent ~= parent.app.root then
    for _, mw in ipairs(parent.middleware) do mws[#mws + 1] = mw end
  end
  local g = setmetatable({ app = parent.app, prefix = parent.prefix .. prefix, middleware = mws },
    Group)
  fn(g)
  return self
end
App.group, Group.group = group, group

function App:on_error(fn)
  if type(fn) ~= "function" then error("on_error wants a function(err, req, res)", 2) end
  self.error_handler = fn
  return self
end

local function escape_segment(s)
  return (tostring(s):gsub("[^%w%-._~!$&'()*+,;=:@]", function(c)
    return format("%%%02X", c:byte())
  end))
end

local function escape_query(s)
  return (tostring(s):gsub("[^%w%-._~]", function(c) return format("%%%02X", c:byte()) end))
end

-- The path of a named route with its parameters filled in; parameters the pattern does not
-- use become the query string (sorted, so the URL is stable).
function App:url_for(name, params)
  local r = self.names[name]
  if not r then error(format('no route named "%s"', tostring(name)), 2) end
  params = params or {}
  local used = {}
  local path = r.pattern:gsub("([:*])([%w_]+)", function(kind, key)
    local v = params[key]
    if v == nil then error(format('url_for("%s"): missing parameter "%s"', name, key), 4) end
    used[key] = true
    if kind == "*" then
      return (tostring(v):gsub("[^/]+", escape_segment))
    end
    return escape_segment(v)
  end)
  local extra = {}
  for k, v in pairs(params) do
    if not used[k] then extra[#extra + 1] = escape_query(k) .. "=" .. escape_query(v) end
  end
  if #extra > 0 then
    sort(extra)
    path = path .. "?" .. concat(extra, "&")
  end
  return path
end

-- Every route: { method, pattern, name, source }, in registration order.
function App:list_routes()
  local out = {}
  for i, r in ipairs(self.routes) do
    out[i] = { method = r.method, pattern = r.pattern, name = r.name, source = r.source }
  end
  return out
end

local function not_found(_, res)
  return res:status(404):json({ error = "not_found" })
end

local function answer(code, extra)
  return function(req, res)
    if code == 405 then
      res:header("Allow", extra)
      return res:status(405):json({ error = "method_not_allowed" })
    elseif code == 204 then
      res:header("Allow", extra)
      res.body = ""
      return res:status(204)
    end
    local qs = req.query_string
    return res:redirect(qs and (extra .. "?" .. qs) or extra, code)
  end
end

local NOT_FOUND = { not_found }

-- chain with the app-level middleware in front. The result is cached per chain (and rebuilt when
-- app:use added middleware since), so a request allocates no chain of its own.
local function with_app_middleware(app, chain)
  local mw = app.middleware
  if mw[1] == nil then return chain end -- (not #mw: see run_chain)
  local n = #mw
  local cache = app.full_chains
  local full = cache[chain]
  if full and full.nmw == n then return full end
  full = { nmw = n }
  for i = 1, n do full[i] = mw[i] end
  for i = 1, #chain do full[n + i] = chain[i] end
  ensure_steps(#full)
  cache[chain] = full
  return full
end

-- Logs through app.log when it resolves, or straight to stderr when it does not.
local function log_error(app, msg, req, err)
  local ok, log = pcall(function() return app.log end)
  if ok then
    -- A streamed response finished before the failure took the request's headers with it.
    local got, id = pcall(function() return req.id end)
    log:error(msg, { method = req.method, path = req.path, id = got and id or nil,
      error = tostring(err) })
  else
    io.stderr:write("zever: ", msg, ": ", tostring(err), "\n")
  end
end

-- The message handler of a request's xpcall: a string error gets its traceback appended (as
-- debug.traceback does); an error object (a zever error: a db error the handler let through) is
-- kept as it is for on_error, with the traceback beside it for the log.
local Traced = {}
local function with_traceback(e)
  if type(e) ~= "table" then return traceback(e, 2) end
  return setmetatable({ error = e, traceback = traceback("", 2) }, Traced)
end

local function on_failure(app, err, req)
  if getmetatable(err) == Traced then
    log_error(app, "handler failed", req, tostring(err.error) .. err.traceback)
    err = err.error
  else
    log_error(app, "handler failed", req, err)
  end
  local fresh = response.new(app.response_class)
  if app.error_handler then
    local ok, e2 = xpcall(function() return apply(fresh, app.error_handler(err, req, fresh)) end,
      traceback)
    if ok then return fresh end
    log_error(app, "on_error failed", req, e2)
    fresh = response.new(app.response_class)
  end
  return fresh:status(500):json({ error = "internal" })
end

-- Dispatches one request: method, raw path, raw query string (or nil), and a source answering
-- header(name), headers() and body(). Returns the response object (code, headers, body).
-- Must run inside a coroutine when handlers may wait.
local function collect(names, spans, n, path)
  local params = {}
  for i = 0, n - 1 do
    local off = spans[2 * i]
    params[names[i + 1]] = sub(path, off + 1, off + spans[2 * i + 1])
  end
  return params
end

-- The paths that hit a route without parameters, by method, as the router answered them
-- (app.hits): a request for one of them (every request of a static route such as /hello) is
-- answered by two table lookups instead of the router's FFI call and trie walk (~290
-- instructions of a /hello request, BENCHMARKS.md "Session 14"). Only the router's own answers
-- are kept, and only hits without parameters: the router does not normalise paths, so those
-- are the static patterns (and HEAD's fallback to GET), a set the routes bound; MAX_HITS bounds
-- it anyway. Adding a route clears it (add).
local MAX_HITS = 1024

local function remember(app, method, path, id)
  local n = app.nhits
  if n >= MAX_HITS then return end
  local by = app.hits[method]
  if not by then
    by = {}
    app.hits[method] = by
  end
  by[path] = id
  app.nhits = n + 1
end

-- The route id and params of a hit; otherwise what trie:match says (nil, status, extra).
-- No loop for routes of up to one parameter: a loop inside the request's trace makes LuaJIT
-- abort it (and run the whole request in the interpreter, where FFI calls are slow).
local function match(app, method, path)
  local by = app.hits[method]
  local hit = by and by[path]
  if hit then return hit, empty_params end
  local trie = app.trie
  if match_ffi and tries[trie] and type(method) == "string" and type(path) == "string"
    and match_ffi(trie, method, #method, path, #path, found) == 0 then
    local id, n = found.id, found.nparams
    if n == 0 then
      remember(app, method, path, id)
      return id, empty_params
    end
    local names, spans = app.routes[id].param_names, found.spans
    if n == 1 then return id, { [names[1]] = sub(path, spans[0] + 1, spans[0] + spans[1]) } end
    return id, collect(names, spans, n, path)
  end
  return trie:match(method, path)
end

local BODY_ERRORS = { [413] = "content_too_large", [408] = "request_timeout", [400] = "bad_request" }

-- A request whose body still comes (zever.http dispatched it at the end of its head, streamed
-- true), or any request of a route with max_body: a stream_body route reads it itself (after a
-- Content-Length check against max_body); any other route gets it whole first. Returns nil, or
-- the handler that answers a body that cannot be had (413, 408, 400).
local function prepare_body(r, source)
  local stream = require "zever.stream"
  local err
  if r and r.stream_body then
    local cl = tonumber(source:header("content-length") or "")
    if not (r.max_body and cl and cl > r.max_body) then return nil end
    err = stream.body_error("too_large")
  else
    local ok
    ok, err = stream.buffer_body(source)
    if ok then return nil end
  end
  -- (a client that went away gets its answer nowhere, quietly)
  local name = BODY_ERRORS[err.status] or "bad_request"
  return function(_, res)
    return res:status(err.status):json({ error = name, message = err.message })
  end
end

-- Answers a request whose body could not be had (prepare_body's answer), without the app's
-- middleware.
local function refuse_body(app, answer_fn, method, path, query_string, params, source)
  local req = request.new(method, path, query_string, params, source)
  local res = response.new(app.response_class)
  answer_fn(req, res)
  return finish(res), req
end

function App:dispatch(method, path, query_string, source, streamed)
  local id, params, extra = match(self, method, path)
  local chain, max_body
  if id then
    local r = self.routes[id]
    chain = r.chain
    if r.has_options or streamed then
      -- A route's own handler timeout goes to the server (zever.http's req:timeout).
      local timeout = r.timeout
      if timeout and type(source) == "userdata" then source:timeout(timeout) end
      max_body = r.max_body
      if streamed or max_body then
        local refuse = prepare_body(r, source)
        if refuse then
          return refuse_body(self, refuse, method, path, query_string, params, source)
        end
      end
    end
  else
    chain = params == 404 and NOT_FOUND or { answer(params, extra) }
    params = empty_params
  end
  chain = with_app_middleware(self, chain)
  local req = request.new(method, path, query_string, params, source)
  if max_body then rawset(req, "_max_body", max_body) end
  -- A JSON access log names the request id; a streamed response may finish (and the C
  -- request's headers go) before the handler returns, so it is read first (zever.server).
  if rawget(self, "access_log_id") then local _ = req.id end
  local res = response.new(self.response_class)
  -- The connection, for a streamed response (zever.stream: slot 0 is allocated anyway).
  res.headers[0] = source
  local ok, err = xpcall(run_chain, with_traceback, chain, 1, req, res)
  if res.streamed then
    -- Its head is out: a 500 cannot follow. A failure closes the connection (logged).
    if not ok then on_failure(self, err, req) end
    require("zever.stream").close(res, not ok)
  elseif not ok then
    res = on_failure(self, err, req)
  end
  if rawget(req, "_tempfiles") then request.cleanup(req) end
  -- id: the matched route's (nil when none matched), for the HTTP metrics (zever.server).
  return finish(res), req, id
end

-- Under `zever test`, whether the test configuration names the database: db.dsn set by
-- zever.test.yaml (or .json) or by an environment variable. Anything else (zever.yaml, the
-- default) is the development database, which specs never touch: they get a :memory: one.
function M.test_names_db(cfg)
  local origin = require("zever.config").sources(cfg).origin["db.dsn"]
  return origin ~= nil and (origin:sub(1, 1) == "$" or origin:match("zever%.test%.%a+$") ~= nil)
end

-- --- the configuration a worker is given --------------------------------------------------
-- `zever serve` loads the app in its main thread first (to fail before anything listens); each
-- worker is then given that configuration (M.export, carried as JSON in the worker's payload)
-- instead of reading and checking the files and the environment again (M.preload): loading the
-- config modules was ~5.8 M of a worker's ~8 M instructions before its first request
-- (BENCHMARKS.md, "Start-up: the first request of zever serve, session 8"). Only plain data is
-- carried: a configuration holding anything JSON would not give back as it was (a YAML null, a
-- table with a metatable, mixed keys, a number JSON cannot write; text that is not UTF-8 is
-- refused by the worker's reader) is not used, and the worker loads its own as before.

-- Whether v comes back from JSON as it is (strings are checked on the JSON text, at once).
local function plain(v, depth)
  local t = type(v)
  if t == "number" then return v == v and v ~= math.huge and v ~= -math.huge end
  if t ~= "table" then return t == "string" or t == "boolean" end
  if getmetatable(v) ~= nil or depth > 32 then return false end
  local n, strings = #v, true
  for k, x in pairs(v) do
    if type(k) == "string" then
      if n > 0 then return false end
    elseif not (type(k) == "number" and k >= 1 and k <= n and k % 1 == 0) then
      return false
    else
      strings = false
    end
    if (type(x) == "table" or type(x) == "number") and not plain(x, depth + 1) then
      return false
    end
  end
  return strings or n > 0
end

-- A deep copy without the JSON reader's array/object marks.
local function copy(v)
  if type(v) ~= "table" then return v end
  local t = {}
  for k, x in pairs(v) do t[k] = copy(x) end
  return t
end

-- The JSON text of { dir, cfg, sources }, or nil (not plain: see above).
local function export_text(dir, cfg)
  local src = require("zever.config.meta")[cfg]
  if not src or not plain(cfg, 0) or not plain(src, 0) then return nil end
  local ok, text = pcall(require("zever.json").encode, { dir = dir, cfg = cfg, sources = src })
  if ok then return text end
end

-- True while `zever serve`'s main thread loads the app (zever.server): each container then
-- keeps its configuration's text as it was loaded, before the app's own code could change it
-- (a worker runs that code again, on its copy).
M.exporting = false

-- What a worker needs to build app's configuration without reading it, as JSON text of
-- { dir, cfg, sources }, or nil (no container was made while M.exporting, `zever test`, or not
-- plain: see above).
function M.export(app)
  return rawget(app, "_export")
end

-- In a worker: apps of the folder M.export's text names take a copy of its configuration,
-- with its sources, instead of loading it. nil stops it; so does text the strict JSON reader
-- refuses (a string of the configuration that is not UTF-8): the worker then loads its own.
function M.preload(text)
  M.preloaded = text and require("zever.json").decode(text) or nil
end

-- The app's container, built on first use from the configuration in app.dir. Raises when the
-- configuration is invalid (the message names the file, key and a did-you-mean).
function App:container()
  local c = rawget(self, "_container")
  if c then return c end
  local pre = M.preloaded
  if pre and not M.testing and pre.dir == self.dir and not rawget(self, "_configure") then
    local cfg = copy(pre.cfg)
    require("zever.config.meta")[cfg] = copy(pre.sources)
    c = require("zever.container").new(cfg)
    rawset(self, "_container", c)
    return c
  end
  local config = require "zever.config"
  local cfg, err = config.load({ dir = self.dir, environment = M.testing and "test" or nil })
  if not cfg then error(tostring(err), 2) end
  -- Relative paths (the SQLite file, ...) come out of config.load resolved against self.dir.
  -- Under `zever test`, a database the test configuration does not name is a fresh :memory: one.
  if cfg.db and cfg.db.dsn and M.testing and not M.test_names_db(cfg) then
    cfg.db.adapter, cfg.db.dsn = "sqlite", "sqlite::memory:"
  end
  local configure = rawget(self, "_configure")
  if configure then configure(self, cfg) end
  if M.exporting and not M.testing and not configure then
    rawset(self, "_export", export_text(self.dir, cfg))
  end
  c = require("zever.container").new(cfg)
  rawset(self, "_container", c)
  return c
end

-- The merged configuration of the app.
function App:config()
  return self:container().config
end

-- Closes every battery the app resolved (dependents first); returns true or nil, errors.
function App:close()
  local c = rawget(self, "_container")
  if not c then return true end
  return c:close()
end

-- The app an app file returns (a folder means its app.lua), and the file's path. The file's
-- folder goes in front of package.path so the app can require its own modules. root, when
-- given, is the app folder (its zever.yaml), for an app file elsewhere (http.app: src/main.lua);
-- by default it is the file's folder. Raises with a message fit for the CLI when the file is
-- missing or does not return an app.
function M.load(path, root)
  -- The loader is zever.app.load, loaded with the first app file (docs/app.md,
  -- "Start-up heap").
  return require("zever.app.load").load(M, App, path, root)
end

M.App = App
return M
