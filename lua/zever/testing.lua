-- zever.testing: helpers for application specs.
--
--   local testing = require "zever.testing"
--   local res = testing.request(app, "GET", "/users/42?full=1", { headers = {...}, body = "..." })
--   res.status, res.headers["content-type"], res.body, res:json()
--
--   local srv = testing.serve(app)        -- a real server on a free loopback port, this thread
--   local res = srv:fetch("GET", "/hello") -- a real HTTP client (curl) against it
--   srv:close()
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

local Result = {}
Result.__index = Result

function Result:json()
  return json.decode(self.body)
end

local function split_target(target)
  local path, qs = target:match("^([^?]*)%?(.*)$")
  return path or target, qs
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
  if type(body) == "table" then
    body = json.encode(body)
    hdrs["content-type"] = hdrs["content-type"] or "application/json"
  end
  local source = setmetatable({ hdrs = hdrs, data = body or "" }, Source)
  local path, qs = split_target(target)
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
  local out = setmetatable({ status = res.code, headers = {}, body = res.body }, Result)
  for i = 1, #res.headers, 2 do out.headers[lower(res.headers[i])] = res.headers[i + 1] end
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

local function slurp(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

-- Sends one request with curl while the loop serves it; returns { status, headers, body }.
function Server:fetch(method, path, opts)
  opts = opts or {}
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
  local out = setmetatable({ headers = {}, body = body }, Result)
  -- With 100-continue or redirects curl writes several header blocks; the last one counts.
  for block in (head .. "\r\n\r\n"):gmatch("(HTTP/[^\r\n]+.-)\r\n\r\n") do
    out.status = tonumber(block:match("^HTTP/%S+ (%d+)"))
    out.headers = {}
    for k, v in block:gmatch("\r\n([^:\r\n]+):%s*([^\r\n]*)") do out.headers[lower(k)] = v end
  end
  return out
end

function Server:close()
  self.srv:close()
  loop.run("nowait")
end

return M
