-- zever.httpc: the HTTP/1.1 client (docs/http-client.md), also `require("zever").http`.
--
--   local http = require "zever.httpc"
--   local res, err = http.request{ method = "POST", url = "https://api.example.com/v1/x",
--     headers = { ["content-type"] = "application/json" }, body = '{"a":1}', timeout = 10 }
--   res.status, res.headers["content-type"], res:header("Content-Type"), res.body, res.url
--   http.get(url[, opts]) / http.post(url, body[, opts]) / http.head(url[, opts])
--
-- It runs on the worker's loop (host/httpc/, C): inside a coroutine (a request handler, a job)
-- a call yields while it waits; outside one (a script, the CLI) it pumps the loop until done.
-- The one wait primitive is zever.sched's token; nothing here writes that loop again.
--
-- Options (every one optional but url):
--   method = "GET", headers = { name = value } (a list value repeats the field), body = string
--   or an iterator function (sent chunked; not replayed on a redirect or retry), query = {...}
--   timeout = 30            total seconds, across redirects and the body
--   timeouts = { connect = 10, tls = 10, first_byte = <total>, idle = 30 }   per phase
--   max_redirects = 5       (0: return the 3xx itself); 303, and 301/302 after POST, become GET
--   max_body = 16 MiB       a larger body (after decoding) fails with "too_large"
--   decompress = true       asks for gzip and decodes it (Content-Encoding gzip/deflate)
--   stream = true           res.body is nil: read it with res:read() -> chunk | nil (end) |
--                           nil, err, or res:each(fn); res:close() gives up on the rest
--   proxy = url | false     default: HTTP_PROXY / HTTPS_PROXY / NO_PROXY (lower case too);
--                           https goes through CONNECT
--   tls = { ca_file =, verify = true, cert =, key = }   (verification against the system's
--                           trust store by default; host/httpc_tls/, loaded on first https)
--   keepalive = true        reuse connections: a pool per scheme://host:port (and proxy)
--
-- Failures are nil, err with err a zever error of battery "http": "timeout" (err.phase says
-- which: connect, tls, first_byte, idle, total), "refused", "dns", "tls" (certificate
-- verification says why), "too_large", "too_many_redirects", "protocol" (a malformed response),
-- "unavailable" (reset, closed early), "proxy", "invalid" (a bad URL). A status >= 400 is a
-- response, not an error. Messages name "METHOD scheme://host:port/path", never the URL's user
-- and password or its query.
--
-- Tracing hook: http.before_send is a list of functions called as fn(headers, request) before
-- each request goes out (headers: the table of fields about to be sent, lower-case names; add
-- to it). zever.trace adds its traceparent there (wired by the app; this module does not
-- depend on it).

local core = require "zever.httpc_core"
local errors = require "zever.errors"
local loop = require "zever.loop"
local sched = require "zever.sched"

local type, tostring, tonumber, pairs, ipairs, error, setmetatable, next = type, tostring,
  tonumber, pairs, ipairs, error, setmetatable, next
local format, lower, find, sub, gsub, byte, char, concat, remove =
  string.format, string.lower, string.find, string.sub, string.gsub, string.byte, string.char,
  table.concat, table.remove
local now, complete, await, token_of = loop.now, sched.complete, sched.await, sched.token
local getenv = os.getenv

local M = {}

M.before_send = {}
-- Counters of this Lua state: connections opened, requests sent on a pooled connection.
M.stats = { connects = 0, reused = 0, requests = 0 }
M.MAX_IDLE_PER_HOST = 8

local DEFAULTS = { timeout = 30, connect = 10, tls = 10, idle = 30, max_redirects = 5,
  max_body = 16 * 1024 * 1024 }
M.defaults = DEFAULTS

local function fail(code, message, fields)
  return nil, errors.new("http", code, message, fields)
end

-- --- URLs --------------------------------------------------------------------------------

local function unescape(s)
  return (gsub(s, "%%(%x%x)", function(h) return char(tonumber(h, 16)) end))
end

local function escape(s)
  return (gsub(tostring(s), "[^%w%-%._~]", function(c) return format("%%%02X", byte(c)) end))
