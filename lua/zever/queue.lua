-- zever.queue: the front-end of the queue battery.
--
--   local q = require("zever.queue").new()             -- a memory queue outside an app
--   q:push(topic, payload[, { delay = s, headers = {k = "v"} }]) -> id | nil, err
--   q:push_batch(topic, { payload, ... }[, opts]) -> { id, ... } | nil, err   (all or none on db)
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
-- The front-end is declared with zever.battery (the closed guard, close, stats); adapters build
-- their errors with zever.errors ("queue"). queue.wall is zever.sys.wall, the wall clock in
-- seconds (kept here for the callers of this module's earlier API).

local battery = require "zever.battery"
local json = require "zever.json"
local sys = require "zever.sys"

local type, error, pairs, pcall, tostring, next = type, error, pairs, pcall, tostring, next
local encode, decode = json.encode, json.decode

local M = {}

M.STRING, M.JSON = 1, 2
M.MAX_TOPIC = 1024
M.wall = sys.wall

local Queue = battery.define("queue", "the queue is closed")
M.error = Queue.error

local CLOSED = Queue.CLOSED

local function check_topic(topic, what)
  if type(topic) ~= "string" or topic == "" or #topic > 1024 then
    error("queue:" .. what .. ": topic must be a non-empty string of at most 1024 bytes", 3)
  end
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
    delay = battery.seconds(opts.delay, 0, "queue:push", "delay", false, true)
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

-- q:push_batch(topic, payloads[, opts]) -> ids | nil, err: pushes every payload of the list
-- (same rules and opts as push, one delay and headers for all). An adapter with push_batch
-- does it at once, all or none (the db queue: one round trip on PostgreSQL); others push each,
-- stopping at the first failure (the ones before it stay).
function Queue:push_batch(topic, payloads, opts)
  check_topic(topic, "push_batch")
  if type(payloads) ~= "table" then error("queue:push_batch: payloads must be a list", 2) end
  local delay, headers = 0, nil
  if opts ~= nil then
    if type(opts) ~= "table" then error("queue:push_batch: opts must be a table", 2) end
    delay = battery.seconds(opts.delay, 0, "queue:push_batch", "delay", false, true)
    headers = encode_headers(opts.headers)
  end
  local datas, kinds = {}, {}
  for i = 1, #payloads do
    local payload = payloads[i]
    local t = type(payload)
    if not PAYLOAD[t] and payload ~= json.null then
      error("queue:push_batch: payload " .. i .. " must be a string, number, boolean or table", 2)
    end
    datas[i], kinds[i] = payload, M.STRING
    if t ~= "string" then
      local ok, s = pcall(encode, payload)
      if not ok then
        error("queue:push_batch: payload " .. i .. " is not JSON-encodable: " .. tostring(s), 2)
      end
      datas[i], kinds[i] = s, M.JSON
    end
  end
  if self.closed then return nil, CLOSED end
  local impl = self.impl
  if impl.push_batch then return impl:push_batch(topic, datas, kinds, headers, delay) end
  local ids = {}
  for i = 1, #datas do
    local id, err = impl:push(topic, datas[i], kinds[i], headers, delay)
    if not id then return nil, err end
    ids[i] = id
  end
  return ids
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
  delay = battery.seconds(delay, 0, "queue:nack", "delay", false, true)
  if self.closed then return nil, CLOSED end
  return self.impl:nack(msg.id, msg._lease, requeue and true or false, delay)
end

function Queue:len(topic)
  check_topic(topic, "len")
  if self.closed then return nil, CLOSED end
  return self.impl:len(topic)
end

-- opts.visibility_timeout: seconds a popped message stays leased (default 30).
function M.wrap(impl, opts)
  local vt = opts and opts.visibility_timeout or 30
  if type(vt) ~= "number" or vt ~= vt or vt <= 0 then
    error("queue.wrap: visibility_timeout must be a number > 0", 2)
  end
  return battery.object(Queue, impl, { visibility = vt })
end

-- A memory queue: opts as adapters.queue.memory.new, plus visibility_timeout.
function M.new(opts)
  return battery.default(M.wrap, "adapters.queue.memory", "queue.new", opts)
end

return M
