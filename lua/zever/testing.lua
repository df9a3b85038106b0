-- zever.testing: helpers for application specs, the kit Rails and Laravel users reach for.
--
--   local testing = require "zever.testing"
--   local t = testing.app(".")             -- app.lua of a folder (or an app), its own database
--   local res = t:get("/users/42")         -- in-process: the server's dispatch, no socket
--   local res = t:post("/users", { json = { email = "a@b.c" }, headers = { ... } })
--   res.status, res.headers["content-type"], res.body, res:json()
--   res:header_values("set-cookie")        -- every value of a repeated header, in order
--   res:cookie("sid")                      -- the value a Set-Cookie gave, and its attributes
--   t:perform_jobs()                       -- runs the jobs the spec dispatched, now
--   t:mails()                              -- the messages app.mailer sent, in order
--   local srv = t:serve()                  -- the same app on a free loopback port
--   srv:get("/users/42")                   -- a real HTTP client (curl) against it
--   srv:close(); t:close()
--
--   testing.request(app, "GET", "/users/42?full=1", { headers = {...}, body = "..." })
--   testing.serve(app), srv:fetch("GET", "/hello")  -- the same for an app made in the spec
--
-- testing.app(dir) loads the app as `zever serve` would, in the test environment (zever.yaml,
-- then zever.test.yaml, then the environment), with these changes, so a spec never touches the
-- development database nor sends real mail:
--   db       a fresh SQLite file in a temporary folder, with the app's migrations (db.migrations)
--            applied; unless zever.test.yaml or DB_DSN names a database, which is then used
--   mailer   the log adapter into the temporary folder; every sent message is captured
--            (opts.deliver = true keeps the configured mailer, still capturing)
-- Each testing.app is a fresh load: new middleware, new container, so the cache and limiter the
-- app resolved start empty (the memory ones are process-wide tables that live while an app has
-- them open: close every app, e.g. in after_each). testing.perform_jobs() and testing.mails()
-- without an argument act on the app opened last.
--
-- request() runs the app in-process, no socket: the same dispatch the server runs, inside a
-- coroutine, pumping the event loop while a handler waits. serve() listens on 127.0.0.1 with the
-- spec's own event loop; fetch() runs curl in the background and pumps the loop until curl is
-- done, so handlers that wait work there too.

local sched = require "zever.sched"
local loop = require "zever.loop"
local json = require "zever.json"

local lower, format, concat = string.lower, string.format, table.concat

local M = {}

local with_query -- defined below, used by request()

local Source = {}
Source.__index = Source

function Source:header(name)
  return self.hdrs[lower(name)]
end

function Source:headers()
  local copy = {}
  for k, v in pairs(self.hdrs) do copy[k] = v end
  return copy
end

function Source:body()
  return self.data
end

-- A streamed response (zever.stream) written to the source: the chunks are kept and become the
-- result's body; nothing is ever queued, and the client never goes away.
function Source:head(status, headers, length)
  self.out = { status = status, headers = headers, length = length }
  return true
end

