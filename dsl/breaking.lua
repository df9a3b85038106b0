-- dsl.breaking: the changes between two versions of a schema, each classified as additive or
-- breaking for the clients and the data of the old one. `zever breaking` prints them.
--
--   breaking.compare(old_ir, new_ir) -> changes (sorted: breaking first, then by subject)
--       change = { level = "breaking" | "additive", subject = "entity Task", message = "...",
--                  file =, line =, col = }   (the place in the new schema, or the old one for
--                                            what was removed)
--
-- Breaking: a removed entity, message, enum, service, rpc, job, field, column or enum value; a
-- type narrowed or changed (int64 -> int32, string -> int32, T? -> T); a required field, column,
-- input or job parameter added (no default, not optional); an rpc's verb or path changed, its
-- output changed, its auth tightened (none -> required, a permission or roles added); a table
-- renamed. Additive: anything added that old clients and rows do not need, a type widened
-- (int32 -> int64, float32 -> float64, T -> T?), an input removed (the server ignores it).

local concat, sort = table.concat, table.sort
local format = string.format

local M = {}

-- Widenings: the old type's values all fit the new one.
local WIDER = { int32 = { int64 = true, float64 = true }, float32 = { float64 = true },
  int64 = {}, float64 = {} }

local function base(t) return (t or "?"):gsub("%?$", "") end
local function optional(t) return (t or ""):sub(-1) == "?" end

-- "same", "wider" or "narrower" for a type change old -> new.
local function type_change(old, new)
  if old == new then return "same" end
  local ob, nb = base(old), base(new)
  if ob == nb then return optional(new) and "wider" or "narrower" end
  if WIDER[ob] and WIDER[ob][nb] and (optional(new) or not optional(old)) then return "wider" end
  return "narrower"
end

local function by_qname(list)
  local out = {}
  for _, n in ipairs(list or {}) do out[(n.module or "") .. "." .. n.name] = n end
  return out
end

local function by_name(list)
  local out = {}
  for _, n in ipairs(list or {}) do out[n.name] = n end
  return out
end

