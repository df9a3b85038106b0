-- adapters.metrics.noop: metrics that record nothing and render nothing (an app that must not
-- expose them, or a benchmark of the cost of the built-in ones). Same contract as
-- adapters.metrics.prometheus: every series writes into one scratch cell of its own.

local ffi = require "ffi"

local M = {}

local Impl = {}
Impl.__index = Impl

local Family = {}
Family.__index = Family

-- One scratch array per state: writes land there and are never read.
local scratch = ffi.new("double[66]")
local no_bounds = ffi.new("double[1]")

function Impl.family()
  return setmetatable({}, Family)
end

function Family.series()
  return { cells = scratch, cell = 0, bounds = no_bounds, nb = 0 }
end

function Impl.render()
  return ""
end

function Family.value()
  return 0
end

function M.open()
  return setmetatable({}, Impl)
end

return M
