-- dsl.resolve.cron: checks a schedule's cron expression. zever.cron (the C parser) when the
-- host has it, else a 5-field syntax check in Lua; lua_check is the latter alone.

if jit then jit.off(true, true) end -- interpreted, like all of the resolver (dsl/resolver.lua)

local C = require "dsl.resolve.common"
local format = string.format
local set = C.set

local M = {}

local CRON_FIELDS = {
  { "minute", 0, 59 }, { "hour", 0, 23 }, { "day of month", 1, 31 },
  { "month", 1, 12, { "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
    "dec" } },
  { "day of week", 0, 7, { "sun", "mon", "tue", "wed", "thu", "fri", "sat" } },
}
local CRON_MACROS = set { "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight",
  "@hourly" }

local function cron_number(s, field)
  local n = tonumber(s)
  if s:match("^%d+$") and n then return n end
  local names = field[4]
  if names then
    for i, name in ipairs(names) do
      if s:lower() == name then return i - 1 + field[2] end
    end
  end
  return nil
end

local function cron_field(s, field)
  for item in (s .. ","):gmatch("([^,]*),") do
    local range, step = item:match("^([^/]*)/(.*)$")
    range = range or item
    if step and not (step:match("^%d+$") and tonumber(step) > 0) then
      return nil, format("bad step %q in the %s field", step, field[1])
    end
    if range ~= "*" then
      local a, b = range:match("^([^-]+)-([^-]+)$")
      local lo, hi
      if a then
        lo, hi = cron_number(a, field), cron_number(b, field)
      else
        lo = cron_number(range, field)
        hi = lo
      end
      if not lo or not hi then return nil, format("bad value %q in the %s field", item, field[1]) end
      if lo < field[2] or hi > field[3] or lo > hi then
        return nil, format("%q is out of range %d-%d in the %s field", item, field[2], field[3], field[1])
      end
    end
  end
  return true
end

local function lua_check_cron(expr)
  if CRON_MACROS[expr] then return true end
  local fields = {}
  for f in expr:gmatch("%S+") do fields[#fields + 1] = f end
  if #fields ~= 5 then
    return nil, format("expected 5 fields (minute hour day-of-month month day-of-week), found %d",
      #fields)
  end
  for i, f in ipairs(fields) do
    local ok, err = cron_field(f, CRON_FIELDS[i])
    if not ok then return nil, err end
  end
  return true
end

-- The C cron parser (host/cron/, another helper's) when the host has it: zever.cron, else
-- zever.cron_core; its parse(expr) returning nil, err on a bad expression. Else the Lua check.
local cron_impl
local function cron_parser()
  if cron_impl == nil then
    cron_impl = false
    for _, name in ipairs({ "zever.cron", "zever.cron_core" }) do
      if package.preload[name] then
        local ok, mod = pcall(require, name)
        if ok and type(mod) == "table" and type(mod.parse) == "function" then
          cron_impl = mod
          break
        end
      end
    end
  end
  return cron_impl
end


function M.check(expr)
  if type(expr) ~= "string" then error("check_cron: expr must be a string", 2) end
  local c = cron_parser()
  if c then
    local ok, res, err = pcall(c.parse, expr)
    if not ok then return nil, tostring(res) end
    if res == nil then return nil, (tostring(err):gsub("^cron: ", "")) end
    return true
  end
  return lua_check_cron(expr)
end

M.lua_check = lua_check_cron

return M
