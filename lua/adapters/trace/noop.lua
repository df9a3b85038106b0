-- adapters.trace.noop: spans are made and propagated (traceparent in and out) but exported
-- nowhere. The default of the trace battery.

local M = {}

local Impl = {}
Impl.__index = Impl

function Impl.export() end

function Impl.flush() return true end

function M.open()
  return setmetatable({ exported = 0 }, Impl)
end

return M
