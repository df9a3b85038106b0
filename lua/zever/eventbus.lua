-- zever.eventbus: the front-end of the event-bus battery: publish a message on a topic, and
-- every subscriber whose pattern matches it gets it, in this worker (memory) or in every process
-- on the same Redis server or PostgreSQL database.
--
--   local bus = eventbus.new()                           -- in-process (adapters.eventbus.memory)
--   local unsubscribe = bus:subscribe("orders.*", function(msg, topic) ... end[, opts])
--   bus:publish("orders.created", { id = 7 })  -> true | nil, err
--   unsubscribe()                              -> true (idempotent)
--   bus:stats()   -> { battery, closed, published, delivered, dropped, failed, subscribers }
--   bus:close()   -> true; every later publish/subscribe returns nil, err ("closed")
--
-- Topics are dot-separated words ("orders.created", "user.42.login"): 1 to 256 bytes, no empty
-- word, no "*" or ">" and no whitespace. A pattern is a topic whose words may be "*" (exactly one
-- word) or, as the last word, ">" (one or more words): "orders.*" matches "orders.created" but
-- not "orders" or "orders.eu.created"; "orders.>" matches both of the latter but not "orders"
-- (NATS subjects). A bad topic or pattern returns nil, err ("invalid"); a topic that is not a
-- string, or fn not a function, raises.
--
-- Delivery never runs inside publish and never blocks it: publish appends the message to the
-- queue of each matching subscriber and returns; each subscriber's handler runs in a coroutine
-- of its own (zever.sched), one message at a time in publish order, from the event loop (in a
-- plain script, the loop runs while it waits: zever.sleep, a Redis call, ...). A handler may
-- yield (a db write, an HTTP call); messages that arrive meanwhile queue up to max_pending
-- (opts.max_pending, default the bus's, 1024); beyond that a slow subscriber drops the NEWEST
-- messages (counted in stats.dropped and in the subscription's own count), so the messages it
-- gets are the oldest ones in order, and publishers are never held up. A handler that raises is
-- counted (stats.failed), reported (opts.on_error; stderr by default), and keeps its
-- subscription.
--
-- Messages: the memory adapter hands subscribers the published value itself (do not modify it);
-- the redis and postgres adapters carry JSON (zever.json), so a message must be a JSON value.
--
-- eventbus.wrap(impl, opts) puts this front-end over an adapter object:
--   impl:start(deliver)          called once, at the first subscribe: from then on the adapter
--                                calls deliver(topic, msg) for every message published on the bus
--                                (by any process, this one included)
--   impl:publish(topic, msg)     -> true | nil, err
--   impl:close()
-- This module must not know any adapter but new()'s default.

local battery = require "zever.battery"
local loop = require "zever.loop"
local sched = require "zever.sched"

local type, error, pcall, tostring, find, gsub, byte = type, error, pcall, tostring,
  string.find, string.gsub, string.byte
local spawn = sched.spawn

local M = {}

M.MAX_TOPIC = 256

local Bus = battery.define("eventbus", "the event bus is closed")
M.error = Bus.error

local CLOSED = Bus.CLOSED
local BAD_TOPIC = Bus.error("invalid", "a topic is 1 to 256 bytes of dot-separated words "
  .. "without '*', '>' or whitespace")
local BAD_PATTERN = Bus.error("invalid", "a pattern is dot-separated words, '*' for one word "
  .. "and a last '>' for one or more")

local function valid_topic(topic)
  local n = #topic
  if n == 0 or n > 256 then return false end
  if find(topic, "[%*>%s]") or find(topic, "..", 1, true) then return false end
  return byte(topic, 1) ~= 46 and byte(topic, n) ~= 46    -- no leading or trailing "."
end

-- The Lua pattern of a bus pattern with wildcards; nil when it has none; false when invalid.
local function compile(pattern)
  local n = #pattern
  if n == 0 or n > 256 or find(pattern, "%s") or find(pattern, "..", 1, true)
      or byte(pattern, 1) == 46 or byte(pattern, n) == 46 then
    return false
  end
  if not find(pattern, "[%*>]") then return nil end
  local out, words = {}, {}
  for word in (pattern .. "."):gmatch("([^.]*)%.") do words[#words + 1] = word end
  local last = #words
  for i, word in ipairs(words) do
    if word == "*" then
      out[i] = "[^.]+"
    elseif word == ">" then
      if i ~= last then return false end
      out[i] = ".+"
    elseif find(word, "[%*>]") then
      return false
    else
      out[i] = (gsub(word, "%p", "%%%0"))
    end
  end
  return "^" .. table.concat(out, "%.") .. "$"
end
M.compile = compile

-- --- delivery -------------------------------------------------------------------------------

local function drain(sub)
  local bus = sub.bus
  local counters = bus.counters
  local fn = sub.fn
  while sub.head < sub.tail and sub.active do
    local i = sub.head
    local msg, topic = sub.msgs[i], sub.topics[i]
    sub.msgs[i], sub.topics[i] = nil, nil
    sub.head = i + 1
    local ok, err = pcall(fn, msg, topic)
    if ok then
      counters.delivered = counters.delivered + 1
    else
      counters.failed = counters.failed + 1
      bus.on_error(err, topic, sub.pattern)
    end
  end
  if sub.head == sub.tail then sub.head, sub.tail = 1, 1 end   -- keep the array part small
  sub.running = false
end

-- Runs the drains of the subscribers that got messages, from the loop (never inside publish).
local function run_ready(bus)
  local ready = bus.ready
  bus.armed = false
  for i = 1, #ready do
    local sub = ready[i]
    ready[i] = nil
    sub.queued = false
    if sub.active and not sub.running and sub.head < sub.tail then
      sub.running = true
      spawn(drain, sub)
    end
  end
end

local function enqueue(bus, sub, topic, msg)
  if sub.tail - sub.head >= sub.max_pending then
    sub.dropped = sub.dropped + 1
    bus.counters.dropped = bus.counters.dropped + 1
    return
  end
  local t = sub.tail
  sub.msgs[t], sub.topics[t] = msg, topic
  sub.tail = t + 1
  if not sub.running and not sub.queued then
    sub.queued = true
    local ready = bus.ready
    ready[#ready + 1] = sub
    if not bus.armed then
      bus.armed = true
      bus.timer:start(0)
    end
  end
end

-- deliver(topic, msg): the local fan-out the adapter calls for each message on the bus.
local function deliverer(bus)
  return function(topic, msg)
    if bus.closed then return end
    local exact = bus.exact[topic]
    if exact then
      for i = 1, #exact do enqueue(bus, exact[i], topic, msg) end
    end
    local wild = bus.wild
    for i = 1, #wild do
      local sub = wild[i]
      if find(topic, sub.lua) then enqueue(bus, sub, topic, msg) end
    end
  end
end

-- --- the API ---------------------------------------------------------------------------------

function Bus:publish(topic, msg)
  battery.string(topic, "eventbus:publish", "topic")
  if self.closed then return nil, CLOSED end
  if not valid_topic(topic) then return nil, BAD_TOPIC end
  local ok, err = self.impl:publish(topic, msg)
  if not ok then return nil, err end
  self.counters.published = self.counters.published + 1
  return true
end

local function remove(list, sub)
  for i = #list, 1, -1 do
    if list[i] == sub then
      table.remove(list, i)
      return
    end
  end
end

function Bus:subscribe(pattern, fn, opts)
  battery.string(pattern, "eventbus:subscribe", "pattern")
  if type(fn) ~= "function" then error("eventbus:subscribe: fn must be a function", 2) end
  battery.opt_table(opts, "eventbus:subscribe", "opts")
  local max_pending = battery.count(opts and opts.max_pending, self.max_pending,
    "eventbus:subscribe", "max_pending", 1)
  if self.closed then return nil, CLOSED end
  local lua = compile(pattern)
  if lua == false then return nil, BAD_PATTERN end
  if not self.started then
    local ok, err = self.impl:start(self.deliver)
    if ok == nil and err ~= nil then return nil, err end
    self.started = true
  end
  local sub = { bus = self, pattern = pattern, lua = lua, fn = fn, max_pending = max_pending,
    msgs = {}, topics = {}, head = 1, tail = 1, dropped = 0, running = false, queued = false,
    active = true }
  if lua then
    self.wild[#self.wild + 1] = sub
  else
    local list = self.exact[pattern]
    if not list then
      list = {}
      self.exact[pattern] = list
    end
    list[#list + 1] = sub
  end
  self.counters.subscribers = self.counters.subscribers + 1
  local bus = self
  return function()
    if not sub.active then return true end
    sub.active = false
    if lua then
      remove(bus.wild, sub)
    else
      local list = bus.exact[pattern]
      remove(list, sub)
      if #list == 0 then bus.exact[pattern] = nil end
    end
    bus.counters.subscribers = bus.counters.subscribers - 1
    return true
  end, sub
end

local function report(err, topic, pattern)
  io.stderr:write("eventbus: a handler of '", pattern, "' failed on '", topic, "': ",
    tostring(err), "\n")
end

-- opts: max_pending (each subscriber's queue bound, 1024), on_error (fn(err, topic, pattern),
-- called when a handler raises; default: a line on stderr).
function M.wrap(impl, opts)
  opts = opts or {}
  if opts.on_error ~= nil and type(opts.on_error) ~= "function" then
    error("eventbus.wrap: on_error must be a function", 2)
  end
  local bus = battery.object(Bus, impl, {
    max_pending = battery.count(opts.max_pending, 1024, "eventbus.wrap", "max_pending", 1),
    exact = {}, wild = {}, ready = {}, started = false, armed = false,
    on_error = opts.on_error or report,
    counters = { published = 0, delivered = 0, dropped = 0, failed = 0, subscribers = 0 },
  })
  bus.deliver = deliverer(bus)
  bus.timer = loop.timer(function() run_ready(bus) end)
  return bus
end

-- The close of the battery kit, plus the delivery timer.
local kit_close = Bus.close
function Bus:close()
  if not self.closed and self.timer then self.timer:close() end
  return kit_close(self)
end

-- An in-process bus: opts as adapters.eventbus.memory.new, plus wrap's.
function M.new(opts)
  return battery.default(M.wrap, "adapters.eventbus.memory", "eventbus.new", opts)
end

return M
