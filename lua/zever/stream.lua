-- zever.stream: streamed responses and server-sent events (docs/streaming.md). zever.response
-- forwards res:write, res:flush, res:finish, res:sleep, res:closed and res:sse here, loading
-- this module on the first streamed response, so that a plain response pays nothing for it.
--
--   res:write(chunk)    -> true | nil, err   sends the head (status, headers set so far) on
--                                            the first call, then chunk; waits (yields) while
--                                            the connection's queued bytes are above HIGH
--   res:flush()         -> true | nil, err   sends the head if not yet, and waits until
--                                            nothing is queued in user space
--   res:finish()        -> true | nil, err   ends the body (the last chunk); zever finishes a
--                                            streamed response whose handler returned anyway
--   res:sleep(seconds)  -> true | nil, err   waits like zever.sleep, but ends early with
--                                            nil, err when the client goes away
--   res:closed()        -> boolean           the client went away
--   res:sse(opts)       -> sse               a server-sent event stream (see SSE below)
-- err is a zever error of battery "http", code "closed": the client went away. The handler
-- should return then; whatever it writes afterwards goes nowhere and costs nothing.
--
-- Framing: chunked (HTTP/1.1) unless the handler set a Content-Length header before the first
-- write: then exactly that many bytes must be written (more raises; finishing short closes the
-- connection, so the client cannot take a truncated body for a complete one). HTTP/1.0
-- clients get a close-delimited body.
--
-- The connection (the C request of zever.http, or zever.testing's table source) rides in slot
-- 0 of res.headers, which table.new(4, 0) allocates anyway: dispatch puts it there, and a
-- plain response neither reads it nor pays a table slot for it.
--
-- Waiting is zever.sched's one primitive: a token completed by the connection's watcher
-- (zever.http's req:watch: the queue drained, or the connection closed) or by a timer,
-- whichever comes first; the other is cancelled.

local sched = require "zever.sched"
local loop = require "zever.loop"
local errors = require "zever.errors"
local json = require "zever.json"

local type, tostring, error, setmetatable, tonumber, pcall = type, tostring, error,
  setmetatable, tonumber, pcall
local find, gsub, lower, format, floor = string.find, string.gsub, string.lower, string.format,
  math.floor
local token_of, await, complete = sched.token, sched.await, sched.complete

local M = {}

-- Back-pressure: a write that leaves more than HIGH bytes queued in user space (the kernel's
-- send buffer, a few MiB on loopback, is full by then) waits until the queue is down to LOW.
M.HIGH = 256 * 1024
M.LOW = 64 * 1024

local function closed_error()
  return errors.new("http", "closed", "the client went away")
end

local function source(res, what)
  local h = res.headers
  local src = h and h[0]
  if src == nil or type(src.head) ~= "function" then
    error(what .. ": this response has no connection to stream to (only a response of a " ..
      "request being served can stream)", 3)
  end
  return src
end

-- Waits until the connection's queue is down to low (low given), the client goes away, or
-- seconds pass (seconds given). Returns true, or false when the client went away.
local function wait(src, low, seconds)
  local token = token_of()
  local done, timer = false, nil
  local function fire(ok)
    if done then return end
    done = true
    if timer then timer:stop() end
    complete(token, ok)
  end
  local r = src:watch(fire, low)
  if r == "closed" then return false end
  if r == "ready" then return true end
  if seconds then
    timer = loop.after(seconds, function()
      src:unwatch()
      fire(true)
    end)
  end
  return await(token) and true or false
end
M.wait = wait

-- Sends the head once: the status and headers set so far, the content type, and the framing.
local function start(res, what)
  if res.streamed then
    if res.finished then error(what .. ": the response is finished", 3) end
    return res.src
  end
  local src = source(res, what)
  local h, n, length = {}, 0, nil
  local rh = res.headers
  for i = 1, #rh, 2 do
    local name, value = rh[i], rh[i + 1]
    if lower(name) == "content-length" then
      length = tonumber(value)
      if not length or length < 0 or length % 1 ~= 0 then
        error(what .. ": the Content-Length header must be an integer >= 0, got " ..
          tostring(value), 3)
      end
    else
      h[n + 1], h[n + 2], n = name, value, n + 2
    end
  end
  h[n + 1], h[n + 2] = "Content-Type", res.ctype or "text/plain; charset=utf-8"
  res.ctype = nil
  res.streamed, res.src, res.sent, res.body = true, src, 0, ""
  local ok = src:head(res.code, h, length)
  if not ok then res.gone = true end
  return src
end

function M.write(res, chunk)
  if type(chunk) ~= "string" then
    if type(chunk) == "number" then chunk = tostring(chunk)
    else error("res:write: want a string chunk, got " .. type(chunk), 2) end
  end
  local src = start(res, "res:write")
  if res.gone then return nil, closed_error() end
  local ok = src:write(chunk)
  if not ok then
    res.gone = true
    return nil, closed_error()
  end
  res.sent = res.sent + #chunk
  if src:pending() > M.HIGH and not wait(src, M.LOW) then
    res.gone = true
    return nil, closed_error()
  end
  return true
end

function M.flush(res)
  local src = start(res, "res:flush")
  if res.gone or not wait(src, 0) then
    res.gone = true
    return nil, closed_error()
  end
  return true
end

function M.finish(res)
  local src = start(res, "res:finish")
  res.finished = true
  if res.sse_timer then res.sse_timer:stop() end
  if res.gone then
    src:finish()
    return nil, closed_error()
  end
  if not src:finish() then return nil, closed_error() end
  return true
end

function M.closed(res)
  if res.gone then return true end
  local h = res.headers
  local src = h and h[0]
  if src == nil or type(src.closed) ~= "function" then return false end
  return src:closed()
end

function M.sleep(res, seconds)
  if type(seconds) ~= "number" or seconds ~= seconds or seconds < 0 then
    error("res:sleep: want a non-negative number of seconds, got " .. tostring(seconds), 2)
  end
  local src = res.src or source(res, "res:sleep")
  if res.gone or not wait(src, nil, seconds) then
    res.gone = true
    return nil, closed_error()
  end
  return true
end

-- What zever.server does with a streamed response once its handler is over: finishes it
-- (a handler that returned without res:finish) or, when the handler failed midway, closes the
-- connection (a 500 cannot follow a head already sent).
function M.close(res, failed)
  if res.sse_timer then res.sse_timer:stop() end
  if res.finished then return end
  res.finished = true
  local src = res.src
  if failed then
    src:abort()
    return
  end
  local ok, err = pcall(src.finish, src)
  if not ok then
    io.stderr:write("zever: http: ", tostring(err), "\n")
  end
end

-- --- server-sent events ---------------------------------------------------------------------
--
--   local sse = res:sse{ retry = 3000, heartbeat = 15 }
--   sse.last_event_id           the client's Last-Event-ID header (a reconnect), or nil
--   sse:send(data[, {event = "tick", id = "42", retry = ms}]) -> true | nil, err
--                               data: a string (split into data: lines) or a table (JSON)
--   sse:comment(text)           -> true | nil, err   a ": text" line (ignored by clients)
--   sse:sleep(seconds)          -> true | nil, err   res:sleep
--   sse:closed()                -> boolean
--   sse:close()                 -> true | nil, err   res:finish
-- The head says Content-Type: text/event-stream, Cache-Control: no-cache and
-- X-Accel-Buffering: no (nginx would buffer the stream otherwise), and goes out at once.
-- heartbeat (seconds, default 15; false for none): a comment line whenever that long passed
-- without an event, so that proxies do not time out an idle stream and a client that left is
-- noticed (its write fails) even while the handler waits for something else.

local SSE = {}
SSE.__index = SSE

local function field(what, name, v)
  if v == nil then return nil end
  if type(v) == "number" then v = tostring(v) end
  if type(v) ~= "string" then error(format("%s: %s must be a string, got %s", what, name, type(v)), 3) end
  if find(v, "[\r\n%z]") then error(format("%s: %s must not contain CR, LF or NUL", what, name), 3) end
  return v
end

function SSE:send(data, opts)
  if opts ~= nil and type(opts) ~= "table" then error("sse:send: opts must be a table", 2) end
  opts = opts or {}
  if type(data) == "table" then data = json.encode(data)
  elseif type(data) == "number" then data = tostring(data)
  elseif type(data) ~= "string" then
    error("sse:send: data must be a string or a table (sent as JSON), got " .. type(data), 2)
  end
  local out = {}
  local event, id = field("sse:send", "event", opts.event), field("sse:send", "id", opts.id)
  if event then out[#out + 1] = "event: " .. event .. "\n" end
  if id then out[#out + 1] = "id: " .. id .. "\n" end
  if opts.retry ~= nil then
    local r = opts.retry
    if type(r) ~= "number" or r < 0 or r % 1 ~= 0 then
      error("sse:send: retry must be an integer number of milliseconds", 2)
    end
    out[#out + 1] = format("retry: %d\n", r)
  end
  -- Each line of data is a data: line; CRLF, CR and LF all end a line (the SSE grammar).
  data = gsub(gsub(data, "\r\n", "\n"), "\r", "\n")
  for line in (data .. "\n"):gmatch("([^\n]*)\n") do out[#out + 1] = "data: " .. line .. "\n" end
  out[#out + 1] = "\n"
  self.idle = false
  return M.write(self.res, table.concat(out))
end

function SSE:comment(text)
  text = field("sse:comment", "text", text ~= nil and text or "")
  self.idle = false
  return M.write(self.res, ": " .. text .. "\n\n")
end

function SSE:sleep(seconds)
  return M.sleep(self.res, seconds)
end

function SSE:closed()
  return M.closed(self.res)
end

function SSE:close()
  return M.finish(self.res)
end

function M.sse(res, opts)
  if opts ~= nil and type(opts) ~= "table" then error("res:sse: opts must be a table", 2) end
  opts = opts or {}
  if res.streamed then error("res:sse: the response was already started", 2) end
  local src = source(res, "res:sse")
  local hb = opts.heartbeat
  if hb == nil then hb = 15 end
  if hb ~= false and (type(hb) ~= "number" or hb ~= hb or hb <= 0) then
    error("res:sse: heartbeat must be a number of seconds > 0, or false", 2)
  end
  local retry = opts.retry
  if retry ~= nil and (type(retry) ~= "number" or retry < 0 or retry % 1 ~= 0) then
    error("res:sse: retry must be an integer number of milliseconds", 2)
  end
  res.ctype = "text/event-stream; charset=utf-8"
  res:header("Cache-Control", "no-cache")
  res:header("X-Accel-Buffering", "no")
  local s = setmetatable({ res = res, idle = true,
    last_event_id = src:header("last-event-id") }, SSE)
  start(res, "res:sse")
  -- The first bytes go out now, so the client sees the stream open before the first event.
  local first = retry and format("retry: %d\n\n", floor(retry)) or ": ok\n\n"
  local ok, err = M.write(res, first)
  if not ok then return s, err end
  if hb then
    res.sse_timer = loop.every(hb, function()
      if res.finished or res.gone then
        res.sse_timer:stop()
        return
      end
      if s.idle and src:pending() <= M.HIGH then
        if not src:write(": heartbeat\n\n") then
          res.gone = true
          res.sse_timer:stop()
        end
      end
      s.idle = true
    end)
  end
  return s
end

-- --- request bodies (docs/streaming.md, "Request bodies") -----------------------------------------
--
-- src is the C request of zever.http (req.source), whose body_read/body_buffer (host/http/
-- lx_body.c) never wait: they answer false when nothing is there yet, and the request's
-- watcher (req:watch, the same as a streamed response's) is called once something came.

local BODY_STATUS = { too_large = 413, timeout = 408, invalid = 400, closed = 400 }
local BODY_MESSAGE = {
  too_large = "the request body is larger than this route accepts",
  timeout = "the client stopped sending the request body (http.body_timeout)",
  invalid = "the request body's framing is malformed",
  closed = "the client went away",
}

local function body_error(code)
  return errors.new("http", code, BODY_MESSAGE[code] or code, { status = BODY_STATUS[code] or 400 })
end
M.body_error = body_error

-- The next piece of the body (at most n bytes), waiting for it; nil at the end; nil, err when
-- the client went away, the body broke a limit or timed out (err.status: 400, 408, 413).
-- limit: the most bytes the route accepts in all (counted in state.read).
function M.read_body(src, n, state)
  while true do
    local chunk, code = src:body_read(n)
    if chunk then
      if state then
        state.read = state.read + #chunk
        if state.limit and state.read > state.limit then return nil, body_error("too_large") end
      end
      return chunk
    end
    if chunk == nil then
      if code == nil then return nil end
      return nil, body_error(code)
    end
    if not wait(src) then return nil, body_error("closed") end
  end
end

-- Collects a streamed body whole (a route that did not ask for streaming): true, or nil, err.
function M.buffer_body(src)
  while true do
    local ok, code = src:body_buffer()
    if ok then return true end
    if ok == nil then return nil, body_error(code) end
    if not wait(src) then return nil, body_error("closed") end
  end
end

return M