end
M.escape = escape

-- Parses an absolute http(s) URL: { scheme, host, port, target, user, password } | nil, why.
local function parse_url(url)
  if type(url) ~= "string" then return nil, "the URL must be a string" end
  local scheme, rest = url:match("^(%a[%w+.-]*)://(.*)$")
  if not scheme then return nil, "not an absolute URL" end
  scheme = lower(scheme)
  if scheme ~= "http" and scheme ~= "https" then return nil, "the scheme must be http or https" end
  rest = gsub(rest, "#.*$", "")
  local authority, target = rest:match("^([^/?]*)(.*)$")
  if target == "" then target = "/" elseif byte(target) == 63 then target = "/" .. target end
  if find(target, "[%c ]") then return nil, "the URL holds a space or a control character" end
  local user, password
  local at = authority:match("^.*()@")
  if at then
    local ui = sub(authority, 1, at - 1)
    authority = sub(authority, at + 1)
    user, password = ui:match("^([^:]*):?(.*)$")
    user, password = unescape(user), unescape(password)
  end
  local host, port = authority:match("^%[([%x:.]+)%]:?(%d*)$")
  if not host then host, port = authority:match("^([^:]+):?(%d*)$") end
  if not host or host == "" then return nil, "the URL has no host" end
  if find(host, "[^%w.%-_:]") then return nil, "the host holds a forbidden character" end
  port = tonumber(port) or (scheme == "https" and 443 or 80)
  if port < 1 or port > 65535 then return nil, "the port is out of range" end
  return { scheme = scheme, host = lower(host), port = port, target = target, user = user,
    password = password, v6 = find(host, ":", 1, true) ~= nil }
end
M.parse_url = parse_url

-- Parsed URLs, reused across calls (a client calls the same few URLs over and over); the tables
-- are read-only to their users, and carry per-URL caches (the head of a plain request, the
-- pool key, the shown name). Bounded: cleared when it holds 512.
local parsed, nparsed = {}, 0
local function parse_cached(url)
  local u = parsed[url]
  if u then return u end
  local why
  u, why = parse_url(url)
  if not u then return nil, why end
  if nparsed >= 512 then parsed, nparsed = {}, 0 end
  parsed[url], nparsed = u, nparsed + 1
  u.heads, u.shown = {}, {}
  return u
end

local function host_port(u)
  local h = u.v6 and ("[" .. u.host .. "]") or u.host
  if (u.scheme == "http" and u.port == 80) or (u.scheme == "https" and u.port == 443) then return h end
  return h .. ":" .. u.port
end

-- What messages show: no credentials, no query.
local function shown(method, u)
  return format("%s %s://%s%s", method, u.scheme, host_port(u), (u.target:gsub("%?.*$", "")))
end

-- Resolves ref against the absolute URL base (a Location header).
local function resolve(base, ref)
  if ref:match("^%a[%w+.-]*://") then return ref end
  local origin = base:match("^(%a[%w+.-]*://[^/?#]*)")
  if sub(ref, 1, 2) == "//" then return base:match("^(%a[%w+.-]*:)") .. ref end
  if byte(ref) == 47 then return origin .. ref end
  local path = base:match("^%a[%w+.-]*://[^/?#]*([^?#]*)")
  if byte(ref) == 63 then return origin .. (path ~= "" and path or "/") .. ref end
  local dir = path:match("^(.*/)") or "/"
  return origin .. dir .. ref
end
M.resolve = resolve

-- Basic credentials: MIME base64 (host/mime) without its line breaks.
local function b64(s) return (gsub(require("zever.mime_core").base64(s), "[\r\n]", "")) end

-- --- proxies ------------------------------------------------------------------------------

local function env(name) return getenv(name) or getenv(lower(name)) end

