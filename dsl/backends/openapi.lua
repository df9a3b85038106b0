-- dsl.backends.openapi: the openapi backend. From the resolved IR it writes one OpenAPI 3.1
-- document, openapi.json: a path per RPC with http:, its parameters (path, query), its request
-- body (JSON inputs), its responses (the output, and an error response per status its errors:,
-- validation and auth can give), and components: a JSON Schema per entity, message and enum,
-- the error body, and a bearer security scheme when any RPC says auth: required.
--
--   backend.generate(ir, opts) -> { ["openapi.json"] = text }
--       opts.title ("zever API"), opts.version ("0.1.0"): the info object.
--   backend.encode(value) -> JSON text, two-space indented, keys in the order they were set
--
-- The JSON is written by this file's own encoder so that keys keep a readable, fixed order
-- (openapi, info, tags, paths, components; type before format before bounds): objects are
-- built with obj():set(k, v) and keep insertion order, Lua sequences are arrays. The same IR
-- gives the same bytes; this module must not read files, print or read the clock.

local routes = require "dsl.backends.routes"

local concat, sort = table.concat, table.sort
local format = string.format
local type, pairs, ipairs, tostring, setmetatable, getmetatable = type, pairs, ipairs, tostring,
  setmetatable, getmetatable
local floor = math.floor

local M = { name = "openapi" }

-- ordered JSON ----------------------------------------------------------------------------------

local Obj = {}
Obj.__index = Obj

-- An empty JSON object whose keys keep the order of set().
local function obj()
  return setmetatable({ keys = {}, vals = {} }, Obj)
end
M.obj = obj

-- Sets k to v (nil leaves the object as it is); returns the object.
function Obj:set(k, v)
  if v == nil then return self end
  if self.vals[k] == nil then self.keys[#self.keys + 1] = k end
  self.vals[k] = v
  return self
end

function Obj:get(k)
  return self.vals[k]
end

function Obj:empty()
  return #self.keys == 0
end

local ESC = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n",
  ["\r"] = "\\r", ["\t"] = "\\t" }

local function string_json(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return ESC[c] or format("\\u%04x", c:byte())
  end) .. '"'
end

-- The shortest %.Ng that reads back as the same number.
local function number_json(n)
  if n ~= n or n == math.huge or n == -math.huge then error("openapi: no JSON for " .. tostring(n)) end
  if n == floor(n) and n > -2 ^ 53 and n < 2 ^ 53 then return format("%d", n) end
  for digits = 15, 17 do
    local s = format("%." .. digits .. "g", n)
    if tonumber(s) == n then return s end
  end
  return format("%.17g", n)
end

