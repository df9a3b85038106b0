-- dsl.resolve.records: the resolver phase for entities and messages: members, columns,
-- relations (belongs_to, has_*, many_to_many) and indexes.
-- It adds methods to the shared state S (dsl/resolve/common.lua); dsl/resolver.lua runs them.

if jit then jit.off(true, true) end -- interpreted, like all of the resolver (dsl/resolver.lua)

local C = require "dsl.resolve.common"
local S = C.S
local sql_type = C.sql_type
local ENTITY_ATTRS = C.ENTITY_ATTRS
local FIELD_ATTRS = C.FIELD_ATTRS
local INDEX_ATTRS = C.INDEX_ATTRS
local ON_DELETE = C.ON_DELETE
local PARAM_ATTRS = C.PARAM_ATTRS
local RELATION_ATTRS = C.RELATION_ATTRS
local RELATION_OPTIONS = C.RELATION_OPTIONS
local article = C.article
local concat = table.concat
local describe = C.describe
local format = string.format
local ir = require "dsl.ir"
local tnew = require "table.new"
local name_node = C.name_node
local suggest = C.suggest
local value_text = C.value_text

-- The IR of a field or parameter: attributes checked, value checks, default.
function S:member(f, allowed, what, persisted)
  local b = self:bind_type(f.type)
  -- Every key a member usually gets is in the constructor's template, so that the node never
  -- rehashes as keys arrive (a template keeps only constant values once precompiled: false
  -- stands in, dsl/parser.lua says more).
  local node = { kind = false, name = false, line = false, col = false, type = false,
    nullable = false, ref = false, doc = false, sql = false, validate = false, unique = false,
    primary = false }
  node.kind, node.name, node.line, node.col = persisted and "column" or "field", f.name, f.line,
    f.col
  node.type, node.nullable, node.ref, node.doc = b.text, b.optional or nil, b.ref, f.doc
  node.sql, node.validate, node.unique, node.primary = nil, nil, nil, nil
  if persisted then
    node.sql = sql_type(b)
    if b.kind == "entity" then
      self:err(f.type, "field %s has the entity type %s: use belongs_to, has_one or has_many",
        f.name, b.text)
    end
  end
  local attrs = self:attributes(f.attributes, allowed, what, f.name)
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
  local seen = tnew(0, #list) -- sized once: an entity's dozen names grew it four times
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
  local eattrs = self:attributes(d.attributes, persisted and ENTITY_ATTRS or {},
    d.kind .. " " .. d.name)
  if persisted then
    node.table = ir.table_name(d.name)
    if eattrs.schema then
      local v = self:one_arg(eattrs.schema)
      if v and ((v.kind ~= "ident" and v.kind ~= "string") or
        not (v.name or v.value):match("^[%l_][%l%d_]*$")) then
        self:err(v, "@schema takes a lower-case name (billing), found %s", describe(v))
      elseif v then
        node.schema = v.name or v.value
        node.table = node.schema .. "_" .. node.table
      end
    end
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
  local attrs = self:attributes(r.attributes, RELATION_ATTRS, "relation", r.name)
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
  local attrs = self:attributes(r.attributes, RELATION_ATTRS, "relation", r.name)
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
    unique = attrs.unique and true or nil, concurrently = attrs.concurrently and true or nil }
end

-- options ---------------------------------------------------------------------------------------