local function no_proxy(host)
  local list = env("NO_PROXY")
  if not list or list == "" then return false end
  for item in list:gmatch("[^,%s]+") do
    if item == "*" then return true end
    item = lower(item:gsub("^%*?%.", ""):gsub(":%d+$", ""))
    if host == item or sub(host, -#item - 1) == "." .. item then return true end
  end
  return false
end

local function proxy_for(u, opt)
  local p = opt
  if p == false then return nil end
  if p == nil then
    if no_proxy(u.host) then return nil end
    p = u.scheme == "https" and env("HTTPS_PROXY") or env("HTTP_PROXY")
    if not p or p == "" then return nil end
  end
  if not p:match("^%a[%w+.-]*://") then p = "http://" .. p end
  local pu, why = parse_url(p)
  if not pu then return nil, why end
  return pu
end

-- --- connections -----------------------------------------------------------------------------

local pools = {}   -- key -> list of idle conn wrappers
local tls_cache = setmetatable({}, { __mode = "v" })

local function dispatch(token, a, b, c)
  complete(token, a, b, c)
end

-- A connection wrapper: the C connection, one re-armable timer for every wait on it, and the
-- token being waited on (the timer completes it with a timeout).
local function timer_fired(w)
  local token = w.token
  w.token = nil
  w.timed_out = true
  w.c:close()
  if token then complete(token, nil, "timed out", "timeout") end
end

local function new_conn(key)
  local w = { key = key, c = core.new(dispatch), uses = 0 }
  w.timer = loop.timer(function() timer_fired(w) end)
  return w
end

local function close_conn(w)
  if w.closed then return end
  w.closed = true
  w.timer:stop()
  w.c:close()
end

-- Waits for an operation that returned pending (true) or finished (false, results...).
local function wait(w, token, limit, pending, a, b, c)
  if not pending then return a, b, c end
  w.token = token
  w.timer:start(limit > 0 and limit or 0)
  a, b, c = await(token)
  w.token = nil
  w.timer:stop()
  return a, b, c
end

local function tls_context(o)
  o = o or {}
  local key = (o.ca_file or "") .. "\0" .. tostring(o.verify ~= false) .. "\0" ..
    (o.cert or "") .. "\0" .. (o.key or "")
  local ctx = tls_cache[key]
  if ctx then return ctx end
  local tcore = require "zever.httpc_tls_core"
  local msg
  ctx, msg = tcore.context{ ca_file = o.ca_file, verify = o.verify ~= false, cert = o.cert,
    key = o.key }
  if not ctx then return nil, msg end
  tls_cache[key] = ctx
  return ctx
end

-- --- one exchange -----------------------------------------------------------------------------

local Response = {}
Response.__index = Response

function Response:header(name)
  return self.headers[lower(name)]
end

local function phase_limit(st, phase)
  local left = st.deadline - now()
  local p = st.phases[phase]
  if p and p < left then return p, phase end
  return left, "total"
end

local function timeout_err(st, phase, limit)
  return fail("timeout", format("%s: %s timed out after %gs", st.shown,
    phase == "total" and "the request" or phase, limit), { phase = phase })
end

-- Runs one operation on w with the phase's limit; maps a failure to a zever error.
local function op(st, w, phase, name, x, y)
  local limit, which = phase_limit(st, phase)
  if limit <= 0 then close_conn(w); return timeout_err(st, which, st.phases[which] or st.total) end
  local token, conn = token_of(), w.c
  local a, b, c
  if name == "read" then a, b, c = wait(w, token, limit, conn:read(token))
  elseif name == "send" then a, b, c = wait(w, token, limit, conn:send(x, token))
  else a, b, c = wait(w, token, limit, conn[name](conn, x, y, token)) end
  if a == nil then
    if c == "timeout" then
      w.closed = true
      return timeout_err(st, which, which == "total" and st.total or limit)
    end
    close_conn(w)
    local code = c == "protocol" and "protocol" or c == "too_large" and "too_large" or
      c == "refused" and "refused" or c == "dns" and "dns" or c == "tls" and "tls" or
      c == "closed" and "closed" or "unavailable"
    -- b is "host:port: what": shown already names the host.
    return fail(code, st.shown .. ": " .. (b:gsub("^[^ ]-:%d+: ", "")), { kind = c })
  end
  return a, b, c
end

local function connect_fresh(st, u, proxy)
  local w = new_conn(st.key)
  local target = proxy or u
  M.stats.connects = M.stats.connects + 1
  local ok, err = op(st, w, "connect", "connect", target.host, target.port)
  if not ok then return nil, err end
  if u.scheme == "https" then
    if proxy then -- a tunnel: CONNECT host:port
      local authority = (u.v6 and ("[" .. u.host .. "]") or u.host) .. ":" .. u.port
      local fields = { "Host", authority }
      if proxy.user then
        fields[3], fields[4] = "Proxy-Authorization",
          "Basic " .. b64(proxy.user .. ":" .. (proxy.password or ""))
      end
      w.c:expect(true)
      ok, err = op(st, w, "connect", "send", core.write_head("CONNECT", authority, fields))
      if not ok then return nil, err end
      local ev, status = op(st, w, "connect", "read")
      if not ev then return nil, status end
      if status < 200 or status > 299 then
        close_conn(w)
        return fail("proxy", format("%s: the proxy refused the tunnel (%d)", st.shown, status),
          { status = status })
      end
      ev, err = op(st, w, "connect", "read")
      if not ev then return nil, err end
    end
    local ctx, msg = tls_context(st.tls)
    if not ctx then close_conn(w); return fail("tls", st.shown .. ": " .. msg) end
    ok, err = op(st, w, "tls", "tls", ctx, u.host)
    if not ok then return nil, err end
  end
  return w
end

local function checkout(key)
  local pool = pools[key]
  while pool and #pool > 0 do
    local w = remove(pool)
    if w.c:checkout() then return w end
    close_conn(w)
  end
end

local function checkin(st, w, reusable)
  if not reusable or not st.keepalive or w.closed then close_conn(w); return end
  local pool = pools[w.key]
  if not pool then pool = {}; pools[w.key] = pool end
  if #pool >= M.MAX_IDLE_PER_HOST then close_conn(w); return end
  w.c:idle()
  pool[#pool + 1] = w
end

-- Closes every pooled connection (a script that wants the loop to be empty; tests).
function M.close_idle()
  for key, pool in pairs(pools) do
    for _, w in ipairs(pool) do close_conn(w) end
    pools[key] = nil
  end
end

-- How many idle connections the pool holds for key ("http://127.0.0.1:8080"), or in all.
function M.idle_count(key)
  local n = 0
  for k, pool in pairs(pools) do
    if not key or k == key then n = n + #pool end
  end
  return n
end


-- Builds the head: the caller's fields win over the defaults (case-insensitively).
local function build_head(st, method, u, proxy, body_len, chunked)
  local h = {}
  for k, v in pairs(st.headers) do h[lower(k)] = v end
  if h.host == nil then h.host = host_port(u) end
  if h["user-agent"] == nil then h["user-agent"] = M.USER_AGENT end
  if st.decompress and h["accept-encoding"] == nil then h["accept-encoding"] = "gzip" end
  if u.user and h.authorization == nil then
    h.authorization = "Basic " .. b64(u.user .. ":" .. (u.password or ""))
  end
  if proxy and u.scheme == "http" and proxy.user and h["proxy-authorization"] == nil then
    h["proxy-authorization"] = "Basic " .. b64(proxy.user .. ":" .. (proxy.password or ""))
  end
  if chunked then
    h["transfer-encoding"] = "chunked"
    h["content-length"] = nil
  elseif body_len and h["content-length"] == nil then
    h["content-length"] = tostring(body_len)
  elseif not body_len and (method == "POST" or method == "PUT" or method == "PATCH") then
    h["content-length"] = "0"
  end
  for _, fn in ipairs(M.before_send) do fn(h, st.request) end
  local fields, n = {}, 0
  for k, v in pairs(h) do
    if type(v) == "table" then
      for _, x in ipairs(v) do fields[n + 1], fields[n + 2] = k, tostring(x); n = n + 2 end
    elseif v ~= false then
      fields[n + 1], fields[n + 2] = k, tostring(v)
      n = n + 2
    end
  end
  local target = (proxy and u.scheme == "http") and
    ("http://" .. host_port(u) .. u.target) or u.target
  local head, msg = core.write_head(method, target, fields)
  if not head then return nil, msg end
  return head
end

local function headers_map(list)
  local h = {}
  for i = 1, #list, 2 do
    local k, v = lower(list[i]), list[i + 1]
    local old = h[k]
    if old == nil then h[k] = v
    elseif k == "set-cookie" then h[k] = old .. "\n" .. v
    else h[k] = old .. ", " .. v end
  end
  return h
end

-- Sends the request on w and reads the head. Returns status, headers | nil, err, retryable.
local function exchange(st, w, method, u, proxy)
  local body = st.body
  local chunked = type(body) == "function"
  -- A plain request (no fields of the caller's, no hooks, no body, no proxy) has the same head
  -- every time: it is kept with the parsed URL.
  local plain = body == nil and not proxy and next(st.headers) == nil and #M.before_send == 0
    and not u.user and (method == "GET" or method == "HEAD")
  local hkey = plain and (st.decompress and method or method .. "-")
  local head, msg = plain and u.heads[hkey]
  if not head then
    head, msg = build_head(st, method, u, proxy, type(body) == "string" and #body or nil, chunked)
    if head and plain then u.heads[hkey] = head end
  end
  if not head then close_conn(w); return fail("invalid", st.shown .. ": " .. msg) end
  w.c:expect(method == "HEAD")
  local out = head
  if type(body) == "string" and #body <= 65536 then out = head .. body; body = nil end
  local ok, err = op(st, w, "first_byte", "send", out)
  if ok and type(body) == "string" then ok, err = op(st, w, "idle", "send", body) end
  if ok and chunked then
    while ok do
      local piece = body()
      if piece == nil or piece == "" then
        if piece == nil then ok, err = op(st, w, "idle", "send", "0\r\n\r\n"); break end
      else
        piece = tostring(piece)
        ok, err = op(st, w, "idle", "send", format("%x\r\n", #piece) .. piece .. "\r\n")
      end
    end
  end
  if not ok then return nil, err, not chunked end
  local ev, status, fields = op(st, w, "first_byte", "read")
  if not ev then return nil, status, not chunked and status.kind == "closed" end
  return status, headers_map(fields)
end

local function decoder_for(st, headers)
  if not st.decompress then return nil end
  local ce = headers["content-encoding"]
  if not ce then return nil end
  ce = lower(ce)
  if ce == "gzip" or ce == "x-gzip" or ce == "deflate" then
    return require("zever.compress").inflater()
  end
  return nil
end

-- Reads the next piece of the body: chunk | nil (the end) | nil, err. Handles decoding, the
-- size limit, the idle timeout and giving the connection back at the end.
local function next_piece(res)
  local st, w = res._st, res._w
  if not w then return nil, res._err end
  while true do
    local ev, data = op(st, w, "idle", "read")
    if not ev then
      res._w, res._err = nil, data
      return nil, data
    end
    if ev == "done" then
      res._w = nil
      if res._z then res._z:close() end
      checkin(st, w, data)
      return nil
    end
    res._raw = res._raw + #data
    if res._z then
      local out, e = res._z:feed(data)
      if not out then
        close_conn(w)
        res._w = nil
        res._err = errors.new("http", "protocol", st.shown .. ": the body's " .. e)
        return nil, res._err
      end
      data = out
    end
    res._size = res._size + #data
    if res._size > st.max_body or res._raw > st.max_body then
      close_conn(w)
      res._w = nil
      res._err = errors.new("http", "too_large", format("%s: the body is larger than %d bytes",
        st.shown, st.max_body), { limit = st.max_body })
      return nil, res._err
    end
    if data ~= "" then return data end
  end
end

function Response:read()
  if self._st and self._w then
    self._st.deadline = now() + self._st.total -- a streaming body: the total restarts per read
  end
  return next_piece(self)
end

function Response:each(fn)
  while true do
    local piece, err = self:read()
    if not piece then return err == nil, err end
    fn(piece)
  end
end

function Response:close()
  if self._w then close_conn(self._w); self._w = nil end
end

local function read_all(res)
  local parts, n = {}, 0
  while true do
    local piece, err = next_piece(res)
    if not piece then
      if err then return nil, err end
      return concat(parts, "", 1, n)
    end
    n = n + 1
    parts[n] = piece
  end
end

-- --- the front door ------------------------------------------------------------------------

local METHODS_SAFE = { GET = true, HEAD = true, OPTIONS = true, PUT = true, DELETE = true,
  TRACE = true }

local function check_opts(o)
  if type(o) ~= "table" then error("http.request: want a table of options", 3) end
  if type(o.url) ~= "string" then error("http.request: url must be a string", 3) end
  if o.method ~= nil and type(o.method) ~= "string" then
    error("http.request: method must be a string", 3)
  end
  if o.headers ~= nil and type(o.headers) ~= "table" then
    error("http.request: headers must be a table", 3)
  end
  local b = o.body
  if b ~= nil and type(b) ~= "string" and type(b) ~= "function" then
    error("http.request: body must be a string or an iterator function", 3)
  end
  for _, k in ipairs{ "timeout", "max_redirects", "max_body" } do
    local v = o[k]
    if v ~= nil and (type(v) ~= "number" or v ~= v or v < 0) then
      error("http.request: " .. k .. " must be a number >= 0", 3)
    end
  end
  if o.timeouts ~= nil and type(o.timeouts) ~= "table" then
    error("http.request: timeouts must be a table", 3)
  end
end

local function with_query(url, q)
  if not q then return url end
  local parts = {}
  for k, v in pairs(q) do parts[#parts + 1] = escape(k) .. "=" .. escape(v) end
  table.sort(parts)
  if #parts == 0 then return url end
  return url .. (find(url, "?", 1, true) and "&" or "?") .. concat(parts, "&")
end

local NO_FIELDS = setmetatable({}, { __newindex = function() error("read-only", 2) end })
local DEFAULT_PHASES = { connect = DEFAULTS.connect, tls = DEFAULTS.tls, idle = DEFAULTS.idle }

function M.request(o)
  check_opts(o)
  local method = (o.method or "GET"):upper()
  local url = with_query(o.url, o.query)
  local total = o.timeout or DEFAULTS.timeout
  local t = o.timeouts
  local st = {
    request = o, headers = o.headers or NO_FIELDS, body = o.body, total = total,
    deadline = now() + total,
    phases = t and { connect = t.connect or DEFAULTS.connect, tls = t.tls or DEFAULTS.tls,
      first_byte = t.first_byte, idle = t.idle or DEFAULTS.idle } or DEFAULT_PHASES,
    max_body = o.max_body or DEFAULTS.max_body, decompress = o.decompress ~= false,
    keepalive = o.keepalive ~= false, tls = o.tls,
  }
  local redirects = 0
  local max_redirects = o.max_redirects or DEFAULTS.max_redirects
  while true do
    local u, why = parse_cached(url)
    if not u then
      return fail("invalid", "http: " .. why .. ": " .. (url:gsub("//[^/@]*@", "//"):gsub("%?.*$", "")))
    end
    local sh = u.shown[method]
    if not sh then sh = shown(method, u); u.shown[method] = sh end
    st.shown = sh
    local proxy, perr
    if o.proxy == nil then
      -- The environment's proxy for this URL, read once per URL (the process's environment).
      if u.env_proxy == nil then
        u.env_proxy, perr = proxy_for(u, nil)
        if perr then u.env_proxy = nil; return fail("invalid", "http: the proxy URL: " .. perr) end
        u.env_proxy = u.env_proxy or false
      end
      proxy = u.env_proxy or nil
    else
      proxy, perr = proxy_for(u, o.proxy)
      if perr then return fail("invalid", "http: the proxy URL: " .. perr) end
    end
    -- Connections differ by proxy and by TLS settings too: one verified with a CA must not
    -- serve a request that asked for another (or for verification at all).
    local to = u.scheme == "https" and st.tls
    if not proxy and not to then
      st.key = u.key
      if not st.key then st.key = u.scheme .. "://" .. host_port(u); u.key = st.key end
    else
      st.key = u.scheme .. "://" .. host_port(u) ..
        (proxy and (" via " .. proxy.host .. ":" .. proxy.port) or "") ..
        (to and (" tls " .. tostring(to.ca_file) .. " " .. tostring(to.verify ~= false) .. " " ..
          tostring(to.cert)) or "")
    end
    local status, headers, w
    for attempt = 1, 2 do
      local reused = false
      w = st.keepalive and checkout(st.key)
      M.stats.requests = M.stats.requests + 1
      if w then reused = true; M.stats.reused = M.stats.reused + 1
      else
        local err
        w, err = connect_fresh(st, u, proxy)
        if not w then return nil, err end
      end
      local retry
      status, headers, retry = exchange(st, w, method, u, proxy)
      if status then break end
      close_conn(w)
      -- A pooled connection the server had closed: the request never reached it; once more
      -- on a fresh one when it can be replayed.
      if not (reused and retry and attempt == 1 and (METHODS_SAFE[method] or
          type(st.body) ~= "function")) then
        return nil, headers
      end
    end
    local loc = headers.location
    if status >= 300 and status < 400 and status ~= 304 and loc and redirects < max_redirects then
      -- Drain a small body so the connection can be reused; give up on a large one.
      local cl = tonumber(headers["content-length"] or "")
      if cl and cl <= 65536 and method ~= "HEAD" then
        local res = setmetatable({ _st = st, _w = w, _raw = 0, _size = 0 }, Response)
        local _, err = read_all(res)
        if err then close_conn(w) end
      elseif method == "HEAD" then
        local res = setmetatable({ _st = st, _w = w, _raw = 0, _size = 0 }, Response)
        read_all(res)
      else
        close_conn(w)
      end
      redirects = redirects + 1
      local next_url = resolve(url, loc)
      local nu = parse_url(next_url)
      if not nu then return fail("protocol", st.shown .. ": a redirect to a bad URL") end
      if status == 303 and method ~= "HEAD" or ((status == 301 or status == 302) and method == "POST") then
        method = "GET"
        st.body = nil
        st.headers = {}
        for k, v in pairs(o.headers or {}) do
          local lk = lower(k)
          if lk ~= "content-type" and lk ~= "content-length" then st.headers[k] = v end
        end
      elseif type(st.body) == "function" then
        return fail("invalid", st.shown .. ": cannot replay a streamed body on a redirect")
      end
      if nu.host ~= u.host or nu.port ~= u.port or nu.scheme ~= u.scheme then
        local h = {}
        for k, v in pairs(st.headers) do
          local lk = lower(k)
          if lk ~= "authorization" and lk ~= "cookie" then h[k] = v end
        end
        st.headers = h
      end
      url = next_url
    elseif status >= 300 and status < 400 and loc and max_redirects > 0 and redirects >= max_redirects then
      close_conn(w)
      return fail("too_many_redirects", format("%s: more than %d redirects", st.shown,
        max_redirects), { limit = max_redirects })
    else
      local res = setmetatable({ status = status, headers = headers, url = url,
        redirects = redirects, _st = st, _w = w, _raw = 0, _size = 0 }, Response)
      res._z = method ~= "HEAD" and decoder_for(st, headers) or nil
      local cl = tonumber(headers["content-length"] or "")
      if cl and cl > st.max_body and not res._z then
        close_conn(w)
        return fail("too_large", format("%s: the body is larger than %d bytes", st.shown,
          st.max_body), { limit = st.max_body })
      end
      if o.stream then return res end
      local body, err = read_all(res)
      if not body then return nil, err end
      res.body = body
      return res
    end
  end
end

function M.get(url, opts)
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.url, o.method = url, "GET"
  return M.request(o)
end

function M.head(url, opts)
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.url, o.method = url, "HEAD"
  return M.request(o)
end

function M.post(url, body, opts)
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  o.url, o.method, o.body = url, "POST", body
  return M.request(o)
end

M.USER_AGENT = "zever/" .. tostring(require("zever.sys").version)

-- For specs: the pure response parser and head writer (golden rows).
M.parse = core.parse
M.write_head = core.write_head

return M
