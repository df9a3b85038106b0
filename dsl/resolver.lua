-- dsl.resolver: the stage after the parser. Parsed trees in, the IR (dsl/ir.lua) plus diagnostics
-- out: names bound to declarations, types checked, relations paired, routes and auth checked,
-- jobs and schedules checked.
--
--   resolver.resolve(trees[, opts]) -> ir, diags
--       trees: a list of parser trees (each with .file), or one tree.
--       opts.module_of(file) -> module name; default: the name of the file's folder.
--   resolver.check_cron(expr)       -> true | nil, err   (5 fields, or @daily and friends)
--
-- It never throws on any tree the parser returns (trees with syntax errors are resolved as far as
-- they go). Diagnostics are { file, line, col, pos, phase = "resolve", severity, message }, in the
-- shape dsl/diagnostics.lua renders. It must not print, read files, or know any backend: the IR
-- is all that the backends see.
--
-- Names: every declaration of a module (entity, message, enum, service, job, schedule) shares one
-- namespace; a type of another module is written module.Type. A module's name is its folder's.

local ir = require "dsl.ir"
local text = require "zever.text"
local duration = require "zever.duration"

local concat, sort = table.concat, table.sort
local format = string.format
local type, pairs, ipairs, tostring, tonumber, pcall, select = type, pairs, ipairs, tostring,
  tonumber, pcall, select

local M = {}

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
local INDEX_ATTRS = { "unique" }
local VALUE_ATTRS = { "renamed_from" }
local RELATION_OPTIONS = { "join_table" }
local SERVICE_OPTIONS = { "prefix" }
local RPC_OPTIONS = { "auth", "errors", "http", "paginated", "permission" }
local JOB_OPTIONS = { "queue", "retry", "timeout" }
local SCHEDULE_OPTIONS = { "cron", "dispatch" }
local VALIDATE_KEYS = { "format", "gt", "gte", "lt", "lte", "max_len", "min_len" }

local function set(list)
  local s = {}
  for _, v in ipairs(list) do s[v] = true end
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

local function module_of(file)
  local dir = file:match("^(.*)/[^/]*$")
  if not dir or dir == "" then return "main" end
  return dir:match("([^/]+)$") or "main"
end

-- cron ------------------------------------------------------------------------------------------

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

M.lua_check_cron = lua_check_cron

function M.check_cron(expr)
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