local function encode(v, indent, out)
  local t = type(v)
  if t == "string" then
    out[#out + 1] = string_json(v)
  elseif t == "number" then
    out[#out + 1] = number_json(v)
  elseif t == "boolean" then
    out[#out + 1] = tostring(v)
  elseif getmetatable(v) == Obj then
    if #v.keys == 0 then
      out[#out + 1] = "{}"
      return
    end
    local inner = indent .. "  "
    out[#out + 1] = "{\n"
    for i, k in ipairs(v.keys) do
      out[#out + 1] = inner .. string_json(k) .. ": "
      encode(v.vals[k], inner, out)
      out[#out + 1] = i < #v.keys and ",\n" or "\n"
    end
    out[#out + 1] = indent .. "}"
  elseif t == "table" then
    if #v == 0 then
      out[#out + 1] = "[]"
      return
    end
    local scalars = true
    for _, x in ipairs(v) do
      if type(x) == "table" then scalars = false end
    end
    if scalars then
      local parts = {}
      for i, x in ipairs(v) do
        local o = {}
        encode(x, "", o)
        parts[i] = concat(o)
      end
      out[#out + 1] = "[" .. concat(parts, ", ") .. "]"
      return
    end
    local inner = indent .. "  "
    out[#out + 1] = "[\n"
    for i, x in ipairs(v) do
      out[#out + 1] = inner
      encode(x, inner, out)
      out[#out + 1] = i < #v and ",\n" or "\n"
    end
    out[#out + 1] = indent .. "]"
  else
    error("openapi: no JSON for a " .. t)
  end
end

function M.encode(v)
  local out = {}
  encode(v, "", out)
  return concat(out) .. "\n"
end

-- schemas ---------------------------------------------------------------------------------------

local SCALARS = {
  uuid = { "string", "uuid" }, string = { "string" }, bool = { "boolean" },
  bytes = { "string", nil, "base64" }, json = {}, int32 = { "integer", "int32" },
  int64 = { "integer", "int64" }, float32 = { "number", "float" }, float64 = { "number", "double" },
  timestamp = { "string", "date-time" }, date = { "string", "date" },
}

local FORMATS = { email = "email", url = "uri", uuid = "uuid" }

-- Component names: the plain name, or module.Name when two modules declare the same name.
local function component_names(ir)
  local count, names = {}, {}
  for _, list in ipairs({ ir.entities or {}, ir.messages or {}, ir.enums or {} }) do
    for _, n in ipairs(list) do count[n.name] = (count[n.name] or 0) + 1 end
  end
  for _, list in ipairs({ ir.entities or {}, ir.messages or {}, ir.enums or {} }) do
    for _, n in ipairs(list) do
      names[n.module .. "." .. n.name] = count[n.name] > 1 and n.module .. "." .. n.name or n.name
    end
  end
  local err = count.Error and "zever.Error" or "Error"
  return names, err
end

local function ref(name)
  return obj():set("$ref", "#/components/schemas/" .. name)
end

-- The JSON Schema of a type descriptor (dsl.backends.routes.type_of).
local function schema_of(t, names)
  local s
  if t.kind == "list" then
    s = obj():set("type", "array"):set("items", schema_of(t.of, names))
  elseif t.kind == "ref" then
    s = ref(names[t.ref])
  elseif t.kind == "any" then
    s = obj():set("description", "unresolved type " .. (t.text or "?"))
  else
    local sc = SCALARS[t.kind]
    s = obj():set("type", sc[1]):set("format", sc[2]):set("contentEncoding", sc[3])
  end
  if t.optional then
    local ty = s:get("type")
    if ty then
      s.vals.type = { ty, "null" }
    elseif s:get("$ref") then
      s = obj():set("anyOf", { s, obj():set("type", "null") })
    end
  end
  return s
end

-- The schema of a field or parameter: its type plus @validate bounds, default and doc.
-- param: a path or query parameter, which is absent rather than null (no "null" in its type).
local function field_schema(f, mod, index, names, param)
  local t = routes.type_of(f.type, mod, index)
  local optional = t.optional
  if param then t.optional = nil end
  local s = schema_of(t, names)
  t.optional = optional
  -- A $ref takes no sibling bounds in practice: put them on the referencing schema all the same,
  -- they apply to the value (JSON Schema 2020-12 allows siblings of $ref).
  local v = f.validate or {}
  if t.kind == "string" or t.kind == "uuid" then
    s:set("format", FORMATS[v.format])
    s:set("minLength", v.min_len):set("maxLength", v.max_len)
  elseif t.kind == "bytes" and (v.min_len or v.max_len) then
    -- minLength/maxLength would bound the base64 text; the rule is on the decoded bytes.
    local parts = {}
    if v.min_len then parts[#parts + 1] = format("at least %d", v.min_len) end
    if v.max_len then parts[#parts + 1] = format("at most %d", v.max_len) end
    s:set("description", concat(parts, " and ") .. " bytes once decoded")
  end
  s:set("minimum", v.gte):set("exclusiveMinimum", v.gt)
  s:set("maximum", v.lte):set("exclusiveMaximum", v.lt)
  if f.default ~= nil then
    s:set("default", f.default)
  elseif f.default_name ~= nil and t.kind == "ref" and t.is == "enum" then
    s:set("default", f.default_name)
  end
  if f.doc then
    local extra = s:get("description")
    s.vals.description = nil
    for i, k in ipairs(s.keys) do
      if k == "description" then table.remove(s.keys, i) break end
    end
    s:set("description", extra and (f.doc .. " (" .. extra .. ")") or f.doc)
  end
  return s, t
end

local function record_schema(node, index, names)
  local props, required = obj(), {}
  local fields = node.kind == "entity" and node.columns or node.fields or {}
  for _, f in ipairs(fields) do
    local s, t = field_schema(f, node.module, index, names)
    props:set(f.name, s)
    -- Entities: every non-null column is in the value; messages: unless it has a default.
    if not t.optional and (node.kind == "entity" or (f.default == nil and f.default_name == nil)) then
      required[#required + 1] = f.name
    end
  end
  return obj():set("type", "object"):set("description", node.doc):set("properties", props)
    :set("required", #required > 0 and required or nil)
end

local function error_schema()
  return obj():set("type", "object")
    :set("description", "The body of every error response: a gRPC-style code, a message, and for "
      .. "invalid_argument a message per invalid field.")
    :set("properties", obj()
      :set("error", obj():set("type", "string"):set("examples", { "not_found" }))
      :set("message", obj():set("type", "string"))
      :set("fields", obj():set("type", "object")
        :set("additionalProperties", obj():set("type", "string"))))
    :set("required", { "error" })
end

-- operations ------------------------------------------------------------------------------------

local METHOD_ORDER = { GET = 1, PUT = 2, POST = 3, DELETE = 4, PATCH = 5 }

local function first_line(doc)
  return doc and doc:match("^[^\n]*") or nil
end

local function json_content(schema)
  return obj():set("application/json", obj():set("schema", schema))
end

-- The status -> description rows of an rpc's error responses.
local function error_rows(rpc, inputs)
  local rows = {}
  local function add(status, text)
    local key = tostring(status)
    rows[key] = rows[key] or {}
    local list = rows[key]
    for _, x in ipairs(list) do
      if x == text then return end
    end
    list[#list + 1] = text
  end
  if #inputs > 0 or rpc.paginated then add(400, "invalid_argument: the input is not valid") end
  if (rpc.auth or "required") == "required" then add(401, "unauthenticated") end
  if rpc.permission then add(403, "permission_denied: needs " .. rpc.permission) end
  for _, e in ipairs(rpc.errors or {}) do
    add(e.status, e.message and (e.name .. ": " .. e.message) or e.name)
  end
  return rows
end

local function operation(svc, rpc, index, names, err_name)
  local qual = svc.name .. "." .. rpc.name
  local op = obj():set("operationId", svc.name .. "_" .. rpc.name)
    :set("summary", first_line(rpc.doc) or qual)
    :set("description", rpc.doc)
    :set("tags", { svc.name })
  if (rpc.auth or "required") == "required" then
    op:set("security", { obj():set("bearerAuth", {}) })
  end
  local params, body_props, body_required = {}, obj(), {}
  for _, f in ipairs(rpc.inputs or {}) do
    local from = routes.source(rpc, f.name)
    local s, t = field_schema(f, svc.module, index, names, from ~= "body")
    local required = not t.optional and f.default == nil and f.default_name == nil
    if from == "body" then
      body_props:set(f.name, s)
      if required then body_required[#body_required + 1] = f.name end
    else
      local p = obj():set("name", f.name):set("in", from)
      p:set("description", f.doc)
      p:set("required", from == "path" or required)
      local inner = t.kind == "list" and t.of or t
      if t.kind == "list" and from == "query" then
        p.vals.name = f.name .. "[]"
        p:set("schema", s)
      elseif inner.kind == "ref" and inner.is ~= "enum" or t.kind == "json" or t.kind == "any" then
        -- Objects and free JSON travel as JSON text in a query parameter.
        p:set("content", json_content(s))
      else
        p:set("schema", s)
      end
      params[#params + 1] = p
    end
  end
  if rpc.paginated then
    params[#params + 1] = obj():set("name", "page_size"):set("in", "query")
      :set("description", "Items per page; 0 or absent: the server's default, capped at its maximum.")
      :set("required", false)
      :set("schema", obj():set("type", "integer"):set("format", "int32"):set("minimum", 0))
    params[#params + 1] = obj():set("name", "page_token"):set("in", "query")
      :set("description", "The next_page_token of the previous page.")
      :set("required", false)
      :set("schema", obj():set("type", "string"))
  end
  if #params > 0 then op:set("parameters", params) end
  if not body_props:empty() then
    local schema = obj():set("type", "object"):set("properties", body_props)
      :set("required", #body_required > 0 and body_required or nil)
      :set("additionalProperties", false)
    op:set("requestBody", obj():set("required", #body_required > 0)
      :set("content", json_content(schema)))
  end
  local responses = obj()
  if rpc.output then
    local out = schema_of(routes.type_of(rpc.output, svc.module, index), names)
    if rpc.paginated then
      out = obj():set("type", "object")
        :set("properties", obj()
          :set("items", obj():set("type", "array"):set("items", out))
          :set("next_page_token", obj():set("type", "string")
            :set("description", "Empty or absent on the last page.")))
        :set("required", { "items" })
    end
    responses:set("200", obj():set("description", rpc.output):set("content", json_content(out)))
    -- A handler of a POST may answer 201 Created with the same body (ctx.status = 201).
    if rpc.method == "POST" then
      responses:set("201", obj():set("description", rpc.output .. " (created)")
        :set("content", json_content(out)))
    end
  else
    responses:set("204", obj():set("description", "No content"))
  end
  local rows = error_rows(rpc, rpc.inputs or {})
  local statuses = {}
  for k in pairs(rows) do statuses[#statuses + 1] = k end
  sort(statuses, function(a, b) return tonumber(a) < tonumber(b) end)
  for _, k in ipairs(statuses) do
    responses:set(k, obj():set("description", concat(rows[k], "; "))
      :set("content", json_content(ref(err_name))))
  end
  responses:set("default", obj():set("description", "internal: an unexpected error")
    :set("content", json_content(ref(err_name))))
  op:set("responses", responses)
  return op
end

-- generate --------------------------------------------------------------------------------------

function M.document(ir, opts)
  opts = opts or {}
  local index = routes.index(ir)
  local names, err_name = component_names(ir)
  local doc = obj():set("openapi", "3.1.0")
    :set("info", obj():set("title", opts.title or "zever API"):set("version", opts.version or "0.1.0"))
  -- Operations by path, each path's operations in GET PUT POST DELETE PATCH order.
  local by_path, paths_list, tags, secured = {}, {}, {}, false
  for _, svc in ipairs(ir.services or {}) do
    local routed = false
    for _, rpc in ipairs(svc.rpcs or {}) do
      if rpc.method and rpc.path then
        routed = true
        if not by_path[rpc.path] then
          by_path[rpc.path] = {}
          paths_list[#paths_list + 1] = rpc.path
        end
        local ops = by_path[rpc.path]
        ops[#ops + 1] = { rpc.method, operation(svc, rpc, index, names, err_name) }
        if (rpc.auth or "required") == "required" then secured = true end
      end
    end
    if routed then
      tags[#tags + 1] = obj():set("name", svc.name):set("description", svc.doc)
    end
  end
  sort(tags, function(a, b) return a:get("name") < b:get("name") end)
  sort(paths_list)
  local paths = obj()
  for _, p in ipairs(paths_list) do
    local ops = by_path[p]
    sort(ops, function(a, b) return METHOD_ORDER[a[1]] < METHOD_ORDER[b[1]] end)
    local item = obj()
    for _, o in ipairs(ops) do item:set(o[1]:lower(), o[2]) end
    paths:set(p, item)
  end
  if #tags > 0 then doc:set("tags", tags) end
  doc:set("paths", paths)
  -- Components: entities, messages and enums by component name, then the error body.
  local comps = {}
  for _, n in ipairs(ir.entities or {}) do comps[#comps + 1] = n end
  for _, n in ipairs(ir.messages or {}) do comps[#comps + 1] = n end
  for _, n in ipairs(ir.enums or {}) do comps[#comps + 1] = n end
  local function cname(n) return names[n.module .. "." .. n.name] end
  sort(comps, function(a, b) return cname(a) < cname(b) end)
  local schemas = obj()
  for _, n in ipairs(comps) do
    if n.kind == "enum" then
      local values = {}
      for i, v in ipairs(n.values or {}) do values[i] = v.name end
      schemas:set(cname(n), obj():set("type", "string"):set("description", n.doc)
        :set("enum", values))
    else
      schemas:set(cname(n), record_schema(n, index, names))
    end
  end
  schemas:set(err_name, error_schema())
  local components = obj():set("schemas", schemas)
  if secured then
    components:set("securitySchemes", obj():set("bearerAuth", obj():set("type", "http")
      :set("scheme", "bearer")
      :set("description", "The credential the app's auth hook reads (routes.register opts.auth).")))
  end
  doc:set("components", components)
  return doc
end

function M.generate(ir, opts)
  if type(ir) ~= "table" or ir.kind ~= "ir" then
    return nil, { code = "invalid", message = "openapi: expected the resolver's IR" }
  end
  opts = opts or {}
  return { [opts.openapi_file or "openapi.json"] = M.encode(M.document(ir, opts)) }
end

return M
