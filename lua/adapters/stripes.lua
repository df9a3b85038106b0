-- adapters.stripes: what the memory adapters of cache, limiter and idempotency share about their
-- process-wide C table (host/core/stripes, shared by every worker thread that opens the same
-- name): opening it by name, the clock of specs, and the handle's bounded sweep, stats, clear
-- and release. It must not know any table's operations (each adapter calls its own core).
--
--   local handle, name = stripes.open("cache", opts, default_name, "another max_bytes",
--                                      core.open, max_bytes)
--       checks opts.clock and opts.name (default_name when absent), then open(name, a, b, c, d);
--       raises at the caller of the adapter's new: '<what>: "<name>" is already open with
--       <conflict>' when the name is open with other bounds, "<what>: <message>" else
--   local Memory, Classic = stripes.classes()
--       the method tables of an adapter's objects: Memory for the path through LuaJIT's FFI,
--       Classic (whatever it lacks comes from Memory) for the classic binding's path: a host
--       without the core's FFI exports, and new{ classic = true } (specs run both)
--   stripes.now(self)              -> 0 (the core reads CLOCK_MONOTONIC) | self.clock() in ns + 1
--   stripes.methods(Class, steps)  gives Class sweep([max_steps = steps]), stats(), clear() (when
--                                  the handle has one) and close() over self.handle

local type, error, format, tostring, setmetatable = type, error, string.format, tostring,
  setmetatable

local M = {}

function M.open(what, opts, default_name, conflict, open, a, b, c, d)
  if opts.clock ~= nil and type(opts.clock) ~= "function" then
    error(what .. ": clock must be a function", 3)
  end
  local name = opts.name or default_name
  if type(name) ~= "string" then error(what .. ": name must be a string", 3) end
  local handle, msg, code = open(name, a, b, c, d)
  if not handle then
    if code == "CONFLICT" then
      error(format('%s: "%s" is already open with %s', what, name, conflict), 3)
    end
    error(what .. ": " .. tostring(msg), 3)
  end
  return handle, name
end

function M.classes()
  local Memory = {}
  Memory.__index = Memory
  local Classic = setmetatable({}, { __index = Memory })
  Classic.__index = Classic
  return Memory, Classic
end

local function now(self)
  local clock = self.clock
  if not clock then return 0 end
  return clock() * 1e9 + 1
end
M.now = now

function M.methods(Class, steps)
  function Class:sweep(max_steps)
    return self.handle:sweep(max_steps or steps, now(self))
  end

  function Class:stats()
    return self.handle:stats()
  end

  function Class:clear()
    local handle = self.handle
    if handle.clear then handle:clear() end
  end

  function Class:close()
    self.handle:release()
    self.ptr = nil
    return true
  end
end

return M
