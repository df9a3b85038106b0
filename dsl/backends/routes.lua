-- dsl.backends.routes: the routes backend. From the resolved IR it writes one Lua module,
-- routes.lua, that registers every RPC with an HTTP route on a zever app, and one handler stub
-- per service, handlers/<service>.lua, written only when missing (the user owns it after that).
--
--   backend.generate(ir, opts) -> { ["routes.lua"] = source,
--                                   ["handlers/task_service.lua"] = { content = stub, once = true } }
--   backend.index(ir)                      -> qualified name -> enum/entity/message node
--   backend.type_of(type_text, module, index) -> a type descriptor (see below)
--
-- The generated module is self-contained: the RPC table (routes, inputs, types, validation,
-- auth, errors) is data, and a fixed runtime (RUNTIME below) decodes, coerces and validates
-- input, runs the auth hooks, calls the handler and maps its error code to an HTTP status with
-- ir.ERROR_STATUS. It needs only zever.json and zever.text at run time, never the compiler.
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
-- Nested tables are indented so diffs of generated files stay readable.
local function literal(v, indent)
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
    if simple then return "{ " .. concat(parts, ", ") .. " }" end
    return "{\n" .. inner .. concat(parts, ",\n" .. inner) .. ",\n" .. indent .. "}"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  if #keys == 0 then return "{}" end
  sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local flat, width = true, #indent
  for i, k in ipairs(keys) do
    local key = is_ident(k) and k or "[" .. literal(k) .. "]"
    parts[i] = key .. " = " .. literal(v[k], inner)
    width = width + #parts[i] + 2
    if parts[i]:find("\n", 1, true) then flat = false end
  end
  if flat and width < 96 then return "{ " .. concat(parts, ", ") .. " }" end
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

-- Types referenced by inputs, closed over message/entity fields: qname -> runtime type.
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
          -- server's), a message's fields are required unless optional or defaulted.
          if node.kind == "entity" then spec.optional = true end
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
        rpcs[#rpcs + 1] = {
          service = svc.name, name = rpc.name, method = rpc.method, path = rpc.path,
          pattern = M.pattern(rpc.path), handlers = M.handler_file(svc),
          auth = rpc.auth or "required", permission = rpc.permission,
          paginated = rpc.paginated or nil, output = rpc.output,
          body = M.source(rpc, "\0") == "body" or nil,
          inputs = inputs, errors = errors,
        }
      end
    end
  end
  return rpcs, type_table(refs, index)
end