function Source:write(chunk)
  local out = self.out
  out[#out + 1] = chunk
  return true
end

function Source:finish()
  self.out.done = true
  return true
end

function Source:abort()
  self.out.aborted = true
end

function Source.pending() return 0 end
function Source.closed() return false end
function Source.watch(_, _, low)
  if low then return "ready" end
  return true
end
function Source.unwatch() end

local Result = {}
Result.__index = Result

function Result:json()
  return json.decode(self.body)
end

-- Every value of a header, in the order sent (res.headers[name] keeps the last one only):
-- several Set-Cookie, Vary or Link headers.
function Result:header_values(name)
  name = lower(name)
  local out = {}
  for _, h in ipairs(self.header_list) do
    if h[1] == name then out[#out + 1] = h[2] end
  end
  return out
end

-- The cookie the response set under name (the last Set-Cookie of that name): its value and its
-- attributes ({ path = "/", httponly = true, ["max-age"] = "60", ... }, names in lower case);
-- nil when none was set.
function Result:cookie(name)
  local value, attrs
  for _, line in ipairs(self:header_values("set-cookie")) do
    local n, v, rest = line:match("^%s*([^=;%s]+)%s*=%s*([^;]*)(.*)$")
    if n == name then
      value, attrs = v, {}
      for part in rest:gmatch(";%s*([^;]+)") do
        local k, av = part:match("^([^=]-)%s*=%s*(.-)%s*$")
        if k then attrs[lower(k)] = av else attrs[lower((part:gsub("%s+$", "")))] = true end
      end
    end
  end
  return value, attrs
end

-- Records one response header: the list keeps them all, headers[name] the last one.
local function add_header(out, name, value)
  name = lower(name)
  out.header_list[#out.header_list + 1] = { name, value }
  out.headers[name] = value
end

local function split_target(target)
  local path, qs = target:match("^([^?]*)%?(.*)$")
  return path or target, qs
end

-- target with opts.query ({ k = v }) appended, keys sorted so the URL is stable.
local function escape(v)
  return (tostring(v):gsub("[^%w%-%._~]", function(c) return format("%%%02X", c:byte()) end))
end

with_query = function(target, query)
  if query == nil then return target end
  if type(query) ~= "table" then error("testing: query must be a table", 3) end
  local keys, parts = {}, {}
  for k in pairs(query) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do parts[#parts + 1] = escape(k) .. "=" .. escape(query[k]) end
  if #parts == 0 then return target end
  return target .. (target:find("?", 1, true) and "&" or "?") .. concat(parts, "&")
end

-- Log lines written by apps that had no logger of their own when request() ran them.
M.log_lines = {}
local sink = { write = function(_, line) M.log_lines[#M.log_lines + 1] = line end }

-- Runs one request through app in-process; returns { status, headers, body } with lower-case
-- header names.
function M.request(app, method, target, opts)
  if type(app) ~= "table" or type(app.dispatch) ~= "function" then
    error("testing.request wants an app", 2)
  end
  if type(method) ~= "string" or type(target) ~= "string" then
    error("testing.request wants a method and a path", 2)
  end
  opts = opts or {}
  if not rawget(app, "log") then app.log = require("zever.log").new({ out = sink, level = "debug" }) end
  local hdrs = {}
  for k, v in pairs(opts.headers or {}) do hdrs[lower(k)] = tostring(v) end
  local body = opts.body
  if opts.json ~= nil then body = opts.json end
  if type(body) == "table" or opts.json ~= nil then
    body = json.encode(body)
    hdrs["content-type"] = hdrs["content-type"] or "application/json"
  end
  local source = setmetatable({ hdrs = hdrs, data = body or "" }, Source)
  local path, qs = split_target(with_query(target, opts.query))
  local done, res, token
  sched.spawn(function()
    res = app:dispatch(method:upper(), path, qs, source)
    done = true
    if token then sched.complete(token) end
  end)
  if not done then
    token = sched.token()
    sched.await(token)
  end
  local out = setmetatable({ status = res.code, headers = {}, header_list = {}, body = res.body },
    Result)
  local streamed = source.out
  local h = streamed and streamed.headers or res.headers
  for i = 1, #h, 2 do add_header(out, h[i], h[i + 1]) end
  if streamed then
    -- A streamed response: its chunks, and whether it ended cleanly.
    out.body, out.chunks, out.finished = table.concat(streamed), streamed, streamed.done == true
    if streamed.length then out.headers["content-length"] = tostring(streamed.length) end
  end
  if method:upper() == "HEAD" then out.body = "" end
  return out
end

-- Runs this thread's event loop until done() returns true or seconds (default 10) pass;
-- returns whether done() became true. For specs that wait for a background client, a timer or
-- another thread without sleeping a fixed time.
function M.run_until(done, seconds)
  local poll = loop.every(0.002, function() if done() then loop.stop() end end)
  local guard = loop.after(seconds or 10, function() loop.stop() end)
  if not done() then loop.run() end
  poll:stop()
  guard:stop()
  return not not done()
end

-- Runs the loop until it holds no more handles than before (#loop.handles() taken before a
-- spec opened its servers and clients) or seconds (default 10) pass; true when it got there. A
-- connection whose peer hung up is gone only once the loop has seen the hang-up: a spec settles
-- so that what it opened does not outlive it.
function M.settle(before, seconds)
  local guard = loop.after(seconds or 10, function() loop.stop() end)
  local function held()   -- the guard is not counted
    return #loop.handles() - (guard:active() and 1 or 0)
  end
  while held() > before and guard:active() do loop.run("once") end
  local ok = held() <= before
  guard:stop()
  return ok
end

local Server = {}
Server.__index = Server

-- Starts app on 127.0.0.1 (a free port) on this thread's event loop.
function M.serve(app, opts)
  local server = require "zever.server"
  opts = opts or {}
  local srv = server.listen(app, { host = "127.0.0.1", port = 0, access_log = false,
    limits = opts.limits })
  return setmetatable({ srv = srv, port = srv:port(), base = "http://127.0.0.1:" .. srv:port() },
    Server)
end

function Server:url(path)
  return self.base .. (path or "/")
end

local function shell_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

local slurp = require("zever.file").read

-- Sends one request with curl while the loop serves it; returns { status, headers, body }.
-- opts: headers, body (a string, or a table sent as JSON), json (a value sent as JSON), query.
function Server:fetch(method, path, opts)
  opts = opts or {}
  if opts.json ~= nil or type(opts.body) == "table" then
    local headers = {}
    for k, v in pairs(opts.headers or {}) do headers[k] = v end
    local has_type = false
    for k in pairs(headers) do if lower(k) == "content-type" then has_type = true end end
    if not has_type then headers["Content-Type"] = "application/json" end
    local value = opts.json
    if value == nil then value = opts.body end
    opts = { headers = headers, body = json.encode(value), query = opts.query }
  end
  path = with_query(path or "/", opts.query)
  local base = os.tmpname()
  local args = { "curl", "-s", "-S", "-o", shell_quote(base .. ".body"), "-D",
    shell_quote(base .. ".head"), "--max-time", "10" }
  if method == "HEAD" then
    args[#args + 1] = "-I"
  else
    args[#args + 1] = "-X"
    args[#args + 1] = shell_quote(method)
  end
  for k, v in pairs(opts.headers or {}) do
    args[#args + 1] = "-H"
    args[#args + 1] = shell_quote(k .. ": " .. v)
  end
  if opts.body then
    local f = assert(io.open(base .. ".req", "wb"))
    f:write(opts.body)
    f:close()
    args[#args + 1] = "--data-binary"
    args[#args + 1] = shell_quote("@" .. base .. ".req")
  end
  args[#args + 1] = shell_quote(self:url(path))
  os.execute(format("(%s; echo $? > %s) >/dev/null 2>&1 &", concat(args, " "),
    shell_quote(base .. ".done")))
  M.run_until(function() return slurp(base .. ".done") ~= nil end, 15)
  local head, body = slurp(base .. ".head") or "", slurp(base .. ".body") or ""
  if method == "HEAD" then body = "" end -- curl -I writes the head where the body would go
  for _, ext in ipairs({ "", ".done", ".head", ".body", ".req" }) do os.remove(base .. ext) end
  local out = setmetatable({ headers = {}, header_list = {}, body = body }, Result)
  -- With 100-continue or redirects curl writes several header blocks; the last one counts.
  for block in (head .. "\r\n\r\n"):gmatch("(HTTP/[^\r\n]+.-)\r\n\r\n") do
    out.status = tonumber(block:match("^HTTP/%S+ (%d+)"))
    out.headers, out.header_list = {}, {}
    for k, v in block:gmatch("\r\n([^:\r\n]+):%s*([^\r\n]*)") do add_header(out, k, v) end
  end
  return out
end

-- Stops the server and closes its idle keep-alive connections at once (a drain with no grace:
-- a pooled zever.httpc connection to it would otherwise keep its server side open), so a spec's
-- server leaves nothing behind it on the loop.
function Server:close()
  if not pcall(self.srv.drain, self.srv, 0, function() end) then self.srv:close() end
  loop.run("nowait")
end

local VERBS = { get = "GET", post = "POST", put = "PUT", patch = "PATCH", delete = "DELETE",
  head = "HEAD", options = "OPTIONS" }

for verb, method in pairs(VERBS) do
  Server[verb] = function(self, path, opts) return self:fetch(method, path, opts) end
end

-- --- testing.app ------------------------------------------------------------------------------

local T = {}
T.__index = T

local current -- the app testing.app opened last and that is not closed

-- A copy of a message table (one level deep per field: lists of addresses, attachments).
local function copy_message(msg, id, from)
  local out = { id = id }
  for k, v in pairs(msg) do
    if type(v) == "table" then
      local c = {}
      for k2, v2 in pairs(v) do c[k2] = v2 end
      out[k] = c
    else
      out[k] = v
    end
  end
  if out.from == nil then out.from = from end
  return out
end

-- Wraps app.mailer so that every message it sends is recorded in t.deliveries.
local function capture_mail(t)
  local mailer = t.app.mailer
  local send = mailer.send
  mailer.send = function(self, msg)
    local id, err = send(self, msg)
    if id and type(msg) == "table" then
      local d = t.deliveries
      d[#d + 1] = copy_message(msg, id, self.from)
    end
    return id, err
  end
end

local function load(t)
  local app_mod = require "zever.app"
  app_mod.testing = true
  local tmp, opts = t.tmp, t.opts
  local hook = function(_, cfg)
    if not app_mod.test_names_db(cfg) then
      cfg.db.adapter, cfg.db.dsn = "sqlite", "sqlite:" .. tmp .. "/test.db"
    end
    if not opts.deliver then
      cfg.mailer.adapter = "log"
      cfg.mailer.log_file = tmp .. "/mail.log"
    end
  end
  local app
  if type(t.source) == "table" then
    app = t.source
    if rawget(app, "_container") then
      error("testing.app: this app already built its batteries; pass its folder instead", 3)
    end
    rawset(app, "_configure", hook)
  else
    local prev = app_mod.configure
    app_mod.configure = hook
    local ok, loaded = pcall(app_mod.load, t.source)
    app_mod.configure = prev
    if not ok then error(loaded, 3) end
    app = loaded
  end
  t.app, t.dir, t.deliveries = app, app.dir, {}
  local cfg = app:config()
  local mdir = cfg.db.migrations
  if mdir ~= "" and mdir:sub(1, 1) ~= "/" and app.dir ~= "." then mdir = app.dir .. "/" .. mdir end
  if require("zever.sys").isdir(mdir) then
    local done, err = require("zever.migrations").up(app.db, mdir)
    if not done then error("testing.app: migrations failed: " .. tostring(err), 3) end
  end
  capture_mail(t)
end

-- Loads an app for a spec: source is a folder (its app.lua), an app file, or an app object made
-- in the spec (before it resolved any battery). opts: deliver (keep the configured mailer).
-- Returns t (t.app, t.dir, t:get(...), t:perform_jobs(), t:mails(), t:serve(), t:close()).
function M.app(source, opts)
  source = source or "."
  if type(source) ~= "string" and (type(source) ~= "table" or type(source.dispatch) ~= "function") then
    error("testing.app wants a folder, an app file or an app", 2)
  end
  if opts ~= nil and type(opts) ~= "table" then error("testing.app: opts must be a table", 2) end
  local p = assert(io.popen("mktemp -d /tmp/zever-test-XXXXXX"))
  local tmp = p:read("*l")
  p:close()
  if not tmp or tmp == "" then error("testing.app: cannot make a temporary folder", 2) end
  local t = setmetatable({ source = source, opts = opts or {}, tmp = tmp }, T)
  load(t)
  current = t
  return t
end

-- Runs one request through the app in-process (see testing.request).
function T:request(method, target, opts)
  return M.request(self.app, method, target, opts)
end

for verb, method in pairs(VERBS) do
  T[verb] = function(self, target, opts) return M.request(self.app, method, target, opts) end
end

local function the(t, what)
  t = t or current
  if getmetatable(t) ~= T then error("testing." .. what .. ": no app (call testing.app first)", 3) end
  if not t.app then error("testing." .. what .. ": the app is closed", 3) end
  return t
end

-- The queues the app's jobs use: the default queue and every registered job's own.
local function job_queues(jobs)
  local seen, list = {}, {}
  local function add(q)
    if q and not seen[q] then seen[q] = true; list[#list + 1] = q end
  end
  add(jobs.defaults and jobs.defaults.queue)
  local names = {}
  for name in pairs(jobs.registry or {}) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do add(jobs.registry[name].queue) end
  return list
end

-- Runs every job that is due now (dispatched by the spec, by a handler, or by another job) in
-- this process, until none is left; a failing job is retried later or dead-lettered exactly as
-- under `zever worker`. Delayed jobs not yet due stay queued. Returns { ran, done, failed }.
-- opts: queues (default: every queue the app's jobs use), limit (default 10000 jobs).
function T:perform_jobs(opts)
  opts = opts or {}
  local jobs = self.app.jobs
  local w = require("zever.worker").new(jobs, { queues = opts.queues or job_queues(jobs),
    log = function(level, msg, fields)
      local log = self.app.log
      if log and log[level] then log[level](log, msg, fields) end
    end })
  local limit = opts.limit or 10000
  while w.stats.claimed < limit do
    local before = w.stats.claimed
    w:poll()
    if w.stats.claimed == before then break end
    while w.nrunning > 0 do loop.run("once") end
  end
  local st = w.stats
  return { ran = st.claimed, done = st.done, failed = st.retried + st.dead + st.timeouts }
end

-- The messages the app sent (each the table given to app.mailer:send, copied, plus id and
-- the default from), oldest first.
function T:mails()
  return self.deliveries
end

-- Forgets the captured messages.
function T:clear_mails()
  self.deliveries = {}
end

-- Serves this app on a free loopback port (testing.serve); close it before t:close().
function T:serve(opts)
  return M.serve(self.app, opts)
end

-- Closes the app's batteries, then loads it again from its source: a fresh database (migrated),
-- cache, limiter and mail capture, as if the spec had just called testing.app.
function T:reset()
  if type(self.source) == "table" then
    error("testing: reset needs an app loaded from a folder or file", 2)
  end
  self.app:close()
  load(self)
  return self
end

-- Closes the app's batteries and removes its temporary folder.
function T:close()
  if not self.app then return true end
  local ok, err = self.app:close()
  self.app = nil
  os.execute("rm -rf " .. shell_quote(self.tmp))
  if current == self then current = nil end
  if not ok then return nil, err end
  return true
end

function M.perform_jobs(t, opts)
  return the(t, "perform_jobs"):perform_jobs(opts)
end

function M.mails(t)
  return the(t, "mails"):mails()
end

return M
