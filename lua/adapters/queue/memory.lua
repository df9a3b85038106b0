-- adapters.queue.memory: the in-process queue: a process-wide C structure (host/queue/) shared by
-- every worker thread that opens the same name. For one process only: `zever serve` and
-- `zever worker` are two processes and need the db adapter.
--
--   local impl = memory.new{ name = "default", clock = nil, classic = nil }
--   impl:push / pop / ack / nack / len / close     (zever.queue's adapter interface)
--   memory.open(section)    -> impl over it (the adapter contract)
--
-- clock is for specs: a function returning seconds, used for delays, leases and enqueued_at;
-- without it the core reads CLOCK_MONOTONIC and enqueued_at is the wall clock.
--
-- pop goes through LuaJIT's FFI (one C call that a trace keeps; an empty topic costs no string,
-- no table and no clock read: an idle worker polls it every wake-up), into a buffer of this Lua
-- state that grows to the largest message popped. The classic binding (zever.queue_core) is the
-- fallback when the host does not export the core; new{ classic = true } takes it on purpose
-- (the specs run both paths).

local ffi = require "ffi"
local core = require "zever.queue_core"
local errors = require "zever.errors"
local sys = require "zever.sys"

local type, error, format, setmetatable, tonumber = type, error, string.format, setmetatable,
  tonumber
local ffi_string = ffi.string

local M = {}

require "zever.cdef.queue"

local C = ffi.C
local has_ffi = pcall(function() return C.zv_queue_pop end)
local c_pop = has_ffi and C.zv_queue_pop
local queue_ptr = ffi.typeof("zv_queue_t *")
local ERANGE = errors.E.RANGE

local NO_MEMORY = errors.core("queue", errors.E.NOMEM)

-- Memory: the FFI pop; Classic: the classic binding's pop (whatever else it lacks comes from
-- Memory).
local Memory = {}
Memory.__index = Memory
local Classic = setmetatable({}, { __index = Memory })
Classic.__index = Classic

-- The pop buffer and result of this Lua state (one per worker thread: states share nothing).
local buf_cap = 1024
local buf = ffi.new("char[?]", buf_cap)
local out = ffi.new("zv_queue_msg_t")

function Memory:push(topic, data, kind, headers, delay)
  local clock, now = self.clock, 0
  local at = clock and clock() or sys.wall()
  if clock then now = at * 1e9 + 1 end
  local id = self.handle:push(topic, data, kind, headers, delay * 1e9, at * 1e9, now)
  if id then return id end
  return nil, NO_MEMORY
end

function Memory:pop(topic, visibility)
  local ptr = self.ptr
  if ptr == nil then error("queue: the handle was released", 2) end
  local clock = self.clock
  local vis, now = visibility * 1e9, clock and clock() * 1e9 + 1 or 0
  local rc = c_pop(ptr, topic, #topic, vis, now, buf, buf_cap, out)
  while rc == ERANGE do
    -- Nothing was leased: grow to what the head message needs and ask again.
    buf_cap = tonumber(out.payload_len + out.headers_len)
    buf = ffi.new("char[?]", buf_cap)
    rc = c_pop(ptr, topic, #topic, vis, now, buf, buf_cap, out)
  end
  if rc ~= 0 then return nil end
  local plen, hlen = tonumber(out.payload_len), tonumber(out.headers_len)
  return tonumber(out.id), tonumber(out.lease), out.attempt, out.type,
    tonumber(out.enqueued_ns) / 1e9, ffi_string(buf, plen),
    hlen > 0 and ffi_string(buf + plen, hlen) or nil
end

function Classic:pop(topic, visibility)
  local clock = self.clock
  local id, lease, attempt, kind, at, data, headers =
    self.handle:pop(topic, visibility * 1e9, clock and clock() * 1e9 + 1 or 0)
  if id == nil then return nil end
  return id, lease, attempt, kind, at / 1e9, data, headers
end

if not has_ffi then Memory.pop = Classic.pop end

function Memory:ack(id, lease)
  return self.handle:ack(id, lease)
end

function Memory:nack(id, lease, requeue, delay)
  local clock = self.clock
  return self.handle:nack(id, lease, requeue, delay * 1e9, clock and clock() * 1e9 + 1 or 0)
end

function Memory:len(topic)
  return self.handle:len(topic)
end

function Memory:close()
  self.handle:release()
  self.ptr = nil
  return true
end

function M.new(opts)
  if type(opts) ~= "table" then error("queue.memory.new: expects an options table", 2) end
  if opts.clock ~= nil and type(opts.clock) ~= "function" then
    error("queue: clock must be a function", 2)
  end
  local name = opts.name or "default"
  if type(name) ~= "string" then error("queue: name must be a string", 2) end
  local handle, msg = core.open(name)
  if not handle then error(format("queue: %s", msg), 2) end
  return setmetatable({
    handle = handle,
    ptr = has_ffi and ffi.cast(queue_ptr, handle:ptr()) or nil,
    clock = opts.clock,
    name = name,
  }, (has_ffi and not opts.classic) and Memory or Classic)
end

-- The adapter contract: section is the config's queue section.
function M.open()
  return M.new{}
end

M.ffi = has_ffi

return M
