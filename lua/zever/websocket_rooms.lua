-- zever.websocket_rooms: rooms of WebSocket connections and broadcast to them, in every worker
-- and process that shares the app's event bus (docs/websockets.md#rooms-and-broadcast).
--
--   ws:join(room) / ws:leave(room)          this connection's rooms (left when it ends)
--   ws:broadcast(room, msg[, kind])         to everyone in room but ws -> true | nil, err
--   app:broadcast(room, msg[, kind])        to everyone in room        -> true | nil, err
--
-- A broadcast is ONE publish on app.eventbus, topic "zever.ws.broadcast", message
-- { r = room, m = msg[, b = true (binary, base64url)][, x = the sender's id] }: the memory
-- adapter reaches this worker, inproc every worker thread of the process, redis (or postgres)
-- every process on the server. Each worker subscribes once, at its first join, and hands a
-- message to its own connections in the room (ws:deliver: queued without waiting; a client
-- that lets more than max_queue bytes pile up is closed, or skipped with on_slow = "drop").
-- Delivery is at most once, as the bus is: a worker that is down or a subscriber queue that is
-- full (max_pending) loses the message. Room names: 1 to 200 bytes of any text.

local errors = require "zever.errors"

local type, error, next, pairs, tostring = type, error, next, pairs, tostring

local M = {}

M.TOPIC = "zever.ws.broadcast"

-- Per app (one Lua state per worker, so per worker): { rooms = { [room] = { [ws] = true } },
-- unsubscribe = fn }.
local states = setmetatable({}, { __mode = "k" })
local seq = 0
local token

local function check_room(room, what)
  if type(room) ~= "string" or #room == 0 or #room > 200 then
    error(what .. ": a room is a string of 1 to 200 bytes", 4)
  end
end

local function deliver(st, msg)
  if type(msg) ~= "table" or type(msg.r) ~= "string" or type(msg.m) ~= "string" then return end
  local members = st.rooms[msg.r]
  if not members then return end
  local data, kind = msg.m, "text"
  if msg.b then
    data = require("zever.crypto").unb64url(data)
    if not data then return end
    kind = "binary"
  end
  local except = msg.x
  for ws in pairs(members) do
    if ws.id ~= except and not ws:deliver(data, kind) then members[ws] = nil end
  end
  if not next(members) then st.rooms[msg.r] = nil end
end

local function state(app)
  local st = states[app]
  if not st then
    st = { rooms = {} }
    states[app] = st
  end
  if not st.unsubscribe then
    local unsubscribe, err = app.eventbus:subscribe(M.TOPIC, function(msg) deliver(st, msg) end,
      { max_pending = 65536 })
    if not unsubscribe then return nil, err end
    st.unsubscribe = unsubscribe
  end
  return st
end

-- Adds ws to room; true, or nil, err when the event bus cannot subscribe (redis down).
function M.join(ws, room)
  check_room(room, "ws:join")
  local st, err = state(ws.app)
  if not st then return nil, err end
  if not ws.id then
    if not token then token = ("%x%x"):format(os.time(), math.random(0, 0x7fffffff)) end
    seq = seq + 1
    ws.id = token .. "-" .. seq
  end
  ws.rooms = ws.rooms or {}
  ws.rooms[room] = true
  local members = st.rooms[room]
  if not members then
    members = {}
    st.rooms[room] = members
  end
  members[ws] = true
  return true
end

function M.leave(ws, room)
  check_room(room, "ws:leave")
  local st = states[ws.app]
  if ws.rooms then ws.rooms[room] = nil end
  local members = st and st.rooms[room]
  if members then
    members[ws] = nil
    if not next(members) then st.rooms[room] = nil end
  end
  return true
end

function M.leave_all(ws)
  for room in pairs(ws.rooms or {}) do M.leave(ws, room) end
end

-- How many connections of THIS worker are in room (the bus does not count the others).
function M.local_count(app, room)
  local st = states[app]
  local n = 0
  for _ in pairs(st and st.rooms[room] or {}) do n = n + 1 end
  return n
end

-- data and kind are checked by the caller (zever.websocket.check_message).
function M.broadcast(app, room, data, kind, except)
  check_room(room, "broadcast")
  local msg = { r = room, m = data, x = except }
  if kind == "binary" then
    msg.m, msg.b = require("zever.crypto").b64url(data), true
  end
  local ok, err = app.eventbus:publish(M.TOPIC, msg)
  if not ok then
    return nil, errors.new("websocket", "unavailable", "broadcast: " .. tostring(err and err.message
      or err), { cause = err })
  end
  return true
end

return M
