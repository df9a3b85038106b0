-- dsl.backends.routes: the routes backend. From the resolved IR it writes one Lua module,
-- routes.lua, that registers every RPC with an HTTP route on a zever app, and one handler stub
-- per service, handlers/<service>.lua, written only when missing (the user owns it after that).
--
--   backend.generate(ir, opts) -> { ["routes.lua"] = source,
--                                   ["handlers/task_service.lua"] = { content = stub, once = true } }
--   backend.index(ir)                      -> qualified name -> enum/entity/message node
--   backend.type_of(type_text, module, index) -> a type descriptor (see below)
--
-- The generated module is data: the RPC table (routes, inputs, types, validation, auth,
-- errors) handed to the runtime library zever.rpc (lua/zever/rpc.lua), which decodes, coerces
-- and validates input, runs the auth hooks, calls the handler and maps its error code to an
-- HTTP status (rpc.ERROR_STATUS, the same map as ir.ERROR_STATUS; spec/zever/rpc_spec.lua
-- checks they agree). It needs zever.rpc at run time, never the compiler.
-- docs/zen-backends.md is the user's description of what it does.
--
-- Type descriptors (also read by the openapi backend and `zever explain`):
--   { kind = "string" | "uuid" | "int32" | ... }     a scalar
--   { kind = "list", of = T }                        [T]
--   { kind = "ref", ref = "mod.Name", is = "enum" | "entity" | "message" }
--   { kind = "any", text = "accounts.User" }         a type the resolver could not bind
-- each with optional = true for T?.
--
-- This module must not read files, print, or read the clock: the same IR gives the same bytes.

local ir_mod = require "dsl.ir"

local concat, sort = table.concat, table.sort
local format = string.format
local type, pairs, ipairs, tostring = type, pairs, ipairs, tostring

local M = { name = "routes" }

local SCALAR = {}
for k in pairs(ir_mod.SCALARS) do SCALAR[k] = true end

-- types -----------------------------------------------------------------------------------------

-- Every enum, entity and message of the IR by qualified name (module.Name).
function M.index(ir)
  local out = {}
  for _, list in ipairs({ ir.enums or {}, ir.entities or {}, ir.messages or {} }) do
    for _, node in ipairs(list) do out[node.module .. "." .. node.name] = node end
  end
  return out
end

-- The descriptor of a type as the IR writes it ("uuid", "Priority?", "[string]", "mod.Task"),
-- seen from module mod. Unbound names become { kind = "any" }: the resolver reported them.
function M.type_of(text, mod, index)
  text = text or "?"
  local optional = false
  if text:sub(-1) == "?" then
    optional, text = true, text:sub(1, -2)
  end
  local t
  local inner = text:match("^%[(.*)%]$")
  if inner then
    t = { kind = "list", of = M.type_of(inner, mod, index) }
  elseif SCALAR[text] then
    t = { kind = text }
  else
    local q = text:find(".", 1, true) and text or (mod or "") .. "." .. text
    local node = index[q]
    if node then
      t = { kind = "ref", ref = q, is = node.kind }
    else
      t = { kind = "any", text = text }
    end
  end
  if optional then t.optional = true end
  return t
end

