-- zever.config.template: table constructors compiled from the schema, for the tables that are
-- made whole on every load and every redact (the defaults, a redacted section). Filling a table
-- key by key makes it grow and rehash as it fills (~20 us for the 39 sections and 235 fields
-- of the defaults); a constructor with constant keys and values,
--   return function() return { listen = "127.0.0.1:8080", workers = 0, ... } end
-- is copied by LuaJIT from its template in one pass (TDUP: ~4 us for the same). It must not
-- know a section by name.
--
--   template.section(fields, value_of) -> fn() returning a new { [field.name] = value_of(field) }
--   template.config(sections, value_of) -> fn() returning a new { [s.name] = that, ... }
--   template.literal(v)        -> v as Lua source, or nil when v is not a constant
--   template.compile(src, values, name) -> what the chunk concat(src) returns, given values
--
-- value_of(field) may return nil (the key is left out). A value that is not a string, a boolean
-- or a finite number is not a constant: it is read from an array the function keeps, so a
-- table stays the one shared table, as when it was assigned. The source is compiled here with
-- load(), never precompiled into build/bc, whose writer drops a template's nil slots.

local format, concat, type, tostring, ipairs, load, assert =
  string.format, table.concat, type, tostring, ipairs, load, assert

local M = {}

local function literal(v)
  local t = type(v)
  if t == "string" then return format("%q", v) end
  if t == "boolean" then return tostring(v) end
  if t == "number" and v == v and v ~= math.huge and v ~= -math.huge then
    return format("%.17g", v)
  end
end

-- Appends "{ k = v, ... }" for fields to src; non-constants go to values.
local function fields_source(src, fields, value_of, values)
  src[#src + 1] = "{"
  for _, f in ipairs(fields) do
    local v = value_of(f)
    if v ~= nil then
      local lit = literal(v)
      if not lit then
        values[#values + 1] = v
        lit = format("D[%d]", #values)
      end
      src[#src + 1] = format("[%q] = %s,", f.name, lit)
    end
  end
  src[#src + 1] = "}"
end

local function compile(src, values, name)
  return assert(load(concat(src), "=" .. name))(values)
end

M.literal, M.compile = literal, compile

function M.section(fields, value_of)
  local src, values = { "local D = ...\nreturn function() return " }, {}
  fields_source(src, fields, value_of, values)
  src[#src + 1] = " end\n"
  return compile(src, values, "config.template.section")
end

function M.config(sections, value_of)
  local src, values = { "local D = ...\nreturn function() return {\n" }, {}
  for _, s in ipairs(sections) do
    src[#src + 1] = format("[%q] = ", s.name)
    fields_source(src, s.fields, value_of, values)
    src[#src + 1] = ",\n"
  end
  src[#src + 1] = "} end\n"
  return compile(src, values, "config.template.config")
end

return M
