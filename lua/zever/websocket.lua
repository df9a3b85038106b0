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
-- deflate (below); max_queue (bytes, default 1 MiB) and on_slow ("close" | "drop"): what a
-- broadcast does to a connection with more than max_queue bytes queued (WS:deliver).
--
-- Rooms: ws:join(room), ws:leave(room), ws:broadcast(room, msg[, kind]) (to the others) and
-- app:broadcast(room, msg[, kind]) (to all): zever.websocket_rooms, over app.eventbus.
--
-- The frames are host/http/ws.c's (zever.http's req:upgrade, ws_next, ws_send): masking, RSV
-- bits, opcodes, control frames, fragmentation and UTF-8 of text are checked in C as frames
-- arrive. A ping is answered with a pong at once, inside recv; fragments are joined into one
-- message. One coroutine should use a connection (the handler's): recv and send from two
-- coroutines at once is not supported.
--
-- permessage-deflate (RFC 7692), opts.deflate (default: config http.ws_deflate, false):
-- true or { threshold = 256, level = 6, window_bits = 15, context_takeover = true }. M.negotiate
-- picks the first offer of the client's Sec-WebSocket-Extensions it can honour and declines the
-- rest (an unknown or repeated parameter, a bad value, server_max_window_bits=8: zlib cannot
-- make a 256-byte window); no acceptable offer means no compression, never a failed handshake.
-- Received compressed messages (RSV1) are inflated at most max_message bytes (more: close 1009;
-- corrupt data: 1007); sent messages of threshold bytes or more are deflated. The zlib state is
-- made on first use (zever.compress, the lazy module): about 256 KiB for a compressor at 15
-- window bits with context takeover, 32 KiB for a decompressor.

local ws_core = require "zever.ws_core"
local errors = require "zever.errors"
local loop = require "zever.loop"
local stream = require "zever.stream"

local type, tostring, setmetatable, concat, lower, find, format = type, tostring, setmetatable,
  table.concat, string.lower, string.find, string.format
local char = string.char
local tonumber, ipairs, gsub, match, sub = tonumber, ipairs, string.gsub, string.match, string.sub

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
    local op, payload, fin, code, reason = src:ws_next(self.frames)   -- code: rsv1 for data
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
          self.kind, self.compressed = kind, code
        end
        if fin and not parts then
          if not self.compressed then return payload, self.kind end
          return self:inflate(payload)
        end
        parts = parts or {}
        parts[#parts + 1] = payload
        if fin then
          if not self.compressed then return concat(parts), self.kind end
          return self:inflate(concat(parts))
        end
      end
    end
  end
end

local function broke(self, code, why)
  self.done = errors.new("websocket", "protocol", "the client broke the protocol (close " ..
    tostring(code) .. (why and ": " .. why or "") .. ")", { close_code = code })
  shut(self, code)
  return nil, self.done
end

-- A compressed message's payload, inflated (at most max_message bytes) and checked.
function WS:inflate(payload)
  local pmd = self.pmd
  local z = self.inflater
  if not z then
    z = require("zever.compress").pmd_inflater(15)
    self.inflater = z
  end
  local out, err = z:inflate(payload, self.max_message, pmd.client_reset)
  if not out then
    if err == "too_big" then return broke(self, 1009, "inflated message too big") end
    return broke(self, 1007, "corrupt compressed data")
  end
  if self.kind == "text" and not ws_core.utf8(out) then return broke(self, 1007) end
  return out, self.kind
end

-- Queues one frame without waiting (deflated when negotiated and big enough); false when the
-- connection is gone.
local function put_frame(self, op, data)
  local pmd, rsv1 = self.pmd, nil
  if pmd and op < 8 and #data >= pmd.threshold then
    local z = self.deflater
    if not z then
      z = require("zever.compress").pmd_deflater(pmd.server_bits, pmd.level)
      self.deflater = z
    end
    data, rsv1 = z:deflate(data, pmd.server_reset), true
  end
  if not self.src:ws_send(op, data, true, rsv1) then
    self.done = closed(1006)
    return false
  end
  self.quiet = false
  return true
end

local function send_frame(self, op, data)
  if self.done or self.sent_close then return nil, self.done or closed() end
  local src = self.src
  if not put_frame(self, op, data) then return nil, self.done end
  if src:pending() > stream.HIGH and not stream.wait(src, stream.LOW) then
    self.done = closed(1006)
    return nil, self.done
  end
  return true
end

local check_message

function WS:send(data, kind)
  data, kind = check_message(data, kind, "ws:send")
  return send_frame(self, kind == "binary" and BINARY or TEXT, data)
end

-- --- rooms (zever.websocket_rooms: broadcast over app.eventbus) -----------------------------

function check_message(data, kind, what)
  if type(data) ~= "string" then
    if type(data) == "number" then data = tostring(data)
    else error(what .. ": want a string, got " .. type(data), 3) end
  end
  if kind ~= nil and kind ~= "text" and kind ~= "binary" then
    error(what .. ': kind must be "text" or "binary"', 3)
  end
  if kind ~= "binary" and not ws_core.utf8(data) then
    error(what .. ': a text message must be UTF-8 (send it as "binary")', 3)
  end
  return data, kind or "text"
end
M.check_message = check_message

function WS:join(room)
  if not self.app then error("ws:join: this connection has no app (use app:websocket)", 2) end
  return require("zever.websocket_rooms").join(self, room)
end

function WS:leave(room)
  return require("zever.websocket_rooms").leave(self, room)
end

-- To every connection in room, in every worker and process on the app's event bus, but this one.
function WS:broadcast(room, data, kind)
  if not self.app then error("ws:broadcast: this connection has no app (use app:websocket)", 2) end
  data, kind = check_message(data, kind, "ws:broadcast")
  return require("zever.websocket_rooms").broadcast(self.app, room, data, kind, self.id)
end

-- A broadcast's delivery to this connection: queued at once, never waited for. Over max_queue
-- bytes queued (a client that does not read), on_slow decides: "close" (the default: the
-- connection is dropped, its recv ends with closed 1006 and a "slow" flag) or "drop" (this
-- message is skipped, counted in ws.dropped). Returns false when the connection is gone.
function WS:deliver(data, kind)
  if self.done or self.sent_close then return false end
  if self.src:pending() > self.max_queue then
    if self.on_slow == "drop" then
      self.dropped = self.dropped + 1
      return true
    end
    self.slow = true
    self.done = closed(1006)
    if self.timer then self.timer:stop() end
    self.res.finished = true
    self.src:abort()
    return false
  end
  return put_frame(self, kind == "binary" and BINARY or TEXT, data)
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

-- --- permessage-deflate: the handshake's negotiation (RFC 7692 section 7) ----------------------

local function unquote(v)
  if v and sub(v, 1, 1) == '"' then return match(v, '^"(.*)"$') end
  return v
end

local function bits(v)
  if not v or not match(v, "^[1-9]%d?$") then return nil end
  local n = tonumber(v)
  return n >= 8 and n <= 15 and n or nil
end

-- One offer's parameters, or nil when the offer must be declined.
local function parse_offer(params)
  local p = {}
  for _, raw in ipairs(params) do
    local name, value = match(raw, "^%s*([^=%s]+)%s*=?%s*(.-)%s*$")
    if not name then return nil end
    name = lower(name)
    value = unquote(value ~= "" and value or nil)
    if p[name] ~= nil then return nil end                  -- a parameter given twice
    if name == "server_no_context_takeover" or name == "client_no_context_takeover" then
      if value then return nil end
      p[name] = true
    elseif name == "server_max_window_bits" then
      p[name] = bits(value)
      if not p[name] then return nil end
    elseif name == "client_max_window_bits" then
      if value then
        p[name] = bits(value)
        if not p[name] then return nil end
      else
        p[name] = true
      end
    else
      return nil                                           -- unknown to RFC 7692
    end
  end
  return p
end

local DEFLATE_DEFAULTS = { threshold = 256, level = 6, window_bits = 15, context_takeover = true }
-- The threshold when zever compresses each message alone (context_takeover false, or the
-- client's server_no_context_takeover) and the route set none: a message compressed alone
-- pays zlib's reset (about 100k instructions whatever its size) and shrinks little below a
-- few hundred bytes (a 64-byte JSON message: 94% of its size; 1 KiB: 31%; BENCHMARKS.md,
-- bench/ws_deflate_callgrind.sh), while with context takeover a 256-byte one shrinks to 22%.
M.ALONE_THRESHOLD = 1024

-- The deflate settings of a route (opts.deflate: true or a table), checked; nil when off.
function M.deflate_settings(d)
  if not d then return nil end
  if d == true then d = {} end
  if type(d) ~= "table" then error("websocket: deflate must be a boolean or a table", 3) end
  local s = {}
  for k, v in pairs(d) do
    if DEFLATE_DEFAULTS[k] == nil then error("websocket: deflate: unknown option " .. tostring(k), 3) end
    s[k] = v
  end
  local threshold_set = s.threshold ~= nil
  for k, v in pairs(DEFLATE_DEFAULTS) do if s[k] == nil then s[k] = v end end
  s.threshold_set = threshold_set
  if type(s.threshold) ~= "number" or s.threshold < 0 then
    error("websocket: deflate.threshold must be a number >= 0", 3)
  end
  if type(s.level) ~= "number" or s.level < 1 or s.level > 9 or s.level % 1 ~= 0 then
    error("websocket: deflate.level must be an integer 1..9", 3)
  end
  if type(s.window_bits) ~= "number" or s.window_bits < 9 or s.window_bits > 15
    or s.window_bits % 1 ~= 0 then
    error("websocket: deflate.window_bits must be an integer 9..15", 3)
  end
  return s
end

-- Picks the first permessage-deflate offer of header (Sec-WebSocket-Extensions) that settings
-- can honour: returns the response's extension value and the connection's state, or nil.
function M.negotiate(header, settings)
  if not header or not settings then return nil end
  for offer in gsub(header, '"[^"]*"', function(q) return (gsub(q, ",", "\0")) end)
      :gmatch("[^,]+") do
    local parts = {}
    for piece in offer:gmatch("[^;]+") do parts[#parts + 1] = gsub(piece, "%z", ",") end
    local name = lower(match(parts[1] or "", "^%s*(.-)%s*$"))
    if name == "permessage-deflate" then
      local params = {}
      for i = 2, #parts do params[#params + 1] = parts[i] end
      local p = parse_offer(params)
      local server_bits = p and math.min(settings.window_bits, p.server_max_window_bits or 15)
      if p and server_bits >= 9 then
        local out = { "permessage-deflate" }
        local server_reset = p.server_no_context_takeover or not settings.context_takeover
        if server_reset then out[#out + 1] = "server_no_context_takeover" end
        if p.client_no_context_takeover then out[#out + 1] = "client_no_context_takeover" end
        if server_bits < 15 or p.server_max_window_bits then
          out[#out + 1] = "server_max_window_bits=" .. server_bits
        end
        local threshold = settings.threshold
        if server_reset and not settings.threshold_set then threshold = M.ALONE_THRESHOLD end
        return concat(out, "; "), { threshold = threshold, level = settings.level,
          server_bits = server_bits, server_reset = server_reset and true or false,
          client_reset = p.client_no_context_takeover and true or false }
      end
    end
  end
  return nil
end

-- The route handler of app:websocket: checks the handshake, upgrades, runs fn(ws, req).
-- app (optional): its config's http.ws_deflate is the default of opts.deflate.
function M.handler(fn, opts, app)
  opts = opts or {}
  local max_frame, max_message = opts.max_frame or MAX, opts.max_message or MAX
  local deflate = opts.deflate ~= nil and M.deflate_settings(opts.deflate) or nil
  local deflate_known = opts.deflate ~= nil
  local max_queue, on_slow = opts.max_queue or 1024 * 1024, opts.on_slow or "close"
  if type(max_queue) ~= "number" or max_queue < 0 then
    error("app:websocket: max_queue must be a number of bytes", 3)
  end
  if on_slow ~= "close" and on_slow ~= "drop" then
    error('app:websocket: on_slow must be "close" or "drop"', 3)
  end
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
    if not deflate_known then
      deflate_known = true
      local ok, cfg = pcall(app and app.config or error, app)
      deflate = ok and type(cfg) == "table" and cfg.http and cfg.http.ws_deflate
        and M.deflate_settings(true) or nil
    end
    local ext, pmd = M.negotiate(req:header("sec-websocket-extensions"), deflate)
    local head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n" ..
      "Connection: Upgrade\r\nSec-WebSocket-Accept: " .. ws_core.accept(key) .. "\r\n" ..
      (ext and "Sec-WebSocket-Extensions: " .. ext .. "\r\n" or "") .. "\r\n"
    -- Compressed, an incompressible message takes a little more than itself on the wire
    -- (stored blocks: 5 bytes each, and a client with a small memLevel makes blocks of 128
    -- bytes up: 4 %): the wire limits get 1/16 more; what a message inflates to is bounded by
    -- max_message exactly.
    local wire_frame, wire_message = max_frame, max_message
    if pmd then
      wire_frame = max_frame + math.floor(max_frame / 16) + 1024
      wire_message = max_message + math.floor(max_message / 16) + 1024
    end
    local frames = src:upgrade(head, wire_frame, wire_message, pmd ~= nil)
    -- The access log shows the 101 the client got, not the response object's default 200.
    res.streamed, res.src, res.sent, res.body, res.code = true, src, 0, "", 101
    if not frames then
      res.finished = true
      return
    end
    local ws = setmetatable({ src = src, frames = frames, res = res, quiet = true, pmd = pmd,
      max_message = max_message, app = app, max_queue = max_queue, on_slow = on_slow,
      dropped = 0 }, WS)
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
    if ws.rooms then require("zever.websocket_rooms").leave_all(ws) end
    if ws.timer then ws.timer:stop() end
    if ws.deflater then ws.deflater:close() end
    if ws.inflater then ws.inflater:close() end
    if not ok then
      shut(ws, 1011)
      error(err, 0)
    end
    if not ws.sent_close and not ws.done then shut(ws, 1000) end
    if not res.finished then stream.close(res) end
  end
end

return M