-- The parameter names of a route path: "/v1/users/{user_id}/tasks" -> { "user_id" }.
function M.path_params(path)
  local out = {}
  for name in path:gmatch("{([^}]*)}") do out[#out + 1] = name end
  return out
end

-- "/v1/users/{user_id}" -> "/v1/users/:user_id" (zever.router's parameter syntax).
function M.pattern(path)
  return (path:gsub("{([^}]*)}", ":%1"))
end

-- Where an input of an rpc comes from: "path", "query" (GET, DELETE) or "body".
function M.source(rpc, name)
  for _, p in ipairs(M.path_params(rpc.path or "")) do
    if p == name then return "path" end
  end
  if rpc.method == "GET" or rpc.method == "DELETE" then return "query" end
  return "body"
end

-- The handlers module of a service: TaskService -> "task_service".
function M.handler_file(service)
  return ir_mod.snake(service.name)
end

-- Lua literals ----------------------------------------------------------------------------------

local function is_ident(s)
  return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil and not ({
    ["and"] = 1, ["break"] = 1, ["do"] = 1, ["else"] = 1, ["elseif"] = 1, ["end"] = 1,
    ["false"] = 1, ["for"] = 1, ["function"] = 1, ["goto"] = 1, ["if"] = 1, ["in"] = 1,
    ["local"] = 1, ["nil"] = 1, ["not"] = 1, ["or"] = 1, ["repeat"] = 1, ["return"] = 1,
    ["then"] = 1, ["true"] = 1, ["until"] = 1, ["while"] = 1 })[s]
end

local function quote(s)
  return (format("%q", s):gsub("\\\n", "\\n"):gsub("\r", "\\r"))
end

-- A Lua literal for v: strings quoted, numbers as %.17g, maps with sorted keys, arrays in order.
-- Nested tables are indented so diffs of generated files stay readable; lead is the width of what
-- precedes v on its line (a key), so that a line stays within the lint's 110 columns.
local function literal(v, indent, lead)
  local t = type(v)
  if t == "string" then return quote(v) end
  if t == "number" then
    if v == math.floor(v) and v > -2 ^ 53 and v < 2 ^ 53 then return format("%d", v) end
    return format("%.17g", v)
  end
  if t ~= "table" then return tostring(v) end
  indent = indent or ""
  local inner = indent .. "  "
  local parts = {}
  if #v > 0 then
    local simple = true
    for _, x in ipairs(v) do
      if type(x) == "table" then simple = false end
    end
    for i, x in ipairs(v) do parts[i] = literal(x, inner) end
    local one = "{ " .. concat(parts, ", ") .. " }"
    if simple and #indent + (lead or 0) + #one < 104 then return one end
    return "{\n" .. inner .. concat(parts, ",\n" .. inner) .. ",\n" .. indent .. "}"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  if #keys == 0 then return "{}" end
  sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local flat, width = true, #indent
  for i, k in ipairs(keys) do
    local key = is_ident(k) and k or "[" .. literal(k) .. "]"
    parts[i] = key .. " = " .. literal(v[k], inner, #key + 3)
    width = width + #parts[i] + 2
    if parts[i]:find("\n", 1, true) then flat = false end
  end
  if flat and width < 96 and width + (lead or 0) < 106 then return "{ " .. concat(parts, ", ") .. " }" end
  return "{\n" .. inner .. concat(parts, ",\n" .. inner) .. ",\n" .. indent .. "}"
end
M.literal = literal

-- the RPC table ---------------------------------------------------------------------------------

-- The runtime's view of one field or parameter (name, type, optional, default, validate).
local function field_spec(f, mod, index, refs)
  local t = M.type_of(f.type, mod, index)
  local function note(x)
    if x.kind == "ref" then refs[x.ref] = true elseif x.kind == "list" then note(x.of) end
  end
  note(t)
  local spec = { name = f.name, type = t, optional = t.optional or nil }
  t.optional = nil
  if f.default ~= nil then
    spec.default = f.default
  elseif f.default_name ~= nil and t.kind == "ref" and t.is == "enum" then
    spec.default = f.default_name
  end
  if f.validate and next(f.validate) then spec.validate = f.validate end
  return spec
end

-- Types referenced by inputs and outputs, closed over message/entity fields: qname -> runtime
-- type.
local function type_table(refs, index)
  local out, todo = {}, {}
  for q in pairs(refs) do todo[#todo + 1] = q end
  while #todo > 0 do
    local q = table.remove(todo)
    if not out[q] then
      local node = index[q]
      if node.kind == "enum" then
        local values = {}
        for i, v in ipairs(node.values or {}) do values[i] = v.name end
        out[q] = { kind = "enum", name = node.name, values = values }
      else
        local more, fields = {}, {}
        for _, f in ipairs(node.kind == "entity" and node.columns or node.fields or {}) do
          local spec = field_spec(f, node.module, index, more)
          -- An entity as an input: its columns are optional (ids, keys and defaults are the
          -- server's), a message's fields are required unless optional or defaulted. As an
          -- output an entity has every column that is not nullable (T?): nullable says which.
          if node.kind == "entity" then
            spec.nullable = spec.optional
            spec.optional = true
          end
          fields[#fields + 1] = spec
        end
        out[q] = { kind = "record", name = node.name, fields = fields }
        for r in pairs(more) do todo[#todo + 1] = r end
      end
    end
  end
  return out
end

-- The RPC list of the generated module, in IR order (services by qualified name, rpcs as
-- declared); rpcs without http: have no route and are left out.
local function rpc_table(ir, index)
  local rpcs, refs = {}, {}
  for _, svc in ipairs(ir.services or {}) do
    for _, rpc in ipairs(svc.rpcs or {}) do
      if rpc.method and rpc.path then
        local inputs = {}
        for _, f in ipairs(rpc.inputs or {}) do
          local spec = field_spec(f, svc.module, index, refs)
          spec.from = M.source(rpc, f.name)
          inputs[#inputs + 1] = spec
        end
        local errors = {}
        for _, e in ipairs(rpc.errors or {}) do errors[#errors + 1] = e.name end
        -- The output's descriptor: the runtime shapes what the handler returns by it.
        local output_type
        if rpc.output then
          output_type = M.type_of(rpc.output, svc.module, index)
          local function note(x)
            if x.kind == "ref" then refs[x.ref] = true elseif x.kind == "list" then note(x.of) end
          end
          note(output_type)
        end
        rpcs[#rpcs + 1] = {
          service = svc.name, name = rpc.name, method = rpc.method, path = rpc.path,
          pattern = M.pattern(rpc.path), handlers = M.handler_file(svc),
          auth = rpc.auth or "required", permission = rpc.permission, roles = rpc.roles,
          owner = rpc.owner and { table = rpc.owner.table, key = rpc.owner.key,
            param = rpc.owner.param, field = rpc.owner.field } or nil,
          paginated = rpc.paginated or nil, output = rpc.output, output_type = output_type,
          body = M.source(rpc, "\0") == "body" or nil,
          inputs = inputs, errors = errors,
        }
      end
    end
  end
  return rpcs, type_table(refs, index)
end

local HEADER = [[
-- Generated by `zever gen` (routes backend) from the .zen schema. Do not edit: changes are
-- lost on the next run. The handlers are yours, in handlers/<service>.lua.
--
--   require("generated.routes").register(app, handlers, {
--     auth = fn(req) -> principal | nil, authorize = fn(principal, permission, req) })
--
-- The runtime is zever.rpc; see docs/zen-backends.md for decoding, validation, auth and
-- error mapping.
]]

local function stub(svc, rpcs)
  local lines = {
    format("-- Handlers of service %s (%s:%d).", svc.name, svc.file or "?", svc.line or 0),
    "-- Generated once by `zever gen`; yours now: it is never overwritten. Each function gets the",
    "-- decoded, validated input and ctx = { app, req, res, principal, page }, and returns the",
    '-- output table, or nil and { code = "not_found", message = "..." } (the code picks the',
    "-- HTTP status; see docs/zen-backends.md).",
    "",
    "local M = {}",
  }
  for _, rpc in ipairs(rpcs) do
    local args = {}
    for i, f in ipairs(rpc.inputs or {}) do args[i] = f.name .. ": " .. (f.type or "?") end
    lines[#lines + 1] = ""
    local ret = rpc.output and (" -> " .. rpc.output) or ""
    local line = format("-- %s %s  %s(%s)%s", rpc.method, rpc.path, rpc.name, concat(args, ", "),
      ret)
    if #line > 100 then
      line = format("-- %s %s  %s(\n--   %s\n-- )%s", rpc.method, rpc.path, rpc.name,
        concat(args, ",\n--   "), ret)
    end
    lines[#lines + 1] = line
    lines[#lines + 1] = format("function M.%s(input, ctx) -- luacheck: no unused args", rpc.name)
    lines[#lines + 1] = format('  return nil, { code = "unimplemented", message = %q }',
      svc.name .. "." .. rpc.name .. " is not written yet")
    lines[#lines + 1] = "end"
  end
  lines[#lines + 1] = ""
  lines[#lines + 1] = "return M"
  return concat(lines, "\n") .. "\n"
end

-- Generates routes.lua and one handlers/<service>.lua stub per service with routes.
function M.generate(ir, opts)
  if type(ir) ~= "table" or ir.kind ~= "ir" then return nil, { code = "invalid",
    message = "routes: expected the resolver's IR" } end
  opts = opts or {}
  local index = M.index(ir)
  local rpcs, types = rpc_table(ir, index)
  -- The sagas (run on app.workflow by zever.saga with the same handlers): only when the schema
  -- has some, so that the routes of a schema without sagas stay as they were.
  local sagas, saga_src, saga_arg = {}, "", ""
  for _, sg in ipairs(ir.sagas or {}) do
    local steps = {}
    for i, st in ipairs(sg.steps) do
      local function ref(r) return r and { service = r.service, rpc = r.rpc } or nil end
      steps[i] = { name = st.name, execute = ref(st.execute), compensate = ref(st.compensate),
        pivot = st.pivot }
    end
    sagas[sg.name] = { name = sg.name, steps = steps }
  end
  if next(sagas) then
    saga_src = "\n\n-- Sagas: zever.saga.register(app.workflow, routes.sagas, handlers); each runs as a\n" ..
      "-- workflow: app.workflow:start(\"Name\", input) (docs/zen.md#sagas).\nlocal SAGAS = " ..
      literal(sagas)
    saga_arg = ", sagas = SAGAS"
  end
  local src = HEADER .. '\nlocal rpc = require "zever.rpc"\n\nlocal RPCS = ' .. literal(rpcs) ..
    "\n\nlocal TYPES = " .. literal(types) .. saga_src ..
    "\n\n-- ...: the name this file was required by (\"generated.routes\"): the handlers sit beside it.\n" ..
    "return rpc.routes({ rpcs = RPCS, types = TYPES" .. saga_arg .. ", module = ... })\n"
  local files = { [opts.routes_file or "routes.lua"] = src }
  for _, svc in ipairs(ir.services or {}) do
    local routed = {}
    for _, rpc in ipairs(svc.rpcs or {}) do
      if rpc.method and rpc.path then routed[#routed + 1] = rpc end
    end
    if #routed > 0 then
      files["handlers/" .. M.handler_file(svc) .. ".lua"] = { content = stub(svc, routed), once = true }
    end
  end
  return files
end

return M