-- The runtime of the generated module: everything below the data. Plain text, no templating.
local RUNTIME = [=[
local json = require "zever.json"

local type, pairs, ipairs, tostring, tonumber, next = type, pairs, ipairs, tostring, tonumber, next
local error = error
local format, concat, floor, huge = string.format, table.concat, math.floor, math.huge
local null = json.null

local M = { rpcs = RPCS, types = TYPES, error_status = ERROR_STATUS }

-- checks ------------------------------------------------------------------------------------

local UUID = "^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$"
local DAYS = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }

local function is_date(s)
  local y, m, d = s:match("^(%d%d%d%d)%-(%d%d)%-(%d%d)$")
  if not y then return false end
  y, m, d = tonumber(y), tonumber(m), tonumber(d)
  if m < 1 or m > 12 or d < 1 or d > DAYS[m] then return false end
  return m ~= 2 or d < 29 or (y % 4 == 0 and (y % 100 ~= 0 or y % 400 == 0))
end

-- RFC 3339: 2006-01-02T15:04:05Z, with an optional fraction and a numeric offset.
local function is_timestamp(s)
  local date, h, mi, sec, rest = s:match("^(%d%d%d%d%-%d%d%-%d%d)[Tt ](%d%d):(%d%d):(%d%d)(.*)$")
  if not date or not is_date(date) then return false end
  if tonumber(h) > 23 or tonumber(mi) > 59 or tonumber(sec) > 60 then return false end
  rest = rest:gsub("^%.%d+", "")
  if rest == "Z" or rest == "z" then return true end
  local oh, om = rest:match("^[+-](%d%d):(%d%d)$")
  return oh ~= nil and tonumber(oh) < 24 and tonumber(om) < 60
end

local FORMATS = {
  email = { "must be an email address", function(s) return s:match("^[^%s@]+@[^%s@]+%.[^%s@.]+$") end },
  url = { "must be a URL (scheme://host...)",
    function(s) return s:match("^%a[%w+.-]*://[^%s/?#]+[^%s]*$") end },
  uuid = { "must be a UUID", function(s) return s:match(UUID) end },
}

local function utf8_len(s)
  local _, n = s:gsub("[^\128-\191]", "")
  return n
end

local function plural(n, word)
  return format("%d %s%s", n, word, n == 1 and "" or "s")
end

local function number_text(n)
  if n == floor(n) and n > -2 ^ 53 and n < 2 ^ 53 then return format("%d", n) end
  return format("%.17g", n)
end

-- The @validate rules; the message of the first that fails, or nil.
local function validate(v, rules, kind)
  if type(v) == "string" then
    -- bytes: the length once decoded from base64.
    local n = kind == "bytes" and floor(#v:gsub("=+$", "") * 3 / 4) or utf8_len(v)
    local unit = kind == "bytes" and "byte" or "character"
    if rules.min_len and n < rules.min_len then
      return format("must be at least %s long", plural(rules.min_len, unit))
    end
    if rules.max_len and n > rules.max_len then
      return format("must be at most %s long", plural(rules.max_len, unit))
    end
    local f = rules.format and FORMATS[rules.format]
    if f and not f[2](v) then return f[1] end
  elseif type(v) == "number" then
    if rules.gt and v <= rules.gt then return "must be greater than " .. number_text(rules.gt) end
    if rules.gte and v < rules.gte then return "must be at least " .. number_text(rules.gte) end
    if rules.lt and v >= rules.lt then return "must be less than " .. number_text(rules.lt) end
    if rules.lte and v > rules.lte then return "must be at most " .. number_text(rules.lte) end
  end
  return nil
end

local function closest(word, list)
  local ok, text = pcall(require, "zever.text")
  if not ok or #list == 0 then return "" end
  local best = text.closest(word, list)
  return best and format(" (did you mean %s?)", best) or ""
end

local check -- check(value, t, path, errs, text) -> value (coerced); errs[path] = message on failure

local function is_array(v)
  if type(v) ~= "table" then return false end
  local n = #v
  for k in pairs(v) do
    if type(k) ~= "number" or k < 1 or k > n or k % 1 ~= 0 then return false end
  end
  return true
end

local function is_object(v)
  return type(v) == "table" and v[1] == nil
end

-- Fields of a JSON object against a record's field specs. Unknown keys are rejected.
local function check_fields(obj, fields, prefix, errs, what)
  local out, known, names = {}, {}, {}
  for i, f in ipairs(fields) do
    known[f.name] = true
    names[i] = f.name
  end
  for k in pairs(obj) do
    if type(k) ~= "string" or not known[k] then
      errs[prefix .. tostring(k)] = "is not a field of " .. what .. closest(tostring(k), names)
    end
  end
  for _, f in ipairs(fields) do
    local path = prefix .. f.name
    local v = obj[f.name]
    if v == nil or v == null then
      if f.default ~= nil then
        out[f.name] = f.default
      elseif not f.optional then
        errs[path] = "is required"
      end
    else
      local x = check(v, f.type, path, errs, false)
      if x ~= nil and f.validate then
        local msg = validate(x, f.validate, f.type.kind)
        if msg then errs[path] = msg end
      end
      out[f.name] = x
    end
  end
  return out
end

local INT32 = 2147483647

-- text: v came as text (a path segment or a query value), so numbers and booleans are parsed.
function check(v, t, path, errs, text)
  local k = t.kind
  local function bad(msg)
    errs[path] = msg
    return nil
  end
  if k == "string" or k == "uuid" or k == "timestamp" or k == "date" or k == "bytes" then
    if type(v) ~= "string" then return bad("must be a string") end
    if k == "uuid" and not v:match(UUID) then return bad("must be a UUID") end
    if k == "timestamp" and not is_timestamp(v) then
      return bad("must be an RFC 3339 timestamp (2006-01-02T15:04:05Z)")
    end
    if k == "date" and not is_date(v) then return bad("must be a date (2006-01-02)") end
    if k == "bytes" and not v:match("^[%w+/_-]*=?=?$") then return bad("must be base64 text") end
    return v
  elseif k == "int32" or k == "int64" then
    local n = v
    if type(v) == "string" and (text or k == "int64") then n = tonumber(v) end
    if type(n) ~= "number" or n ~= n or n % 1 ~= 0 or n == huge or n == -huge then
      return bad("must be an integer")
    end
    if k == "int32" and (n > INT32 or n < -INT32 - 1) then
      return bad("must be an integer from -2147483648 to 2147483647")
    end
    if k == "int64" and (n >= 2 ^ 53 or n <= -2 ^ 53) then
      return bad("must be an integer of at most 53 bits (a Lua number)")
    end
    return n
  elseif k == "float32" or k == "float64" then
    local n = v
    if text and type(v) == "string" then n = tonumber(v) end
    if type(n) ~= "number" or n ~= n or n == huge or n == -huge then return bad("must be a number") end
    return n
  elseif k == "bool" then
    if text and type(v) == "string" then
      if v == "true" or v == "1" then return true end
      if v == "false" or v == "0" then return false end
    end
    if type(v) ~= "boolean" then return bad("must be true or false") end
    return v
  elseif k == "json" or k == "any" then
    if text and type(v) == "string" then
      local x = json.decode(v)
      if x == nil then return bad("must be JSON text") end
      return x
    end
    return v
  elseif k == "list" then
    if text and type(v) == "string" then v = { v } end
    if not is_array(v) then return bad("must be a list") end
    local out = {}
    for i, x in ipairs(v) do
      local y = check(x, t.of, path .. "[" .. i .. "]", errs, text)
      if y == nil then return nil end
      out[i] = y
    end
    return out
  elseif k == "ref" then
    local ty = TYPES[t.ref]
    if ty.kind == "enum" then
      for _, name in ipairs(ty.values) do
        if v == name then return v end
      end
      return bad("must be one of " .. concat(ty.values, ", "))
    end
    if text and type(v) == "string" then v = json.decode(v) end
    if not is_object(v) then return bad("must be an object (" .. ty.name .. ")") end
    return check_fields(v, ty.fields, path .. ".", errs, ty.name)
  end
  return v
end

-- decoding a request --------------------------------------------------------------------------

local function invalid(errs, message)
  local n = 0
  for _ in pairs(errs) do n = n + 1 end
  return 400, { error = "invalid_argument",
    message = message or format("the request has %s", plural(n, "invalid field")), fields = errs }
end

local PAGE = { page_size = true, page_token = true }

-- The typed input of rpc from req, or nil, status, body.
local function decode(rpc, req, opts)
  local errs, raw, as_text = {}, {}, {}
  local body = {}
  if rpc.body and req.body ~= nil and req.body:match("%S") then
    local v = json.decode(req.body)
    if not is_object(v) then
      return nil, invalid(errs, "the request body must be a JSON object")
    end
    body = v
  end
  local query = req.query or {}
  local page = {}
  if rpc.paginated then
    for name in pairs(PAGE) do
      local v = query[name]
      if v == nil and body[name] ~= nil and body[name] ~= null then v = body[name] end
      body[name] = nil
      if v ~= nil then page[name] = v end
    end
  end
  local known = {}
  for _, f in ipairs(rpc.inputs) do
    known[f.name] = true
    if f.from == "path" then
      raw[f.name], as_text[f.name] = req.params[f.name], true
    elseif f.from == "query" then
      raw[f.name], as_text[f.name] = query[f.name], true
    else
      raw[f.name] = body[f.name]
    end
  end
  local names = {}
  for i, f in ipairs(rpc.inputs) do names[i] = f.name end
  for k in pairs(body) do
    -- A path parameter in the body is ignored: the path wins.
    if type(k) ~= "string" or not known[k] then
      errs[tostring(k)] = "is not a field of " .. rpc.name .. closest(tostring(k), names)
    end
  end
  local input = {}
  for _, f in ipairs(rpc.inputs) do
    local v = raw[f.name]
    if v == nil or v == null then
      if f.default ~= nil then
        input[f.name] = f.default
      elseif not f.optional then
        errs[f.name] = "is required"
      end
    else
      local x = check(v, f.type, f.name, errs, as_text[f.name])
      if x ~= nil and f.validate then
        local msg = validate(x, f.validate, f.type.kind)
        if msg then errs[f.name] = msg end
      end
      input[f.name] = x
    end
  end
  if rpc.paginated then
    local max = opts.max_page_size or 1000
    local size = page.page_size and check(page.page_size, { kind = "int32" }, "page_size", errs, true)
    if size and size < 0 then errs.page_size = "must be at least 0" end
    if page.page_token ~= nil and type(page.page_token) ~= "string" then
      errs.page_token = "must be a string"
    end
    if (size or 0) == 0 then size = opts.page_size or 50 end
    if size > max then size = max end
    page = { size = size, token = type(page.page_token) == "string" and page.page_token or nil }
  else
    page = nil
  end
  if next(errs) then return nil, invalid(errs) end
  return input, page
end

-- serving -----------------------------------------------------------------------------------

local function failure(code, message, fields)
  local status = ERROR_STATUS[code]
  local body = { error = code, message = message, fields = fields }
  if not status then
    status, body.error = 500, "unknown"
  end
  return status, body
end

local function serve(app, rpc, fn, opts, req, res)
  -- app may be a group: ctx.app is the app itself.
  local ctx = { app = rawget(app, "app") or app, req = req, res = res, service = rpc.service,
    rpc = rpc.name }
  if rpc.auth == "required" then
    local principal = opts.auth(req, ctx)
    if principal == nil or principal == false then
      return failure("unauthenticated", "authentication required")
    end
    ctx.principal = principal
    if rpc.permission and not opts.authorize(principal, rpc.permission, req, ctx) then
      return failure("permission_denied", "permission " .. rpc.permission .. " is required")
    end
  elseif opts.auth then
    -- auth: none still offers the principal when there is one; nil is fine.
    local principal = opts.auth(req, ctx)
    if principal then ctx.principal = principal end
  end
  local input, a, b = decode(rpc, req, opts)
  if not input then return a, b end
  ctx.page = a
  local out, err = fn(input, ctx)
  if out == res then return res end
  if err ~= nil then
    if type(err) ~= "table" or type(err.code) ~= "string" then return failure("internal") end
    return failure(err.code, err.message, err.fields)
  end
  if not rpc.output then return 204, "" end
  if out == nil then
    error(format("handler %s.%s returned nothing and no error", rpc.service, rpc.name), 0)
  end
  return 200, out
end

-- Registers every RPC on app (a zever app or group). handlers maps a service name to a table of
-- rpc name -> function(input, ctx) (default: require "handlers.<service>" per service).
-- opts.auth(req, ctx) -> principal | nil is required when an rpc says auth: required;
-- opts.authorize(principal, permission, req, ctx) -> bool when one has permission:.
-- opts.page_size (50) and opts.max_page_size (1000) bound paginated rpcs.
function M.register(app, handlers, opts)
  if type(app) ~= "table" or type(app.route) ~= "function" then
    error("routes.register: app must be a zever app or group", 2)
  end
  if handlers ~= nil and type(handlers) ~= "table" then
    error("routes.register: handlers must be a table of services", 2)
  end
  if opts ~= nil and type(opts) ~= "table" then error("routes.register: opts must be a table", 2) end
  opts = opts or {}
  for _, rpc in ipairs(RPCS) do
    local svc
    if handlers then svc = handlers[rpc.service] else svc = require("handlers." .. rpc.handlers) end
    local fn = type(svc) == "table" and svc[rpc.name]
    if type(fn) ~= "function" then
      error(format("routes.register: no handler %s.%s (handlers/%s.lua)", rpc.service, rpc.name,
        rpc.handlers), 2)
    end
    if rpc.auth == "required" and type(opts.auth) ~= "function" then
      error(format("routes.register: %s.%s has auth: required: pass opts.auth(req)", rpc.service,
        rpc.name), 2)
    end
    if rpc.permission and type(opts.authorize) ~= "function" then
      error(format("routes.register: %s.%s needs permission %q: pass opts.authorize", rpc.service,
        rpc.name, rpc.permission), 2)
    end
    app:route(rpc.method, rpc.service .. "." .. rpc.name, rpc.pattern, function(req, res)
      return serve(app, rpc, fn, opts, req, res)
    end)
  end
  return app
end

return M
]=]

local HEADER = [[
-- Generated by `zever gen` (routes backend) from the .zen schema. Do not edit: changes are
-- lost on the next run. The handlers are yours, in handlers/<service>.lua.
--
--   require("routes").register(app, handlers, { auth = fn(req) -> principal | nil,
--                                                authorize = fn(principal, permission, req) })
--
-- See docs/zen-backends.md for decoding, validation, auth and error mapping.
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
  local status = {}
  for code, s in pairs(ir_mod.ERROR_STATUS) do status[code] = s end
  local src = HEADER .. "\nlocal RPCS = " .. literal(rpcs) .. "\n\nlocal TYPES = " ..
    literal(types) .. "\n\nlocal ERROR_STATUS = " .. literal(status) .. "\n\n" .. RUNTIME
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
