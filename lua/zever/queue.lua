-- zever.queue: the front-end of the queue battery.
--
--   local q = require("zever.queue").new()             -- a memory queue outside an app
--   q:push(topic, payload[, { delay = s, headers = {k = "v"} }]) -> id | nil, err
--   q:pop(topic)              -> msg | nil (nothing visible) | nil, err
--        msg = { id, topic, payload, attempt, headers, enqueued_at }
--   q:ack(msg)                -> true (settled) | false (the lease was lost) | nil, err
--   q:nack(msg, requeue[, delay]) -> true | false | nil, err
--   q:len(topic)              -> n (messages not yet acked or dropped) | nil, err
--   q:close()                 -> true; every later call returns nil, err (code "closed")
--
-- Delivery is at least once: a popped message is leased for visibility_timeout seconds and comes
-- back (attempt + 1) unless it is acked first. nack(msg, true) gives it back at once (or after
-- delay seconds) with attempt + 1; nack(msg, false) drops it. attempt is 1 on the first delivery.
-- Payloads are strings (stored as they are) or JSON-encodable values (numbers, booleans, tables:
-- stored as JSON, so what pop returns is a copy); headers is a table of string -> string or nil.
-- enqueued_at is wall-clock seconds. Misuse raises (a topic that is not a non-empty string of at
-- most 1024 bytes, a payload JSON cannot hold, a bad delay or headers, ack of something that did
-- not come from pop); expected failures are nil, err with err.code ("closed", "unavailable").
--
-- queue.wrap(impl, opts) puts this front-end over an adapter object whose methods take valid,
-- encoded arguments:
--   impl:push(topic, data, kind, headers_json|nil, delay) -> id | nil, err
--   impl:pop(topic, visibility) -> id, lease, attempt, kind, enqueued_at, data, headers_json|nil
--                                | nil[, err]
--   impl:ack(id, lease) -> boolean | nil, err;  impl:nack(id, lease, requeue, delay) -> same
--   impl:len(topic) -> n | nil, err;            impl:close()
-- kind is queue.STRING (data is the payload) or queue.JSON (data is its JSON text).
-- queue.error(code, message) builds the error objects adapters return; queue.wall() is the
-- wall clock in seconds.

local ffi = require "ffi"
local json = require "zever.json"

local type, error, setmetatable, pairs, pcall, tostring = type, error, setmetatable, pairs, pcall,
  tostring
local encode, decode = json.encode, json.decode

local M = {}

M.STRING, M.JSON = 1, 2
M.MAX_TOPIC = 1024

require "zever.cdef.libc" -- clock_gettime
local ts = ffi.new("struct timespec")
local clock_gettime = ffi.C.clock_gettime

function M.wall()
  clock_gettime(0, ts)   -- CLOCK_REALTIME
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local Error = {}
Error.__index = Error
Error.__tostring = function(e) return "queue: " .. e.code .. ": " .. e.message end

function M.error(code, message)
  return setmetatable({ code = code, message = message }, Error)
end

local CLOSED = M.error("closed", "the queue is closed")

local Queue = {}
Queue.__index = Queue

local function check_topic(topic, what)
  if type(topic) ~= "string" or topic == "" or #topic > 1024 then
    error("queue:" .. what .. ": topic must be a non-empty string of at most 1024 bytes", 3)
  end
end

local function check_delay(delay, what)
  if delay == nil then return 0 end
  if type(delay) ~= "number" or delay ~= delay or delay < 0 or delay == math.huge then
    error("queue:" .. what .. ": delay must be a number of seconds >= 0", 3)
  end
  return delay
end

local function encode_headers(h)
  if h == nil then return nil end
  if type(h) ~= "table" then error("queue:push: headers must be a table", 3) end
  if next(h) == nil then return nil end
  for k, v in pairs(h) do
    if type(k) ~= "string" or type(v) ~= "string" then
      error("queue:push: headers must map strings to strings", 3)
    end
  end
  return encode(h)
end

local PAYLOAD = { string = true, number = true, boolean = true, table = true }

function Queue:push(topic, payload, opts)
  check_topic(topic, "push")
  local t = type(payload)
  if not PAYLOAD[t] and payload ~= json.null then
    error("queue:push: payload must be a string, number, boolean or table", 2)
  end
  local delay, headers = 0, nil
  if opts ~= nil then
    if type(opts) ~= "table" then error("queue:push: opts must be a table", 2) end
    delay = check_delay(opts.delay, "push")
    headers = encode_headers(opts.headers)
  end
  local data, kind = payload, M.STRING
  if t ~= "string" then
    local ok, s = pcall(encode, payload)
    if not ok then error("queue:push: payload is not JSON-encodable: " .. tostring(s), 2) end
    data, kind = s, M.JSON
  end
  if self.closed then return nil, CLOSED end
  return self.impl:push(topic, data, kind, headers, delay)
end

function Queue:pop(topic)
  check_topic(topic, "pop")
  if self.closed then return nil, CLOSED end
  local id, lease, attempt, kind, enqueued_at, data, headers = self.impl:pop(topic, self.visibility)
  if id == nil then return nil, lease end
  if kind == M.JSON then data = decode(data) end
  if headers then headers = decode(headers) end
  return { id = id, topic = topic, payload = data, attempt = attempt, headers = headers,
    enqueued_at = enqueued_at, _lease = lease }
end

local function check_msg(msg, what)
  if type(msg) ~= "table" or msg.id == nil or msg._lease == nil then
    error("queue:" .. what .. ": expects a message returned by pop", 3)
  end
end

function Queue:ack(msg)
  check_msg(msg, "ack")
  if self.closed then return nil, CLOSED end
  return self.impl:ack(msg.id, msg._lease)
end

function Queue:nack(msg, requeue, delay)
  check_msg(msg, "nack")
  delay = check_delay(delay, "nack")
  if self.closed then return nil, CLOSED end
  return self.impl:nack(msg.id, msg._lease, requeue and true or false, delay)
end

function Queue:len(topic)
  check_topic(topic, "len")
  if self.closed then return nil, CLOSED end
  return self.impl:len(topic)
end

function Queue:close()
  if self.closed then return true end
  self.closed = true
  return self.impl:close()
end

-- opts.visibility_timeout: seconds a popped message stays leased (default 30).
function M.wrap(impl, opts)
  if type(impl) ~= "table" then error("queue.wrap: expects an adapter object", 2) end
  local vt = opts and opts.visibility_timeout or 30
  if type(vt) ~= "number" or vt ~= vt or vt <= 0 then
    error("queue.wrap: visibility_timeout must be a number > 0", 2)
  end
  return setmetatable({ impl = impl, visibility = vt, closed = false }, Queue)
end

-- A memory queue: opts as adapters.queue.memory.new, plus visibility_timeout.
function M.new(opts)
  if opts ~= nil and type(opts) ~= "table" then error("queue.new: opts must be a table", 2) end
  local ok, impl = pcall(require("adapters.queue.memory").new, opts or {})
  if not ok then error(impl, 2) end
  return M.wrap(impl, opts)
end

return M