local function sorted_keys(...)
  local seen, keys = {}, {}
  for i = 1, select("#", ...) do
    for k in pairs((select(i, ...))) do
      if not seen[k] then
        seen[k] = true
        keys[#keys + 1] = k
      end
    end
  end
  sort(keys)
  return keys
end

local function required(f)
  return not optional(f.type) and f.default == nil and f.default_name == nil and not f.primary
end

function M.compare(old, new)
  local changes = {}
  local function add(level, node, file, subject, msg, ...)
    changes[#changes + 1] = { level = level, subject = subject, message = format(msg, ...),
      file = file, line = node and node.line, col = node and node.col }
  end

  -- Fields (entity columns, message fields, rpc inputs, job params) of one owner.
  local function fields(o, n, key, subject, file_o, file_n, as_input)
    local of, nf = by_name(o[key]), by_name(n[key])
    for _, name in ipairs(sorted_keys(of, nf)) do
      local a, b = of[name], nf[name]
      if a and not b then
        if as_input then
          add("additive", a, file_o, subject, "input %s removed (clients that send it are ignored)", name)
        else
          add("breaking", a, file_o, subject, "%s removed", name)
        end
      elseif b and not a then
        if required(b) then
          add("breaking", b, file_n, subject, "required %s %s: %s added (no default)",
            as_input and "input" or "field", name, b.type)
        else
          add("additive", b, file_n, subject, "%s: %s added", name, b.type)
        end
      else
        local c = type_change(a.type, b.type)
        if c == "narrower" then
          add("breaking", b, file_n, subject, "%s changed type %s -> %s", name, a.type, b.type)
        elseif c == "wider" then
          add("additive", b, file_n, subject, "%s widened %s -> %s", name, a.type, b.type)
        end
        if a.validate and b.validate then
          for _, k in ipairs({ "min_len", "gt", "gte" }) do
            if (b.validate[k] or -math.huge) > (a.validate[k] or -math.huge) then
              add("breaking", b, file_n, subject, "%s: @validate(%s) tightened", name, k)
            end
          end
          for _, k in ipairs({ "max_len", "lt", "lte" }) do
            if (b.validate[k] or math.huge) < (a.validate[k] or math.huge) then
              add("breaking", b, file_n, subject, "%s: @validate(%s) tightened", name, k)
            end
          end
        elseif b.validate and not a.validate then
          add("breaking", b, file_n, subject, "%s: @validate added", name)
        end
      end
    end
  end

  -- Top-level declarations of one kind.
  local function decls(kind, each)
    local list = kind == "entity" and "entities" or kind .. "s"
    local o, n = by_qname(old[list]), by_qname(new[list])
    for _, q in ipairs(sorted_keys(o, n)) do
      local a, b = o[q], n[q]
      local subject = kind .. " " .. q:gsub("^%.", "")
      if a and not b then
        add("breaking", a, a.file, subject, "%s removed", subject)
      elseif b and not a then
        add("additive", b, b.file, subject, "%s added", subject)
      elseif each then
        each(a, b, subject)
      end
    end
  end

  decls("entity", function(a, b, subject)
    if a.table ~= b.table then
      add("breaking", b, b.file, subject, "table renamed %s -> %s", a.table, b.table)
    end
    fields(a, b, "columns", subject, a.file, b.file)
  end)
  decls("message", function(a, b, subject) fields(a, b, "fields", subject, a.file, b.file) end)
  decls("enum", function(a, b, subject)
    local ov, nv = by_name(a.values), by_name(b.values)
    for _, name in ipairs(sorted_keys(ov, nv)) do
      if ov[name] and not nv[name] then
        add("breaking", ov[name], a.file, subject, "value %s removed", name)
      elseif nv[name] and not ov[name] then
        add("additive", nv[name], b.file, subject, "value %s added", name)
      end
    end
  end)
  decls("service", function(a, b)
    local orp, nrp = by_name(a.rpcs), by_name(b.rpcs)
    for _, name in ipairs(sorted_keys(orp, nrp)) do
      local x, y = orp[name], nrp[name]
      local s = "rpc " .. b.name .. "." .. name
      if x and not y then
        add("breaking", x, a.file, s, "%s removed", s)
      elseif y and not x then
        add("additive", y, b.file, s, "%s added", s)
      else
        if (x.method or "") ~= (y.method or "") or (x.path or "") ~= (y.path or "") then
          add("breaking", y, b.file, s, "route changed %s %s -> %s %s", x.method or "(none)",
            x.path or "", y.method or "(none)", y.path or "")
        end
        if (x.output or "") ~= (y.output or "") then
          add("breaking", y, b.file, s, "output changed %s -> %s", x.output or "(none)",
            y.output or "(none)")
        end
        if x.auth == "none" and y.auth ~= "none" then
          add("breaking", y, b.file, s, "auth tightened none -> required")
        end
        if y.permission and y.permission ~= x.permission then
          add("breaking", y, b.file, s, "permission %s now required", y.permission)
        end
        if y.roles and concat(y.roles, ",") ~= concat(x.roles or {}, ",") then
          add("breaking", y, b.file, s, "roles changed to %s", concat(y.roles, ", "))
        end
        if x.paginated ~= y.paginated then
          add("breaking", y, b.file, s, "paginated changed %s -> %s", tostring(x.paginated == true),
            tostring(y.paginated == true))
        end
        fields(x, y, "inputs", s, a.file, b.file, true)
      end
    end
  end)
  decls("job", function(a, b, subject)
    fields(a, b, "inputs", subject, a.file, b.file, false)
    if a.queue ~= b.queue then
      add("breaking", b, b.file, subject, "queue changed %s -> %s", tostring(a.queue), tostring(b.queue))
    end
  end)
  decls("schedule")
  decls("saga", function(a, b, subject)
    local os_, ns = by_name(a.steps), by_name(b.steps)
    for _, name in ipairs(sorted_keys(os_, ns)) do
      if os_[name] and not ns[name] then
        add("breaking", os_[name], a.file, subject, "step %s removed (running sagas stop there)", name)
      elseif ns[name] and not os_[name] then
        add("breaking", ns[name], b.file, subject, "step %s added (running sagas do not know it)", name)
      end
    end
  end)

  sort(changes, function(x, y)
    if x.level ~= y.level then return x.level == "breaking" end
    if x.subject ~= y.subject then return x.subject < y.subject end
    return x.message < y.message
  end)
  return changes
end

-- The number of breaking changes in a list from compare.
function M.count(changes)
  local n = 0
  for _, c in ipairs(changes) do
    if c.level == "breaking" then n = n + 1 end
  end
  return n
end

return M
