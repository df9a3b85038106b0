-- spec/support/traces.lua: what LuaJIT's trace compiler did while a function ran, for specs that
-- check a hot path compiles (as lua-resty-core's tests read the -jv log for "NYI" and the loop).
--
--   local traces = require "spec.support.traces"
--   local t = traces.run(fn)   -- flushes the trace cache, runs fn with trace events attached
--   traces.run(fn, { eager = true })  -- the same with every loop and function hot at once
--   traces.run(fn, { fresh = true })  -- the same from reset hot counters (default threshold)
--   t.stops    { { id =, at = "file.lua:12", link = "loop" }, ... }  completed traces
--   t.aborts   { { id =, at = "file.lua:40", reason = "NYI: ...", where = "file.lua:44" }, ... }
--                (at: where the trace started; where: the bytecode it aborted on, as -jv's "at")
--   traces.looped(t, file)     -> true when a trace that started in file closed as a loop
--   traces.nyi(t)              -> the NYI aborts as strings, or {} (see WARM_UP below)
--   traces.linked(t, link)     -> the completed traces whose link is link ("up-recursion",
--                                 "interpreter", ...) as "link@file:line" strings, or {}
--
-- Only events are read: nothing here depends on time, so it holds on a loaded machine.
local util = require "jit.util"
local vmdef = require "jit.vmdef"

local M = {}

-- LuaJIT aborts a function trace that returns below the frame it started in ("NYI: return to
-- lower frame"). It happens while a loop warms up, when a function it calls gets hot before
-- the loop does; the loop's own trace forms afterwards and inlines that function. It says
-- nothing about the code's shape, so nyi() leaves it out; every other NYI counts.
M.WARM_UP = "return to lower frame"

local function reason(code, info)
  local msg = vmdef.traceerr[code] or ("trace error " .. tostring(code))
  if type(info) == "function" then
    local fi = util.funcinfo(info)
    info = fi.loc or fi.name or "?"
  elseif type(info) == "number" and vmdef.ffnames and vmdef.ffnames[info] then
    info = vmdef.ffnames[info]
  end
  if msg:find("%", 1, true) then
    local ok, s = pcall(string.format, msg, info)
    msg = ok and s or msg
  end
  return msg
end

-- opts.eager: run fn with hotloop = 1, so that every loop and function is recorded the first
-- time it runs, whatever the earlier specs did to LuaJIT's hot counters (which are shared by
-- hashed bytecode address: with the default threshold a loop may not be attempted at all in
-- fn's run). Setting hotloop resets the counters; the default (56) is set again afterwards.
-- opts.fresh: reset the counters to the default threshold before fn runs, so that fn's loop and
-- functions get hot in the order fn's own calls make them, as in a fresh worker.
function M.run(fn, opts)
  assert(jit and jit.status(), "the JIT compiler is off")
  local eager = opts and opts.eager
  if opts and opts.fresh then jit.opt.start("hotloop=56") end
  local t, started = { stops = {}, aborts = {} }, {}
  local function on(what, tr, func, pc, otr, oex)
    if what == "start" then
      started[tr] = util.funcinfo(func, pc).loc
    elseif what == "stop" then
      t.stops[#t.stops + 1] = { id = tr, at = started[tr], link = util.traceinfo(tr).linktype }
    elseif what == "abort" then
      t.aborts[#t.aborts + 1] = { id = tr, at = started[tr], reason = reason(otr, oex),
        where = util.funcinfo(func, pc).loc }
    end
  end
  jit.flush()
  if eager then jit.opt.start("hotloop=1") end
  jit.attach(on, "trace")
  local ok, err = pcall(fn)
  jit.attach(on)
  if eager then jit.opt.start("hotloop=56") end
  if not ok then error(err, 0) end
  return t
end

-- The completed traces as "link@file:line" strings, for assertion messages.
function M.describe(t)
  local out = {}
  for _, s in ipairs(t.stops) do out[#out + 1] = s.link .. "@" .. tostring(s.at) end
  for _, a in ipairs(t.aborts) do out[#out + 1] = "abort(" .. a.reason .. ")@" .. tostring(a.at) end
  return table.concat(out, " ")
end

function M.looped(t, file)
  for _, s in ipairs(t.stops) do
    if s.link == "loop" and s.at and s.at:find(file, 1, true) then return true end
  end
  return false
end

function M.stitched(t)
  for _, s in ipairs(t.stops) do
    if s.link == "stitch" then return true end
  end
  return false
end

function M.linked(t, link)
  local out = {}
  for _, s in ipairs(t.stops) do
    if s.link == link then out[#out + 1] = s.link .. "@" .. tostring(s.at) end
  end
  return out
end

function M.nyi(t)
  local out = {}
  for _, a in ipairs(t.aborts) do
    if a.reason:find("NYI", 1, true) and not a.reason:find(M.WARM_UP, 1, true) then
      out[#out + 1] = a.reason .. " at " .. tostring(a.at)
    end
  end
  return out
end

return M