function S:declare(tree)
  self.file = tree.file
  local mod = self.module_of(tree.file)
  self.modules[mod] = true
  for _, d in ipairs(tree.decls or {}) do
    if d.name then
      local q = mod .. "." .. d.name
      local prev = self.symbols[q]
      if prev then
        self:err(name_node(d), "%s %s is already declared as %s %s at %s", d.kind, d.name,
          prev.decl.kind, d.name, where(prev.file, name_node(prev.decl)))
      else
        self.symbols[q] = { decl = d, file = tree.file, module = mod, qname = q, kind = d.kind }
        self.order[#self.order + 1] = q
      end
    end
  end
end

-- The names a type in module mod may refer to, for did-you-mean.
function S:type_candidates(mod)
  local list = {}
  for _, s in ipairs(SCALAR_LIST) do list[#list + 1] = s end
  for _, q in ipairs(self.order) do
    local sym = self.symbols[q]
    local k = sym.kind
    if k == "entity" or k == "message" or k == "enum" then
      list[#list + 1] = sym.module == mod and sym.decl.name or q
    end
  end
  return list
end

-- Looks up name (plain or module.Name) from module mod; the symbol or nil.
function S:lookup(name, mod)
  if name:find(".", 1, true) then return self.symbols[name] end
  return self.symbols[mod .. "." .. name]
end

-- Binds a type node. Returns { kind = scalar|enum|message|entity|list|unknown, text, ref,
-- optional, of, sym } (never nil: an unknown type is reported and is kind "unknown").
function S:bind_type(t)
  if not t then return { kind = "unknown", text = "?" } end
  local out
  if t.list then
    local of = self:bind_type(t.of)
    out = { kind = "list", of = of, text = "[" .. of.text .. "]" }
  elseif SCALARS[t.name] then
    out = { kind = "scalar", scalar = t.name, text = t.name }
  else
    local sym = t.name and self:lookup(t.name, self.mod)
    if sym and (sym.kind == "entity" or sym.kind == "message" or sym.kind == "enum") then
      self.used[sym.qname] = true
      out = { kind = sym.kind, ref = sym.qname, sym = sym, text = t.name }
    elseif sym then
      self:err(t, "%s is %s, not a type", t.name, article(sym.kind))
      out = { kind = "unknown", text = t.name }
    else
      local mod = t.name and t.name:match("^(.-)%.[^.]*$")
      if mod and not self.modules[mod] then
        local mods = {}
        for m in pairs(self.modules) do mods[#mods + 1] = m end
        sort(mods)
        self:err(t, "unknown module %q in type %s%s", mod, t.name, suggest(mod, mods))
      else
        -- The same name in another module first: "User" for accounts.User.
        local hint = ""
        for _, q in ipairs(self.order) do
          local s = self.symbols[q]
          if not mod and s.decl.name == t.name and s.module ~= self.mod then
            hint = format(" (did you mean %s?)", q)
            break
          end
        end
        if hint == "" then hint = suggest(t.name, self:type_candidates(self.mod)) end
        self:err(t, "unknown type %s%s", tostring(t.name), hint)
      end
      out = { kind = "unknown", text = tostring(t.name) }
    end
  end
  if t.optional then
    out.optional = true
    out.text = out.text .. "?"
  end
  return out
end

-- The SQL-ish column type of a bound type.
local function sql_type(b)
  if b.kind == "scalar" then return SCALARS[b.scalar] end
  if b.kind == "enum" then return "text" end
  if b.kind == "list" or b.kind == "message" then return "json" end
  return nil
end

-- values ----------------------------------------------------------------------------------------

local function uuid_shape(s)
  return s:match("^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$")
end

-- Whether value v fits bound type b; nil plus what was expected when not.
function S:fits(v, b)
  local k = v.kind
  if b.kind == "unknown" then return true end
  if b.kind == "list" then
    if k ~= "list" then return nil, "a list" end
    for _, item in ipairs(v.items) do
      local ok, want = self:fits(item, b.of)
      if not ok then return nil, "a list of " .. want end
    end
    return true
  end
  if b.kind == "enum" then
    local values = {}
    for _, ev in ipairs(b.sym.decl.values or {}) do values[#values + 1] = ev.name end
    if k == "ident" and set(values)[v.name] then return true end
    return nil, format("a value of %s (%s)", b.text:gsub("%?$", ""), concat(values, ", "))
  end
  if b.kind ~= "scalar" then return nil, "nothing: " .. b.text .. " takes no default" end
  local s = b.scalar
  if s == "bool" then return k == "bool" or nil, "true or false" end
  if s == "int32" or s == "int64" then
    if k ~= "int" then return nil, "an integer" end
    if s == "int32" and (v.value < -2147483648 or v.value > 2147483647) then
      return nil, "an integer in the int32 range"
    end
    return true
  end
  if s == "float32" or s == "float64" then return (k == "int" or k == "float") or nil, "a number" end
  if s == "string" or s == "bytes" then return k == "string" or nil, "a string" end
  if s == "uuid" then
    return (k == "string" and uuid_shape(v.value) ~= nil) or nil, "a uuid string"
  end
  if s == "timestamp" or s == "date" then
    return (k == "string" or (k == "ident" and v.name == "now") or (k == "call" and v.name == "now"))
      or nil, "now or a string"
  end
  return true -- json takes anything
end

-- attributes ------------------------------------------------------------------------------------

-- Checks attrs against the allowed names; returns a map name -> attribute node (the first).
function S:attributes(attrs, allowed, what)
  local by, allow = {}, set(allowed)
  for _, a in ipairs(attrs or {}) do
    if not allow[a.name] then
      self:err(a, "unknown attribute @%s on %s%s", a.name, what, suggest(a.name, allowed))
    elseif by[a.name] then
      self:err(a, "@%s is given twice (first at %d:%d)", a.name, by[a.name].line, by[a.name].col)
    else
      by[a.name] = a
    end
  end
  return by
end

-- The single positional argument of attribute a, or nil after an error.
function S:one_arg(a)
  local args = a.args or {}
  if #args ~= 1 or args[1].name then
    return self:err(a, "@%s takes one value", a.name)
  end
  return args[1].value
end

-- @validate(...) for a member of bound type b named name; returns the IR map.
function S:validate(a, b, name)
  local out = {}
  local base = b.kind == "scalar" and b.scalar or b.text:gsub("%?$", "")
  -- An unknown type was reported: check the keys and values, not whether they apply.
  local any = b.kind == "unknown"
  for _, arg in ipairs(a.args or {}) do
    local key, v = arg.name, arg.value
    if not key then
      self:err(arg, "@validate takes named values (min_len: 1), found %s", describe(v))
    elseif not set(VALIDATE_KEYS)[key] then
      self:err(arg, "unknown @validate key %s%s", key, suggest(key, VALIDATE_KEYS))
    elseif key == "min_len" or key == "max_len" then
      if not any and base ~= "string" and base ~= "bytes" then
        self:err(arg, "@validate(%s) applies to string or bytes, not %s (%s)", key, base, name)
      elseif v.kind ~= "int" or v.value < 0 then
        self:err(arg, "@validate(%s) takes a count (an integer >= 0), found %s", key, describe(v))
      else
        out[key] = v.value
      end
    elseif key == "format" then
      if not any and base ~= "string" then
        self:err(arg, "@validate(format) applies to string, not %s (%s)", base, name)
      elseif v.kind ~= "ident" or not FORMATS[v.name] then
        self:err(arg, "@validate(format) is email, url or uuid, found %s%s", value_text(v),
          suggest(v.name, { "email", "url", "uuid" }))
      else
        out.format = v.name
      end
    else -- gt gte lt lte
      if not any and not NUMBERS[base] then
        self:err(arg, "@validate(%s) applies to numbers, not %s (%s)", key, base, name)
      elseif not (v.kind == "int" or (v.kind == "float" and not INTEGERS[base])) then
        self:err(arg, "@validate(%s) takes %s, found %s", key,
          INTEGERS[base] and "an integer" or "a number", describe(v))
      else
        out[key] = v.value
      end
    end
  end
  if out.min_len and out.max_len and out.min_len > out.max_len then
    self:err(a, "@validate: min_len %d is greater than max_len %d", out.min_len, out.max_len)
  end
  return out
end

-- The IR of a field or parameter: attributes checked, value checks, default.
function S:member(f, allowed, what, persisted)
  local b = self:bind_type(f.type)
  local node = { kind = persisted and "column" or "field", name = f.name, line = f.line,
    col = f.col, type = b.text, nullable = b.optional or nil, ref = b.ref, doc = f.doc }
  if persisted then
    node.sql = sql_type(b)
    if b.kind == "entity" then
      self:err(f.type, "field %s has the entity type %s: use belongs_to, has_one or has_many",
        f.name, b.text)
    end
  end
  local attrs = self:attributes(f.attributes, allowed, what .. " " .. f.name)
  if attrs.validate then node.validate = self:validate(attrs.validate, b, f.name) end
  if attrs.default then
    local v = self:one_arg(attrs.default)
    if v then
      local ok, want = self:fits(v, b)
      if ok and (v.kind == "ident" or v.kind == "call") then
        node.default_name = value_text(v)
      elseif ok then
        node.default = v.kind == "list" and value_text(v) or v.value
      else
        self:err(v, "@default of %s must be %s, found %s", f.name, want, describe(v))
      end
    end
  end
  if attrs.renamed_from then
    local v = self:one_arg(attrs.renamed_from)
    if v and v.kind ~= "string" then
      self:err(v, "@renamed_from takes the old name as a string, found %s", describe(v))
    elseif v then
      node.renamed_from = v.value
    end
  end
  if attrs.unique then node.unique = true end
  if attrs.primary then
    node.primary = true
    if b.optional then self:err(attrs.primary, "the @primary field %s cannot be optional", f.name) end
  end
  return node, b
end

-- Checks the names of a list of nodes for duplicates (what: "field", "value", ...).
function S:unique_names(list, what, owner)
  local seen = {}
  for _, n in ipairs(list) do
    if n.name then
      local prev = seen[n.name]
      if prev then
        self:err(n, "%s %s of %s is declared twice (first at %d:%d)", what, n.name, owner,
          prev.line, prev.col)
      else
        seen[n.name] = n
      end
    end
  end
end

-- entities and messages ------------------------------------------------------------------------

-- First pass over an entity or message: columns/fields and the primary key.
function S:record(sym)
  local d = sym.decl
  local persisted = d.kind == "entity"
  local node = { kind = d.kind, name = d.name, module = sym.module, file = sym.file,
    line = d.line, col = d.col, doc = d.doc }
  local fields = {}
  local members = d.members or {}
  self:unique_names(members, "member", d.name)
  for _, m in ipairs(members) do
    if m.kind == "field" then
      fields[#fields + 1] = (self:member(m, persisted and FIELD_ATTRS or PARAM_ATTRS,
        "field", persisted))
    elseif not persisted then
      self:err(m, "message %s cannot have %s: only entities are persisted", d.name,
        m.kind == "relation" and m.relation or "an index")
    end
  end
  if persisted then
    node.table = ir.table_name(d.name)
    node.columns = fields
    node.indexes, node.foreign_keys, node.relations = {}, {}, {}
    local primary
    for _, c in ipairs(fields) do
      if c.primary then
        if primary then
          self:err(c, "entity %s has a second @primary field %s (the first is %s at %d:%d)",
            d.name, c.name, primary.name, primary.line, primary.col)
        else
          primary = c
        end
      end
    end
    if primary then
      node.primary_key = { primary.name }
      sym.primary = primary
    else
      self:err(name_node(d), "entity %s has no @primary field", d.name)
    end
  else
    node.fields = fields
  end
  sym.node = node
  return node
end

local function column(node, name)
  for _, c in ipairs(node.columns or {}) do
    if c.name == name then return c end
  end
  return nil
end

local function column_names(node)
  local names = {}
  for _, c in ipairs(node.columns or {}) do names[#names + 1] = c.name end
  return names
end

-- The foreign-key column named by @foreign_key(col), or nil after an error (false when absent).
function S:foreign_key_arg(attrs)
  if not attrs.foreign_key then return false end
  local v = self:one_arg(attrs.foreign_key)
  if not v then return nil end
  if v.kind ~= "ident" or v.name:find(".", 1, true) then
    return self:err(v, "@foreign_key takes a column name, found %s", describe(v))
  end
  return v.name
end

-- The target entity of relation r, or nil (reported).
function S:relation_target(r, b)
  if b.kind == "unknown" then return nil end
  if b.kind ~= "entity" then
    return self:err(r.type, "%s %s must name an entity, %s is %s", r.relation, r.name, b.text,
      article(b.kind))
  end
  return b.sym
end

-- Second pass: belongs_to creates or checks its foreign-key column.
function S:belongs_to(sym, r)
  local node = sym.node
  local b = self:bind_type(r.type)
  local attrs = self:attributes(r.attributes, RELATION_ATTRS, "relation " .. r.name)
  local target = self:relation_target(r, b)
  local fk = self:foreign_key_arg(attrs)
  if fk == nil then return end
  fk = fk or (r.name .. "_id")
  local on_delete = "restrict"
  if attrs.on_delete then
    local v = self:one_arg(attrs.on_delete)
    if v and (v.kind ~= "ident" or not ON_DELETE[v.name]) then
      self:err(v, "@on_delete is restrict, cascade or set_null, found %s%s", value_text(v),
        suggest(v.name, { "cascade", "restrict", "set_null" }))
    elseif v then
      on_delete = v.name
    end
  end
  local rel = { kind = "relation", name = r.name, line = r.line, col = r.col,
    relation = "belongs_to", target = b.ref, foreign_key = fk, on_delete = on_delete }
  node.relations[#node.relations + 1] = rel
  local col = column(node, fk)
  if not target or not target.primary then
    -- Reported already; the column exists anyway so that indexes naming it say nothing more.
    if not col then
      node.columns[#node.columns + 1] = { kind = "column", name = fk, line = r.line, col = r.col,
        type = "?", foreign_key = true }
    end
    return
  end
  local pk = target.primary
  if col then
    if col.type:gsub("%?$", "") ~= pk.type then
      self:err(r, "belongs_to %s: the foreign key %s is %s but %s.%s is %s", r.name, fk,
        col.type, target.decl.name, pk.name, pk.type)
    end
  else
    col = { kind = "column", name = fk, line = r.line, col = r.col, type = pk.type ..
      (b.optional and "?" or ""), sql = pk.sql, nullable = b.optional or nil,
      foreign_key = true }
    node.columns[#node.columns + 1] = col
  end
  if on_delete == "set_null" and not col.nullable then
    self:err(attrs.on_delete, "@on_delete(set_null) needs the foreign key %s to be optional " ..
      "(write %s)", fk, col.foreign_key and format("belongs_to %s: %s?", r.name, b.text)
      or format("%s: %s?", fk, col.type))
  end
  node.foreign_keys[#node.foreign_keys + 1] = { kind = "foreign_key", name = fk, line = r.line,
    col = r.col, columns = { fk }, references = target.node.table, references_columns = { pk.name },
    on_delete = on_delete }
end

-- Third pass: has_many, has_one and many_to_many, checked against the other side.
function S:has(sym, r)
  local node = sym.node
  local b = self:bind_type(r.type)
  local attrs = self:attributes(r.attributes, RELATION_ATTRS, "relation " .. r.name)
  if attrs.on_delete then
    self:err(attrs.on_delete, "@on_delete applies to belongs_to, the side holding the foreign key")
  end
  local rel = { kind = "relation", name = r.name, line = r.line, col = r.col,
    relation = r.relation, target = b.ref }
  node.relations[#node.relations + 1] = rel
  local opts = self:options(r.options, r.relation == "many_to_many" and RELATION_OPTIONS or {},
    r.relation .. " " .. r.name)
  local target = self:relation_target(r, b)
  if r.relation == "many_to_many" then
    if attrs.foreign_key then
      self:err(attrs.foreign_key, "many_to_many %s has a join table, not a foreign key", r.name)
    end
    local jt = opts.join_table
    if jt and jt.value.kind ~= "ident" and jt.value.kind ~= "string" then
      self:err(jt.value, "join_table takes a table name, found %s", describe(jt.value))
      jt = nil
    end
    local name = jt and (jt.value.name or jt.value.value)
    if not name and target then
      local a, c = node.table, target.node.table
      if c < a then a, c = c, a end
      name = a .. "_" .. c
    end
    rel.join_table = name
    return
  end
  local fk = self:foreign_key_arg(attrs)
  if fk == nil then return end
  fk = fk or (ir.snake(sym.decl.name) .. "_id")
  rel.foreign_key = fk
  if not target or not target.node or not sym.primary then return end
  -- The other side: a belongs_to back to this entity must use the same column.
  local back
  for _, other in ipairs(target.node.relations) do
    if other.relation == "belongs_to" and other.target == sym.qname then
      if other.foreign_key == fk then
        back = other
        break
      end
      back = back or other
    end
  end
  if back and back.foreign_key ~= fk then
    self:err(r, "%s %s uses the foreign key %s but %s belongs_to %s uses %s", r.relation, r.name,
      fk, target.decl.name, back.name, back.foreign_key)
    return
  end
  local col = column(target.node, fk)
  if not col then
    self:err(r, "%s %s: %s has no column %s (add belongs_to %s: %s @foreign_key(%s))",
      r.relation, r.name, target.decl.name, fk, ir.snake(sym.decl.name), sym.decl.name, fk)
  elseif col.type:gsub("%?$", "") ~= sym.primary.type then
    self:err(r, "%s %s: %s.%s is %s but the primary key %s.%s is %s", r.relation, r.name,
      target.decl.name, fk, col.type, sym.decl.name, sym.primary.name, sym.primary.type)
  end
end

-- Indexes, after the foreign-key columns exist.
function S:index(sym, ix)
  local node = sym.node
  local attrs = self:attributes(ix.attributes, INDEX_ATTRS, "index")
  local names, cols = column_names(node), {}
  for _, c in ipairs(ix.columns or {}) do
    if not column(node, c.name) then
      self:err(c, "index names an unknown column %s of %s%s", c.name, sym.decl.name,
        suggest(c.name, names))
    end
    cols[#cols + 1] = c.name
  end
  node.indexes[#node.indexes + 1] = { kind = "index", name = node.table .. "_" ..
    concat(cols, "_") .. "_idx", line = ix.line, col = ix.col, columns = cols,
    unique = attrs.unique and true or nil }
end

-- options ---------------------------------------------------------------------------------------

-- Checks option names; returns a map name -> option node (the first).
function S:options(list, allowed, what)
  local by, allow = {}, set(allowed)
  for _, o in ipairs(list or {}) do
    if not allow[o.name] then
      self:err(o, "unknown option %s in %s%s", o.name, what, suggest(o.name, allowed))
    elseif by[o.name] then
      self:err(o, "option %s is given twice in %s (first at %d:%d)", o.name, what,
        by[o.name].line, by[o.name].col)
    else
      by[o.name] = o
    end
  end
  return by
end

-- The values of an option: a list without braces is its groups, anything else one value.
local function option_values(o)
  local v = o.value
  if v and v.kind == "list" and not v.brace then return v.items end
  return { v }
end

-- Parameters of an rpc or job as IR fields.
function S:params(list, owner)
  local out = {}
  self:unique_names(list or {}, "parameter", owner)
  for _, p in ipairs(list or {}) do out[#out + 1] = (self:member(p, PARAM_ATTRS, "parameter")) end
  return out
end

-- services --------------------------------------------------------------------------------------

local function path_params(path)
  local out = {}
  for name in path:gmatch("{([^}]*)}") do out[#out + 1] = name end
  return out
end

function S:http(rpc, o, node, inputs)
  local v = o.value
  local verb, path = v.items and v.items[1], v.items and v.items[2]
  if v.kind ~= "tuple" or #v.items ~= 2 or verb.kind ~= "ident" or path.kind ~= "string" then
    return self:err(v, 'http: expected a verb and a path (POST "/v1/things"), found %s',
      value_text(v))
  end
  if not VERBS[verb.name] then
    self:err(verb, "unknown HTTP verb %s%s", verb.name,
      suggest(verb.name:upper(), { "DELETE", "GET", "PATCH", "POST", "PUT" }))
  end
  local p = path.value
  if p:sub(1, 1) ~= "/" then return self:err(path, 'http: the path %q must start with "/"', p) end
  local full = (self.prefix or "") .. p
  if self.prefix and p:sub(1, #self.prefix) == self.prefix then
    self:warn(path, "the path %s already starts with the service prefix %s (the route is %s)", p,
      self.prefix, full)
  end
  local names = {}
  for _, i in ipairs(inputs) do names[#names + 1] = i.name end
  local have = set(names)
  for _, name in ipairs(path_params(p)) do
    if not name:match("^[%a_][%w_]*$") then
      self:err(path, "bad path parameter {%s} in %s", name, p)
    elseif not have[name] then
      self:err(path, "path parameter {%s} is not an input of %s%s", name, rpc.name,
        suggest(name, names))
    end
  end
  node.method, node.path = verb.name, full
  local key = verb.name .. " " .. full:gsub("{[^}]*}", "{}")
  local prev = self.routes[key]
  if prev then
    self:err(v, "route %s %s is already served by %s at %s", verb.name, full, prev.name,
      where(prev.file, prev.node))
  else
    self.routes[key] = { name = self.service .. "." .. rpc.name, file = self.file, node = v }
  end
end

function S:rpc(r)
  local node = { kind = "rpc", name = r.name, line = r.line, col = r.col, doc = r.doc }
  node.inputs = self:params(r.params, "rpc " .. r.name)
  if r.returns then
    local b = self:bind_type(r.returns)
    node.output = b.text
    node.output_ref = b.ref
  end
  local opts = self:options(r.options, RPC_OPTIONS, "rpc " .. r.name)
  if opts.http then self:http(r, opts.http, node, node.inputs) end
  if opts.auth then
    local v = opts.auth.value
    if v.kind ~= "ident" or (v.name ~= "required" and v.name ~= "none") then
      self:err(v, "auth is required or none, found %s%s", value_text(v),
        suggest(v.name, { "none", "required" }))
    else
      node.auth = v.name
    end
  end
  if opts.permission then
    local v = opts.permission.value
    if v.kind ~= "string" and v.kind ~= "ident" then
      self:err(v, "permission takes a name, found %s", describe(v))
    else
      node.permission = v.value or v.name
      if node.auth == "none" then
        self:err(opts.auth, "rpc %s has auth: none and a permission: a permission needs a user",
          r.name)
      end
      node.auth = "required"
    end
  end
  if not opts.auth and not opts.permission then
    self:err(r, "rpc %s has no auth: say auth: required, auth: none or permission: \"...\" " ..
      "(secure by default)", r.name)
  end
  if opts.errors then self:errors(r, opts.errors, node) end
  if opts.paginated then
    local v = opts.paginated.value
    if v.kind ~= "bool" then
      self:err(v, "paginated is true or false, found %s", describe(v))
    else
      node.paginated = v.value or nil
      if v.value and not r.returns then
        self:err(v, "paginated rpc %s needs an output type (-> T)", r.name)
      end
    end
  end
  return node
end

function S:errors(r, o, node)
  local v = o.value
  local items = (v.kind == "list") and v.items or { v }
  local seen, list = {}, {}
  for _, e in ipairs(items) do
    local code, msg = e.name, nil
    if e.kind == "call" then
      local a = e.args[1]
      if #e.args ~= 1 or a.name or a.value.kind ~= "string" then
        self:err(e, "error %s takes one message string, found %s", e.name, value_text(e))
      else
        msg = a.value.value
      end
    elseif e.kind ~= "ident" then
      self:err(e, "errors: expected an error code, found %s", describe(e))
      code = nil
    end
    if code then
      if not ir.ERROR_STATUS[code] then
        self:err(e, "unknown error code %s%s", code, suggest(code, ERROR_CODES))
      elseif seen[code] then
        self:err(e, "error %s is listed twice in rpc %s", code, r.name)
      else
        seen[code] = true
        list[#list + 1] = { kind = "error", name = code, line = e.line, col = e.col,
          status = ir.ERROR_STATUS[code], message = msg }
      end
    end
  end
  node.errors = list
end

function S:service(sym)
  local d = sym.decl
  local node = { kind = "service", name = d.name, module = sym.module, file = sym.file,
    line = d.line, col = d.col, doc = d.doc, rpcs = {} }
  local opts = self:options(d.options, SERVICE_OPTIONS, "service " .. d.name)
  self.prefix = nil
  if opts.prefix then
    local v = opts.prefix.value
    if v.kind ~= "string" or v.value:sub(1, 1) ~= "/" or v.value:sub(-1) == "/" then
      self:err(v, 'prefix takes a path like "/v1" (a leading "/", no trailing one), found %s',
        value_text(v))
    else
      self.prefix = v.value
      node.prefix = v.value
    end
  end
  self.service = d.name
  self:unique_names(d.rpcs or {}, "rpc", d.name)
  for _, r in ipairs(d.rpcs or {}) do
    if r.name then node.rpcs[#node.rpcs + 1] = self:rpc(r) end
  end
  return node
end

-- jobs and schedules ---------------------------------------------------------------------------

function S:retry(o, node)
  local retry = {}
  for _, v in ipairs(option_values(o)) do
    local args = v.args or {}
    if v.kind == "call" and v.name == "max_attempts" then
      local a = args[1]
      if #args ~= 1 or a.name or a.value.kind ~= "int" or a.value.value < 1 then
        self:err(v, "max_attempts takes a count >= 1, found %s", value_text(v))
      else
        retry.max_attempts = a.value.value
      end
    elseif v.kind == "call" and v.name == "backoff" then
      local a = args[1]
      if not a or a.name or a.value.kind ~= "ident" or not BACKOFF[a.value.name] then
        self:err(v, "backoff starts with exponential, linear or fixed, found %s",
          a and value_text(a.value) or "nothing")
      else
        retry.backoff = a.value.name
      end
      for i = 2, #args do
        local b = args[i]
        if b.name ~= "base" and b.name ~= "max" then
          self:err(b, "backoff takes base: and max: durations%s", suggest(b.name, { "base", "max" }))
        elseif b.value.kind ~= "duration" or not duration.parse(b.value.text) then
          self:err(b.value, "backoff %s: expected a duration (10s), found %s", b.name,
            describe(b.value))
        else
          retry[b.name] = b.value.text
        end
      end
    else
      self:err(v, "retry takes max_attempts(n) and backoff(kind, base: 10s), found %s%s",
        value_text(v), suggest(v.name, { "backoff", "max_attempts" }))
    end
  end
  node.retry = retry
end

function S:job(sym)
  local d = sym.decl
  local node = { kind = "job", name = d.name, module = sym.module, file = sym.file,
    line = d.line, col = d.col, doc = d.doc, queue = "default" }
  node.inputs = self:params(d.params, "job " .. d.name)
  local opts = self:options(d.options, JOB_OPTIONS, "job " .. d.name)
  if opts.queue then
    local v = opts.queue.value
    if v.kind ~= "ident" and v.kind ~= "string" then
      self:err(v, "queue takes a name, found %s", describe(v))
    else
      node.queue = v.name or v.value
    end
  end
  if opts.retry then self:retry(opts.retry, node) end
  if opts.timeout then
    local v = opts.timeout.value
    if v.kind ~= "duration" or not duration.parse(v.text) then
      self:err(v, "timeout takes a duration (30s), found %s", describe(v))
    else
      node.timeout = v.text
    end
  end
  return node
end

function S:schedule(sym)
  local d = sym.decl
  local node = { kind = "schedule", name = d.name, module = sym.module, file = sym.file,
    line = d.line, col = d.col, doc = d.doc }
  local opts = self:options(d.options, SCHEDULE_OPTIONS, "schedule " .. d.name)
  if not opts.cron then self:err(name_node(d), "schedule %s has no cron:", d.name) end
  if not opts.dispatch then self:err(name_node(d), "schedule %s has no dispatch:", d.name) end
  if opts.cron then
    local v = opts.cron.value
    if v.kind ~= "string" then
      self:err(v, 'cron takes a string ("0 9 * * *"), found %s', describe(v))
    else
      local ok, err = M.check_cron(v.value)
      if ok then node.cron = v.value else self:err(v, "bad cron %q: %s", v.value, err) end
    end
  end
  if opts.dispatch then self:dispatch(opts.dispatch.value, node) end
  return node
end

function S:dispatch(v, node)
  if v.kind ~= "ident" and v.kind ~= "call" then
    return self:err(v, "dispatch names a job (SendDigest()), found %s", describe(v))
  end
  local sym = self:lookup(v.name, self.mod)
  if not sym then
    local jobs = {}
    for _, q in ipairs(self.order) do
      local s = self.symbols[q]
      if s.kind == "job" then jobs[#jobs + 1] = s.module == self.mod and s.decl.name or q end
    end
    return self:err(v, "dispatch names an unknown job %s%s", v.name, suggest(v.name, jobs))
  end
  if sym.kind ~= "job" then
    return self:err(v, "dispatch names %s, %s, not a job", v.name, article(sym.kind))
  end
  node.dispatch = sym.qname
  local params = sym.decl.params or {}
  local by, given, args = {}, {}, {}
  for i, p in ipairs(params) do by[p.name] = i end
  for i, a in ipairs(v.args or {}) do
    local idx = a.name and by[a.name] or (not a.name and i) or nil
    local p = idx and params[idx]
    if not p then
      local names = {}
      for _, q in ipairs(params) do names[#names + 1] = q.name end
      if a.name then
        self:err(a, "job %s has no parameter %s%s", v.name, a.name, suggest(a.name, names))
      else
        self:err(a, "job %s takes %d argument%s, found %d", v.name, #params,
          #params == 1 and "" or "s", #v.args)
      end
    else
      given[p.name] = true
      args[#args + 1] = p.name .. "=" .. value_text(a.value)
    end
  end
  for _, p in ipairs(params) do
    if not given[p.name] and not (p.type and p.type.optional) then
      self:err(v, "dispatch of %s is missing the argument %s", v.name, p.name)
    end
  end
  node.args = args
end

-- resolve ---------------------------------------------------------------------------------------

local function by_qname(a, b)
  if a.module ~= b.module then return a.module < b.module end
  return a.name < b.name
end

-- Resolves parsed trees into the IR. See the header for the shape of the result.
function M.resolve(trees, opts)
  if type(trees) ~= "table" then error("resolve: trees must be a table", 2) end
  if trees.kind == "file" then trees = { trees } end
  opts = opts or {}
  local self = setmetatable({ diags = {}, symbols = {}, order = {}, modules = {}, used = {},
    routes = {}, module_of = opts.module_of or module_of }, S)
  for _, tree in ipairs(trees) do self:declare(tree) end
  local out = { kind = "ir", entities = {}, messages = {}, enums = {}, services = {}, jobs = {},
    schedules = {} }
  local function each(kind, fn)
    for _, q in ipairs(self.order) do
      local sym = self.symbols[q]
      if sym.kind == kind then
        self.file, self.mod = sym.file, sym.module
        fn(sym)
      end
    end
  end
  local function members(sym, kind)
    local list = {}
    for _, m in ipairs(sym.decl.members or {}) do
      if m.kind == kind then list[#list + 1] = m end
    end
    return list
  end
  each("entity", function(sym) out.entities[#out.entities + 1] = self:record(sym) end)
  each("message", function(sym) out.messages[#out.messages + 1] = self:record(sym) end)
  each("entity", function(sym)
    for _, r in ipairs(members(sym, "relation")) do
      if r.relation == "belongs_to" then self:belongs_to(sym, r) end
    end
  end)
  each("entity", function(sym)
    for _, r in ipairs(members(sym, "relation")) do
      if r.relation ~= "belongs_to" then self:has(sym, r) end
    end
    for _, ix in ipairs(members(sym, "index")) do self:index(sym, ix) end
  end)
  each("service", function(sym) out.services[#out.services + 1] = self:service(sym) end)
  each("job", function(sym) out.jobs[#out.jobs + 1] = self:job(sym) end)
  each("schedule", function(sym) out.schedules[#out.schedules + 1] = self:schedule(sym) end)
  each("enum", function(sym)
    local d = sym.decl
    local node = { kind = "enum", name = d.name, module = sym.module, file = sym.file,
      line = d.line, col = d.col, doc = d.doc, values = {} }
    self:unique_names(d.values or {}, "value", d.name)
    for _, v in ipairs(d.values or {}) do
      local attrs = self:attributes(v.attributes, VALUE_ATTRS, "enum value " .. v.name)
      local value = { kind = "value", name = v.name, line = v.line, col = v.col }
      if attrs.renamed_from then
        local a = self:one_arg(attrs.renamed_from)
        if a and a.kind == "string" then value.renamed_from = a.value end
      end
      node.values[#node.values + 1] = value
    end
    if not self.used[sym.qname] then self:warn(name_node(d), "enum %s is never used", d.name) end
    out.enums[#out.enums + 1] = node
  end)
  for _, list in pairs({ out.entities, out.messages, out.enums, out.services, out.jobs,
    out.schedules }) do
    sort(list, by_qname)
  end
  local mods = {}
  for m in pairs(self.modules) do mods[#mods + 1] = m end
  sort(mods)
  out.modules = mods
  return out, self.diags
end

return M
