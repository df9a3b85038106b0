-- dsl.graph: pictures of a resolved schema, and its module boundaries.
--
--   graph.er(ir[, module])   -> Mermaid erDiagram text: entities (columns with PK/FK/UK) and
--                               their relations; with module, that module's entities and the
--                               entities they point at
--   graph.modules(ir)        -> Mermaid flowchart text: an arrow per pair of modules where the
--                               first refers to the second (relations, field and rpc types,
--                               owner checks, saga steps), labelled with the count
--   graph.crossings(ir)      -> the references that cross modules and break the Go framework's
--                               boundary rules: relations, rpc outputs and permission resources
--                               in another module (saga steps may cross by design), as
--                               { file, line, col, message }
--
-- Deterministic: the same IR gives the same text.

local concat, sort = table.concat, table.sort
local format = string.format

local M = {}

local function mod_of(ref)
  return ref and ref:match("^(.-)%.[^.]+$")
end

-- Mermaid names: letters, digits and _ (a module-qualified entity is module_Name).
local function id(ir, ent_module, name)
  if #(ir.modules or {}) > 1 then return (ent_module .. "_" .. name):gsub("[^%w_]", "_") end
  return (name:gsub("[^%w_]", "_"))
end

local function id_of_ref(ir, ref)
  local m, n = ref:match("^(.-)%.([^.]+)$")
  return id(ir, m, n)
end

local function mermaid_type(t)
  return ((t or "unknown"):gsub("%?$", ""):gsub("[^%w_]", "_"))
end

function M.er(ir, module)
  local wanted
  if module then
    wanted = {}
    for _, e in ipairs(ir.entities or {}) do
      if e.module == module then
        wanted[e.module .. "." .. e.name] = true
        for _, r in ipairs(e.relations or {}) do
          if r.target then wanted[r.target] = true end
        end
      end
    end
  end
  local out = { "erDiagram" }
  local pairs_seen = {}
  for _, e in ipairs(ir.entities or {}) do
    local q = e.module .. "." .. e.name
    if not wanted or wanted[q] then
      local me = id(ir, e.module, e.name)
      out[#out + 1] = format("  %s {", me)
      local fks = {}
      for _, fk in ipairs(e.foreign_keys or {}) do fks[fk.name] = true end
      for _, c in ipairs(e.columns or {}) do
        local keys = {}
        if c.primary then keys[#keys + 1] = "PK" end
        if fks[c.name] then keys[#keys + 1] = "FK" end
        if c.unique then keys[#keys + 1] = "UK" end
        out[#out + 1] = format("    %s %s%s", mermaid_type(c.type), c.name,
          #keys > 0 and (" " .. concat(keys, ",")) or "")
      end
      out[#out + 1] = "  }"
      if not module or e.module == module then
        for _, r in ipairs(e.relations or {}) do
          if r.target then
            local other = id_of_ref(ir, r.target)
            local line
            if r.relation == "belongs_to" then
              line = format('  %s ||--o{ %s : "%s"', other, me, r.name)
            elseif r.relation == "has_one" then
              line = format('  %s ||--o| %s : "%s"', me, other, r.name)
            elseif r.relation == "many_to_many" then
              local a, b = me, other
              if b < a then a, b = b, a end
              local key = a .. " " .. b .. " " .. (r.join_table or "")
              if not pairs_seen[key] then
                pairs_seen[key] = true
                line = format('  %s }o--o{ %s : "%s"', me, other, r.join_table or r.name)
              end
            end
            -- has_many is drawn by its belongs_to on the other side.
            if line then out[#out + 1] = line end
          end
        end
      end
    end
  end
  return concat(out, "\n") .. "\n"
end

-- Every reference from one module to another: { from, to, kind, file, line, col, what }.
local function references(ir)
  local refs = {}
  local function add(from, ref, kind, node, file, what)
    local to = mod_of(ref)
    if to and to ~= from then
      refs[#refs + 1] = { from = from, to = to, kind = kind, file = file, line = node.line,
        col = node.col, what = what, ref = ref }
    end
  end
  for _, list in ipairs({ ir.entities or {}, ir.messages or {} }) do
    for _, e in ipairs(list) do
      for _, c in ipairs(e.columns or e.fields or {}) do
        add(e.module, c.ref, "type", c, e.file, format("%s.%s: %s", e.name, c.name, c.type))
      end
      for _, r in ipairs(e.relations or {}) do
        add(e.module, r.target, "relation", r, e.file, format("%s %s.%s -> %s", r.relation, e.name,
          r.name, r.target))
      end
    end
  end
  for _, s in ipairs(ir.services or {}) do
    for _, r in ipairs(s.rpcs or {}) do
      for _, i in ipairs(r.inputs or {}) do
        add(s.module, i.ref, "type", i, s.file, format("%s.%s(%s: %s)", s.name, r.name, i.name, i.type))
      end
      add(s.module, r.output_ref, "output", r, s.file, format("%s.%s -> %s", s.name, r.name,
        tostring(r.output_ref)))
      if r.owner then
        add(s.module, r.owner.resource, "permission", r, s.file, format("%s.%s permission resource %s",
          s.name, r.name, r.owner.resource))
      end
    end
  end
  for _, sg in ipairs(ir.sagas or {}) do
    for _, st in ipairs(sg.steps or {}) do
      for _, x in ipairs({ st.execute, st.compensate }) do
        add(sg.module, x and (x.module .. "." .. x.service), "saga", x or st, sg.file,
          format("saga %s step %s -> %s", sg.name, st.name, x and x.ref or "?"))
      end
    end
  end
  return refs
end

function M.modules(ir)
  local out = { "flowchart LR" }
  for _, m in ipairs(ir.modules or {}) do out[#out + 1] = format("  %s[%s]", m, m) end
  local count = {}
  for _, r in ipairs(references(ir)) do
    local key = r.from .. " " .. r.to
    count[key] = (count[key] or 0) + 1
  end
  local keys = {}
  for k in pairs(count) do keys[#keys + 1] = k end
  sort(keys)
  for _, k in ipairs(keys) do
    local from, to = k:match("^(%S+) (%S+)$")
    out[#out + 1] = format("  %s -->|%d| %s", from, count[k], to)
  end
  return concat(out, "\n") .. "\n"
end

local CROSSING = { relation = "a relation", output = "an rpc output",
  permission = "a permission resource" }

function M.crossings(ir)
  local out = {}
  for _, r in ipairs(references(ir)) do
    if CROSSING[r.kind] then
      out[#out + 1] = { file = r.file, line = r.line, col = r.col, kind = r.kind,
        message = format("%s crosses from module %s to module %s: %s", CROSSING[r.kind], r.from,
          r.to, r.what) }
    end
  end
  sort(out, function(a, b)
    if a.file ~= b.file then return (a.file or "") < (b.file or "") end
    if a.line ~= b.line then return (a.line or 0) < (b.line or 0) end
    return (a.col or 0) < (b.col or 0)
  end)
  return out
end

return M
