-- dsl.resolve.common: what every phase of the resolver shares: the vocabulary of the language
-- (scalars, verbs, attribute and option names, error codes), small helpers for messages and
-- did-you-mean, and S, the resolver's state, whose methods the phase files define
-- (dsl/resolve/types.lua, records.lua, services.lua, work.lua). It must not resolve anything.

if jit then jit.off(true, true) end -- interpreted, like all of the resolver (dsl/resolver.lua)

local ir = require "dsl.ir"
local text = require "zever.text"

local concat, sort = table.concat, table.sort
local format = string.format
local type, pairs, ipairs, tostring, select = type, pairs, ipairs, tostring, select


local SCALARS = ir.SCALARS
local SCALAR_LIST = {}
for name in pairs(SCALARS) do SCALAR_LIST[#SCALAR_LIST + 1] = name end
sort(SCALAR_LIST)

local NUMBERS = { int32 = true, int64 = true, float32 = true, float64 = true }
local INTEGERS = { int32 = true, int64 = true }
local VERBS = { GET = true, POST = true, PUT = true, PATCH = true, DELETE = true }
local ON_DELETE = { restrict = true, cascade = true, set_null = true }
local FORMATS = { email = true, url = true, uuid = true }
local BACKOFF = { exponential = true, linear = true, fixed = true }
local ERROR_CODES = {}
for code in pairs(ir.ERROR_STATUS) do ERROR_CODES[#ERROR_CODES + 1] = code end
sort(ERROR_CODES)

-- What each kind of member accepts, for "unknown attribute/option" and did-you-mean.
local FIELD_ATTRS = { "default", "primary", "renamed_from", "unique", "validate" }
local PARAM_ATTRS = { "default", "validate" }
local RELATION_ATTRS = { "foreign_key", "on_delete" }
local INDEX_ATTRS = { "concurrently", "unique" }
local VALUE_ATTRS = { "renamed_from" }
local RELATION_OPTIONS = { "join_table" }
local SERVICE_OPTIONS = { "prefix" }
local ENTITY_ATTRS = { "schema" }
local SAGA_STEP_OPTIONS = { "compensate", "execute", "pivot" }
local RPC_OPTIONS = { "auth", "errors", "http", "paginated", "permission" }
local JOB_OPTIONS = { "queue", "retry", "timeout" }
local SCHEDULE_OPTIONS = { "cron", "dispatch" }
local VALIDATE_KEYS = { "format", "gt", "gte", "lt", "lte", "max_len", "min_len" }

-- The set of a list's items. Sets are cached by list (weak keys): the lists of allowed names are
-- constants asked for once per member, and building them each time was a third of `zever check`.
-- A list must not change after it was given here.
local sets = setmetatable({}, { __mode = "k" })
local function set(list)
  local s = sets[list]
  if s then return s end
  s = {}
  for _, v in ipairs(list) do s[v] = true end
  sets[list] = s
  return s
end

-- " (did you mean x?)" or "".
local function suggest(word, list)
  if type(word) ~= "string" or #list == 0 then return "" end
  local best = text.closest(word, list)
  return best and format(" (did you mean %s?)", best) or ""
end

-- "an enum", "a message".
local function article(noun)
  return (noun:match("^[aeiou]") and "an " or "a ") .. noun
end

-- A file's module, as the Go compiler gives it: under a folder named schema, the first folder
-- below it (deeper folders belong to it: schema/billing/invoices/x.zen is billing), or, when
-- that is a version (v1), the next one, the module keeping its version as the second result
-- (schema/v1/iam/x.zen is "iam", "v1"); a file directly under schema/ is in the implicit module
-- "public". Outside a schema folder, the file's own folder's name; no folder at all is "main".
local function module_of(file)
  local below = ("/" .. file):match("^.*/schema/(.+)$")
  if below then
    local parts = {}
    for seg in below:gmatch("[^/]+") do parts[#parts + 1] = seg end
    table.remove(parts) -- the file
    if #parts == 0 then return "public" end
    if parts[1]:match("^v%d+$") then
      if parts[2] then return parts[2], parts[1] end
      return "public", parts[1]
    end
    return parts[1]
  end
  local dir = file:match("^(.*)/[^/]*$")
  if not dir or dir == "" then return "main" end
  local parent, mod = dir:match("^(.-)/?([^/]+)$")
  if not mod then return "main" end
  local version = parent and parent:match("(v%d+)$")
  if version and (parent == version or parent:sub(-#version - 1, -#version - 1) == "/") then
    return mod, version
  end
  return mod
end

-- cron ------------------------------------------------------------------------------------------

-- state -----------------------------------------------------------------------------------------

local S = {}
S.__index = S

function S:diag(file, line, col, severity, msg)
  self.diags[#self.diags + 1] = { file = file, line = line or 0, col = col or 0,
    phase = "resolve", severity = severity, message = msg }
end

-- Reports an error at node (a parser node) of the current file.
function S:err(node, msg, ...)
  if select("#", ...) > 0 then msg = format(msg, ...) end
  self:diag(self.file, node and node.line, node and node.col, "error", msg)
end

function S:warn(node, msg, ...)
  if select("#", ...) > 0 then msg = format(msg, ...) end
  self:diag(self.file, node and node.line, node and node.col, "warning", msg)
end

local function where(file, node)
  return format("%s:%d:%d", file, node.line or 0, node.col or 0)
end

-- The node of a declaration's name (for diagnostics about the name).
local function name_node(d)
  return { line = d.name_line or d.line, col = d.name_col or d.col }
end

-- A value node as source-like text, for messages and the IR.
local function value_text(v)
  if not v then return "?" end
  local k = v.kind
  if k == "string" then return (format("%q", v.value or ""):gsub("\\\n", "\\n")) end
  if k == "int" or k == "float" or k == "duration" then return v.text end
  if k == "bool" then return tostring(v.value) end
  if k == "ident" then return v.name end
  if k == "call" or k == "tuple" or k == "list" then
    local parts = {}
    for i, a in ipairs(v.args or v.items or {}) do
      parts[i] = a.kind == "arg" and ((a.name and a.name .. ": " or "") .. value_text(a.value))
        or value_text(a)
    end
    if k == "call" then return v.name .. "(" .. concat(parts, ", ") .. ")" end
    if k == "tuple" then return concat(parts, " ") end
    return (v.brace == "[" and "[" or "{") .. concat(parts, ", ") .. (v.brace == "[" and "]" or "}")
  end
  return "?"
end

local KIND_NAMES = { string = "a string", int = "an integer", float = "a number",
  duration = "a duration", bool = "a bool", ident = "a name", call = "a call", list = "a list",
  tuple = "several values" }

local function describe(v)
  return format("%s %s", KIND_NAMES[v.kind] or v.kind, value_text(v))
end

-- symbols ---------------------------------------------------------------------------------------


-- The SQL-ish column type of a bound type.
local function sql_type(b)
  if b.kind == "scalar" then return SCALARS[b.scalar] end
  if b.kind == "enum" then return "text" end
  if b.kind == "list" or b.kind == "message" then return "json" end
  return nil
end

-- The values of an option: a list without braces is its groups, anything else one value.
local function option_values(o)
  local v = o.value
  if v and v.kind == "list" and not v.brace then return v.items end
  return { v }
end

return {
  sql_type = sql_type,
  option_values = option_values,
  SCALARS = SCALARS,
  SCALAR_LIST = SCALAR_LIST,
  NUMBERS = NUMBERS,
  INTEGERS = INTEGERS,
  VERBS = VERBS,
  ON_DELETE = ON_DELETE,
  FORMATS = FORMATS,
  BACKOFF = BACKOFF,
  ERROR_CODES = ERROR_CODES,
  FIELD_ATTRS = FIELD_ATTRS,
  PARAM_ATTRS = PARAM_ATTRS,
  RELATION_ATTRS = RELATION_ATTRS,
  INDEX_ATTRS = INDEX_ATTRS,
  VALUE_ATTRS = VALUE_ATTRS,
  RELATION_OPTIONS = RELATION_OPTIONS,
  SERVICE_OPTIONS = SERVICE_OPTIONS,
  ENTITY_ATTRS = ENTITY_ATTRS,
  SAGA_STEP_OPTIONS = SAGA_STEP_OPTIONS,
  RPC_OPTIONS = RPC_OPTIONS,
  JOB_OPTIONS = JOB_OPTIONS,
  SCHEDULE_OPTIONS = SCHEDULE_OPTIONS,
  VALIDATE_KEYS = VALIDATE_KEYS,
  set = set,
  suggest = suggest,
  article = article,
  module_of = module_of,
  S = S,
  where = where,
  name_node = name_node,
  value_text = value_text,
  KIND_NAMES = KIND_NAMES,
  describe = describe,
}
