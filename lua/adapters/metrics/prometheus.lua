-- adapters.metrics.prometheus: metrics in the C registry of this process (host/metrics/),
-- rendered in the Prometheus text format and OpenMetrics.
--
--   prometheus.open(section) -> impl      section: registry (name, default "default"), max_cells
--   impl:family(name, help, kind, labels, bounds) -> family | nil, err
--   family:series(values) -> { cells, cell, bounds, nb } | nil, err    (the hot path's handles)
--   impl:render(format) -> text ("prometheus" | "openmetrics", without "# EOF")
--   family:value(series[, offset]) -> the merged value of a cell (specs, the dashboard)
--
-- Each Lua state (one worker) opens the registry once and claims one slot of cells, which it
-- alone writes: zever.metrics then adds into cells[cell] through the FFI, without a lock. The
-- handle lives as long as the state (its __gc gives the slot back, values kept), so apps and
-- containers of one worker share it. It must not require its front-end.

local core = require "zever.metrics_core"
local errors = require "zever.errors"
local ffi = require "ffi"

local type, tostring, format = type, tostring, string.format

local M = {}

local states = {}   -- registry name -> { handle, cells } of this Lua state

local function fail(message, code)
  return nil, errors.new("metrics", code == "CONFLICT" and "conflict" or "invalid",
    "metrics: " .. tostring(message))
end

local function state_of(name, max_cells)
  local s = states[name]
  if s then return s end
  local h, msg, code = core.open(name, max_cells)
  if not h then return fail(msg, code) end
  local slot, cells = h:claim()
  if not slot then return fail(cells, code) end
  s = { handle = h, cells = ffi.cast("double *", cells) }
  states[name] = s
  return s
end

local Impl = {}
Impl.__index = Impl

local Family = {}
Family.__index = Family

function Impl:family(name, help, kind, labels, bounds)
  local h = self.state.handle
  local id, msg, code = h:family(name, help, kind, labels, bounds)
  if not id then
    if code == "CONFLICT" then
      return fail(format('"%s" is registered already with another kind, labels or buckets', name),
        code)
    end
    return fail(format('"%s": %s', name, msg), code)
  end
  local b, nb = h:bounds(id)
  return setmetatable({ impl = self, id = id, bounds = ffi.cast("const double *", b), nb = nb },
    Family)
end

function Family:series(values)
  local state = self.impl.state
  local cell, msg, code = state.handle:series(self.id, values)
  if not cell then
    if code == "RANGE" then
      return fail("the registry is full (metrics.max_cells): too many label combinations", code)
    end
    return fail(msg, code)
  end
  return { cells = state.cells, cell = cell, bounds = self.bounds, nb = self.nb }
end

function Impl:render(fmt)
  return self.state.handle:render(fmt)
end

function Family:value(series, offset)
  return self.impl.state.handle:value(series.cell + (offset or 0))
end

function M.open(section)
  section = section or {}
  local name = section.registry or "default"
  if type(name) ~= "string" or name == "" then
    return nil, errors.new("metrics", "invalid", "metrics: registry must be a non-empty string")
  end
  local state, err = state_of(name, section.max_cells)
  if not state then return nil, err end
  return setmetatable({ state = state }, Impl)
end

return M
