-- zever.websocket: WebSocket endpoints (RFC 6455; docs/websockets.md).
--
--   app:websocket("/ws", function(ws, req) ... end[, opts])
--   ws:recv()              -> message, "text" | "binary"  |  nil, err   (waits; yields)
--   ws:send(data[, "binary"]) -> true | nil, err           text unless "binary"
--   ws:ping([data])        -> true | nil, err
--   ws:close([code[, reason]]) -> true | nil, err          the close handshake
--   ws.close_code, ws.close_reason                         what the client's close said
-- err is a zever error of battery "websocket": code "closed" (the client closed: err.close_code
-- says how, 1005 when it gave no code; or the connection went away: 1006) or "protocol" (the
-- client broke a rule: err.close_code is what zever answered, 1002, 1007 or 1009).
--
-- opts: max_frame and max_message (bytes, default 16 MiB each; over: close 1009),
-- ping_interval (seconds, default 30; false for none): a ping whenever the connection was
-- quiet that long; a client that has not answered the previous ping by the next one is
-- disconnected (close 1011 is not sent to a dead peer: the connection is closed).
--
-- The frames are host/http/ws.c's (zever.http's req:upgrade, ws_next, ws_send): masking, RSV
-- bits, opcodes, control frames, fragmentation and UTF-8 of text are checked in C as frames
-- arrive. A ping is answered with a pong at once, inside recv; fragments are joined into one
-- message. One coroutine should use a connection (the handler's): recv and send from two
-- coroutines at once is not supported. Compression (permessage-deflate) is not negotiated: a
-- client's offer is declined (the handshake simply does not list the extension).

local ws_core = require "zever.ws_core"
local errors = require "zever.errors"
local loop = require "zever.loop"
local stream = require "zever.stream"

local type, tostring, setmetatable, concat, lower, find, format = type, tostring, setmetatable,
  table.concat, string.lower, string.find, string.format
local char = string.char

local M = {}

local TEXT, BINARY, CLOSE, PING, PONG = 1, 2, 8, 9, 10
local MAX = 16 * 1024 * 1024

local function closed(code, reason)
  return errors.new("websocket", "closed", "the connection is closed" ..
    (code and format(" (%d%s)", code, reason and reason ~= "" and ": " .. reason or "") or ""),
    { close_code = code, reason = reason })
end

local WS = {}
WS.__index = WS

local function close_payload(code, reason)
  if not code then return "" end
  return char(math.floor(code / 256), code % 256) .. (reason or "")
end

-- Ends the connection after our close frame (sent once).
local function shut(self, code, reason)
  if not self.sent_close then
    self.sent_close = true
    self.src:ws_send(CLOSE, close_payload(code, reason))
  end
  if self.timer then self.timer:stop() end
  if not self.res.finished then stream.close(self.res) end
end

-- Waits until more bytes came or the client went away; returns false when it did.
local function wait_data(self)
  return stream.wait(self.src, nil, nil)
end

function WS:recv()
  if self.done then return nil, self.done end
  local src = self.src
  local parts, kind
  while true do
    local op, payload, fin, code, reason = src:ws_next(self.frames)
    if op == nil then
      if payload == "closed" then
        self.done = closed(1006)
      else
        -- A broken rule: answer with its close code and end.
        self.done = errors.new("websocket", "protocol", "the client broke the protocol (close " ..
          tostring(payload) .. ")", { close_code = payload })
        shut(self, payload)
      end
      return nil, self.done
    elseif op == false then
      if not wait_data(self) then
        self.done = closed(1006)
        return nil, self.done
      end
    else
      self.quiet = false
      if op == PING then
        src:ws_send(PONG, payload)
      elseif op == PONG then
        self.awaiting_pong = false
      elseif op == CLOSE then
        self.close_code, self.close_reason = code, reason
        -- Echo the client's code (RFC 6455 5.5.1); 1005 (none given) is answered with none.
        shut(self, code ~= 1005 and code or nil)
        self.done = closed(code, reason)
        return nil, self.done
      else
        if op ~= 0 then
          kind = op == TEXT and "text" or "binary"
          parts = nil
          self.kind = kind
        end
        if fin and not parts then return payload, self.kind end
        parts = parts or {}
        parts[#parts + 1] = payload
        if fin then return concat(parts), self.kind end
      end
    end
  end
end

local function send_frame(self, op, data)
  if self.done or self.sent_close then return nil, self.done or closed() end
  local src = self.src
  if not src:ws_send(op, data) then
    self.done = closed(1006)
    return nil, self.done
  end
  self.quiet = false
  if src:pending() > stream.HIGH and not stream.wait(src, stream.LOW) then
    self.done = closed(1006)
    return nil, self.done
  end
  return true
end

function WS:send(data, kind)
  if type(data) ~= "string" then
    if type(data) == "number" then data = tostring(data)
    else error("ws:send: want a string, got " .. type(data), 2) end
  end
  if kind ~= nil and kind ~= "text" and kind ~= "binary" then
    error('ws:send: kind must be "text" or "binary"', 2)
  end
  if kind ~= "binary" and not ws_core.utf8(data) then
    error('ws:send: a text message must be UTF-8 (send it as "binary")', 2)
  end
  return send_frame(self, kind == "binary" and BINARY or TEXT, data)
end

function WS:ping(data)
  data = data or ""
  if type(data) ~= "string" or #data > 125 then
    error("ws:ping: data must be a string of at most 125 bytes", 2)
  end
  return send_frame(self, PING, data)
end

function WS:close(code, reason)
  code = code or 1000
  if type(code) ~= "number" or not (code == 1000 or (code >= 3000 and code <= 4999)
    or (code >= 1001 and code <= 1003) or (code >= 1007 and code <= 1011)) then
    error("ws:close: invalid close code " .. tostring(code), 2)
  end
  if reason ~= nil and (type(reason) ~= "string" or #reason > 123 or not ws_core.utf8(reason)) then
    error("ws:close: reason must be UTF-8 of at most 123 bytes", 2)
  end
  if self.done or self.sent_close then return nil, self.done or closed() end
  shut(self, code, reason)
  self.done = closed(code, reason)
  return true
end

local function token_in(list, want)
  if not list then return false end
  for t in list:gmatch("[^,%s]+") do
    if lower(t) == want then return true end
  end
  return false
end

-- The route handler of app:websocket: checks the handshake, upgrades, runs fn(ws, req).
function M.handler(fn, opts)
  opts = opts or {}
  local max_frame, max_message = opts.max_frame or MAX, opts.max_message or MAX
  local ping_interval = opts.ping_interval
  if ping_interval == nil then ping_interval = 30 end
  return function(req, res)
    local src = res.headers[0]
    if type(src) ~= "userdata" then
      return res:status(400):json({ error = "websocket_needs_a_connection" })
    end
    if not token_in(req:header("upgrade"), "websocket")
      or not token_in(req:header("connection"), "upgrade") then
      res:header("Upgrade", "websocket")
      return res:status(426):json({ error = "upgrade_required" })
    end
    if req:header("sec-websocket-version") ~= "13" then
      res:header("Sec-WebSocket-Version", "13")
      return res:status(426):json({ error = "unsupported_websocket_version" })
    end
    local key = req:header("sec-websocket-key")
    if not key or #key ~= 24 or not find(key, "^[%w+/]+==$") then
      return res:status(400):json({ error = "invalid_websocket_key" })
    end
    local head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n" ..
      "Connection: Upgrade\r\nSec-WebSocket-Accept: " .. ws_core.accept(key) .. "\r\n\r\n"
    local frames = src:upgrade(head, max_frame, max_message)
    -- The access log shows the 101 the client got, not the response object's default 200.
    res.streamed, res.src, res.sent, res.body, res.code = true, src, 0, "", 101
    if not frames then
      res.finished = true
      return
    end
    local ws = setmetatable({ src = src, frames = frames, res = res, quiet = true }, WS)
    if ping_interval then
      ws.timer = loop.every(ping_interval, function()
        if ws.done or ws.sent_close then
          ws.timer:stop()
          return
        end
        if ws.awaiting_pong then
          -- No pong for a whole interval: the peer is gone without a FIN.
          ws.timer:stop()
          res.finished = true -- nothing more goes out: its recv learns through the abort
          src:abort()
          return
        end
        if ws.quiet then
          ws.awaiting_pong = true
          src:ws_send(PING, "")
        end
        ws.quiet = true
      end)
    end
    local ok, err = pcall(fn, ws, req)
    if ws.timer then ws.timer:stop() end
    if not ok then
      shut(ws, 1011)
      error(err, 0)
    end
    if not ws.sent_close and not ws.done then shut(ws, 1000) end
    if not res.finished then stream.close(res) end
  end
end

return M
