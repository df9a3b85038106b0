-- dsl.resolve.types: the resolver phase for symbols, type binding, attribute and @validate/@default checks.
-- It adds methods to the shared state S (dsl/resolve/common.lua); dsl/resolver.lua runs them.

if jit then jit.off(true, true) end -- interpreted, like all of the resolver (dsl/resolver.lua)

local C = require "dsl.resolve.common"
local S = C.S
local FORMATS = C.FORMATS
local INTEGERS = C.INTEGERS
local NUMBERS = C.NUMBERS
local SCALARS = C.SCALARS
local SCALAR_LIST = C.SCALAR_LIST
local VALIDATE_KEYS = C.VALIDATE_KEYS
-- Type names that are another's spelling (the Go grammar's datetime is timestamp).
local ALIASES = { datetime = "timestamp" }
local article = C.article
local concat = table.concat
local describe = C.describe
local format = string.format
local name_node = C.name_node
local set = C.set
local sort = table.sort
local suggest = C.suggest
local value_text = C.value_text
local where = C.where

-- "low_priority" -> "LowPriority".
local function pascal(name)
  return (name:gsub("^%l", string.upper):gsub("_(%w)", string.upper))
end

-- The enum declarations that the inline enums of d's fields stand for: priority: enum(low, high)
-- in entity Order is the enum OrderPriority (the type node learns the name as t.inline).
local function inline_enums(d)
  local out = {}
  for _, m in ipairs(d.members or {}) do
    local t = m.kind == "field" and m.type
    while t and t.list do t = t.of end
    if t and t.values then
      t.inline = d.name .. pascal(m.name)
      t.inline_decl = { kind = "enum", name = t.inline, line = t.line, col = t.col,
        values = t.values, inline = true, name_line = t.line, name_col = t.col }
      out[#out + 1] = t.inline_decl
    end
  end
  return out
end

function S:declare(tree)
  self.file = tree.file
  local mod, version = self.module_of(tree.file)
  self.modules[mod] = true
  if version then
    self.versions = self.versions or {}
    self.versions[mod] = version
  end
  local function add(d)
    local q = mod .. "." .. d.name
    local prev = self.symbols[q]
    if prev then
      self:err(name_node(d), "%s %s is already declared as %s %s at %s%s", d.kind, d.name,
        prev.decl.kind, d.name, where(prev.file, name_node(prev.decl)),
        (d.inline or prev.decl.inline) and " (the inline enum of a field is named after its "
          .. "entity and field)" or "")
    else
      self.symbols[q] = { decl = d, file = tree.file, module = mod, qname = q, kind = d.kind }
      self.order[#self.order + 1] = q
    end
  end
  for _, d in ipairs(tree.decls or {}) do
    if d.name then add(d) end
  end
  for _, d in ipairs(tree.decls or {}) do
    if d.name and (d.kind == "entity" or d.kind == "message") then
      for _, e in ipairs(inline_enums(d)) do add(e) end
    end
  end
end

-- The names a type in module mod may refer to, for did-you-mean.
function S:type_candidates(mod)
  self.type_cands = self.type_cands or {}
  local list = self.type_cands[mod]
  if list then return list end
  list = {}
  for _, s in ipairs(SCALAR_LIST) do list[#list + 1] = s end
  for _, q in ipairs(self.order) do
    local sym = self.symbols[q]
    local k = sym.kind
    if k == "entity" or k == "message" or k == "enum" then
      list[#list + 1] = sym.module == mod and sym.decl.name or q
    end
  end
  self.type_cands[mod] = list
  return list
end

-- The qualified names of the symbols declared as name, in declaration order (built once).
function S:same_name(name)
  local index = self.by_decl_name
  if not index then
    index = {}
    for _, q in ipairs(self.order) do
      local n = self.symbols[q].decl.name
      local l = index[n]
      if not l then
        l = {}
        index[n] = l
      end
      l[#l + 1] = q
    end
    self.by_decl_name = index
  end
  return index[name] or {}
end

-- A did-you-mean over every type compares the word with each declared name: with thousands of
-- unknown types in thousands of declarations that is quadratic, so the first HINTS get one.
local HINTS = 100

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
    -- Every key in the constructor's template (see dsl/parser.lua, mknode's comment): a bound
    -- type per field, built without a rehash.
    out = { kind = "scalar", scalar = false, text = false, optional = false }
    out.scalar, out.text, out.optional = t.name, t.name, nil
  elseif ALIASES[t.name] then
    out = { kind = "scalar", scalar = ALIASES[t.name], text = ALIASES[t.name] }
  elseif t.values and not t.inline then
    self:err(t, "an inline enum(...) is a field's type; declare enum Name { ... } to use it here")
    out = { kind = "unknown", text = "enum" }
  else
    local sym = t.name and self:lookup(t.inline or t.name, self.mod)
    if t.inline and sym and sym.decl ~= t.inline_decl then sym = false end -- a clash, reported
    if sym and (sym.kind == "entity" or sym.kind == "message" or sym.kind == "enum") then
      self.used[sym.qname] = true
      out = { kind = sym.kind, ref = sym.qname, sym = sym, text = t.inline or t.name }
    elseif sym == false then
      out = { kind = "unknown", text = t.inline }
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
        if not mod then
          for _, q in ipairs(self:same_name(t.name)) do
            if self.symbols[q].module ~= self.mod then
              hint = format(" (did you mean %s?)", q)
              break
            end
          end
        end
        self.hints_given = self.hints_given or 0
        if hint == "" and self.hints_given < HINTS then
          self.hints_given = self.hints_given + 1
          hint = suggest(t.name, self:type_candidates(self.mod))
        end
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
    -- The value names and their set, once per enum symbol (a symbol lives for one resolve).
    local sym = b.sym
    local values, have = sym.value_names, sym.value_set
    if not values then
      values, have = {}, {}
      for _, ev in ipairs(sym.decl.values or {}) do
        values[#values + 1] = ev.name
        have[ev.name] = true
      end
      sym.value_names, sym.value_set = values, have
    end
    if k == "ident" and have[v.name] then return true end
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

-- What a member without attributes gets: callers only read the map.
local NO_ATTRS = setmetatable({}, {
  __newindex = function() error("attributes: the map is read-only", 2) end })

-- Checks attrs against the allowed names; returns a map name -> attribute node (the first).
-- what (and name, when given: "field" "email") says whose they are, in messages only: the text
-- is built when there is an error, not for every member.
function S:attributes(attrs, allowed, what, name)
  if not attrs or #attrs == 0 then return NO_ATTRS end
  local by, allow = {}, set(allowed)
  for _, a in ipairs(attrs) do
    if not allow[a.name] then
      self:err(a, "unknown attribute @%s on %s%s", a.name, name and what .. " " .. name or what,
        suggest(a.name, allowed))
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
      else
        -- "email" (the Go grammar's form) or the bare email of this dialect.
        local word = (v.kind == "ident" and v.name) or (v.kind == "string" and v.value) or nil
        if not (word and FORMATS[word]) then
          self:err(v, '@validate(format) must be one of "email", "url", "uuid"; %s is not%s',
            value_text(v), suggest(word, { "email", "url", "uuid" }))
        else
          out.format = word
        end
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

