-- zever.rpc: the runtime of the modules the .zen compiler generates for services and jobs
-- (dsl/backends/routes.lua writes routes.lua, dsl/backends/jobs.lua writes jobs.lua). A generated
-- file holds only its schema's data and hands it to this module, as protobuf-generated code
-- calls its runtime library:
--
--   rpc.routes{ rpcs =, types =[, error_status =, module =] } -> { rpcs, types, error_status, register }
--     register(app, handlers, opts) -> app          (docs/zen-backends.md, "routes")
--   rpc.jobs{ jobs =, schedules = }               -> { jobs, schedules, register }
--     register(app, handlers) -> app                (docs/zen-backends.md, "jobs")
--   rpc.coerce(v, t[, { text =, types =, name = }]) -> value | nil, err   (err.fields: path -> msg)
--   rpc.validate(v, rules[, kind])                -> message of the first failing rule | nil
--
-- A type descriptor t is { kind = "string" | "uuid" | "int32" | ... }, { kind = "list", of = T },
-- { kind = "ref", ref = "mod.Name" } (an entry of types: { kind = "enum", name, values } or
-- { kind = "record", name, fields }) or { kind = "any" }. A field spec is { name, type,
-- optional, default, validate, from = "path" | "query" | "body" }.
--
-- A route decodes the request (path, query or JSON body), coerces text values, validates every
-- field at once (400 with a message per field), runs the auth hooks first, calls the handler
-- and maps its error code to an HTTP status with error_status. It must not know the compiler:
-- it needs zever.json, and zever.text for did-you-mean when the host has it.

local json = require "zever.json"

local type, pairs, ipairs, tostring, tonumber, next = type, pairs, ipairs, tostring, tonumber, next
local error, pcall, require, rawget = error, pcall, require, rawget
local format, concat, floor, huge = string.format, table.concat, math.floor, math.huge
local null = json.null

local M = {}

-- The gRPC-style error codes a handler returns and the HTTP status of each (the grpc-gateway
-- mapping). The schema compiler accepts exactly these codes in errors: (dsl/ir.lua).
M.ERROR_STATUS = {
  cancelled = 499, unknown = 500, invalid_argument = 400, deadline_exceeded = 504,
  not_found = 404, already_exists = 409, permission_denied = 403, resource_exhausted = 429,
  failed_precondition = 400, aborted = 409, out_of_range = 400, unimplemented = 501,
  internal = 500, unavailable = 503, data_loss = 500, unauthenticated = 401,
}

-- checks ----------------------------------------------------------------------------------------

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
  email = { "must be an email address",
    function(s) return s:match("^[^%s@]+@[^%s@]+%.[^%s@.]+$") end },
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

-- The @validate rules against a coerced value; the message of the first that fails, or nil.
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

-- " (did you mean x?)" for the name of list closest to word, or "" (also without zever.text).
local function closest(word, list)
  local ok, text = pcall(require, "zever.text")
  if not ok or #list == 0 then return "" end
  local best = text.closest(word, list)
  return best and format(" (did you mean %s?)", best) or ""
end

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

local check -- check(v, t, path, errs, text, types) -> v coerced | nil; errs[path] = msg on failure

-- The value of field spec f given raw value v (nil or null: absent) into out[f.name].
local function field(out, f, v, path, errs, text, types)
  if v == nil or v == null then
    if f.default ~= nil then
      out[f.name] = f.default
    elseif not f.optional then
      errs[path] = "is required"
    end
    return
  end
  local x = check(v, f.type, path, errs, text, types)
  if x ~= nil and f.validate then
    local msg = validate(x, f.validate, f.type.kind)
    if msg then errs[path] = msg end
  end
  out[f.name] = x
end

-- Fields of a JSON object against a record's field specs. Unknown keys are rejected.
local function check_fields(obj, fields, prefix, errs, what, types)
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
  for _, f in ipairs(fields) do field(out, f, obj[f.name], prefix .. f.name, errs, false, types) end
  return out
end

local INT32 = 2147483647

-- text: v came as text (a path segment or a query value), so numbers and booleans are parsed.
function check(v, t, path, errs, text, types)
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
    -- zever.json decodes integers beyond 2^53 as exact int64_t cdata.
    if k == "int64" and type(v) == "cdata" and tonumber(v) % 1 == 0 then return v end
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
    if type(n) ~= "number" or n ~= n or n == huge or n == -huge then
      return bad("must be a number")
    end
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
      local y = check(x, t.of, path .. "[" .. i .. "]", errs, text, types)
      if y == nil then return nil end
      out[i] = y
    end
    return out
  elseif k == "ref" then
    local ty = types[t.ref]
    if ty.kind == "enum" then
      for _, name in ipairs(ty.values) do
        if v == name then return v end
      end
      return bad("must be one of " .. concat(ty.values, ", "))
    end
    if text and type(v) == "string" then v = json.decode(v) end
    if not is_object(v) then return bad("must be an object (" .. ty.name .. ")") end
    return check_fields(v, ty.fields, path .. ".", errs, ty.name, types)
  end
  return v
end

-- Why t is not a usable type descriptor with types (a ref missing from it), or nil.
local function type_error(t, types, seen)
  if type(t) ~= "table" or type(t.kind) ~= "string" then
    return tostring(t) .. " is not a type descriptor ({ kind = ... })"
  end
  if t.kind == "list" then return type_error(t.of, types, seen) end
  if t.kind ~= "ref" or seen[t.ref] then return nil end
  local ty = types[t.ref]
  seen[t.ref] = true
  if type(ty) ~= "table" or (ty.kind ~= "enum" and ty.kind ~= "record") then
    return "type " .. tostring(t.ref) .. " is not in types"
  end
  for _, f in ipairs(ty.kind == "record" and ty.fields or {}) do
    local msg = type_error(f.type, types, seen)
    if msg then return msg end
  end
  return nil
end

-- Coerces (text = true: from a path or query string) and type-checks v against descriptor t;
-- records are checked field by field, with their @validate rules. Returns the value, or nil and
-- { code = "invalid", message, fields = { [path] = message } } (path: opts.name, "value").
function M.coerce(v, t, opts)
  if opts ~= nil and type(opts) ~= "table" then error("rpc.coerce: opts must be a table", 2) end
  opts = opts or {}
  local types = opts.types or {}
  if type(types) ~= "table" then error("rpc.coerce: opts.types must be a table", 2) end
  local bad = type_error(t, types, {})
  if bad then error("rpc.coerce: " .. bad, 2) end
  local errs, path = {}, opts.name or "value"
  local x = check(v, t, path, errs, opts.text and true or false, types)
  if next(errs) == nil then return x end
  local n, first = 0, nil
  for k, msg in pairs(errs) do
    n = n + 1
    first = k .. " " .. msg
  end
  return nil, { code = "invalid", message = n == 1 and first or plural(n, "invalid field"),
    fields = errs }
end

-- The message of the first @validate rule (min_len max_len format gt gte lt lte) v breaks, or
-- nil. kind "bytes" counts the bytes a base64 string decodes to; strings count characters.
function M.validate(v, rules, kind)
  if type(rules) ~= "table" then error("rpc.validate: rules must be a table", 2) end
  if rules.format ~= nil and not FORMATS[rules.format] then
    error(format("rpc.validate: unknown format %q (email, url, uuid)", tostring(rules.format)), 2)
  end
  return validate(v, rules, kind)
end

-- decoding a request ----------------------------------------------------------------------------

local function invalid(errs, message)
  local n = 0
  for _ in pairs(errs) do n = n + 1 end
  return 400, { error = "invalid_argument",
    message = message or format("the request has %s", plural(n, "invalid field")), fields = errs }
end

local PAGE = { page_size = true, page_token = true }

-- The typed input of rpc from req, and its page, or nil, status, body.
local function decode(rpc, req, opts, types)
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
  local known, names = {}, {}
  for i, f in ipairs(rpc.inputs) do
    known[f.name], names[i] = true, f.name
    if f.from == "path" then
      raw[f.name], as_text[f.name] = req.params[f.name], true
    elseif f.from == "query" then
      raw[f.name], as_text[f.name] = query[f.name], true
    else
      raw[f.name] = body[f.name]
    end
  end
  for k in pairs(body) do
    -- A path parameter in the body is ignored: the path wins.
    if type(k) ~= "string" or not known[k] then
      errs[tostring(k)] = "is not a field of " .. rpc.name .. closest(tostring(k), names)
    end
  end
  local input = {}
  for _, f in ipairs(rpc.inputs) do
    field(input, f, raw[f.name], f.name, errs, as_text[f.name], types)
  end
  if rpc.paginated then
    local max = opts.max_page_size or 1000
    local size = page.page_size and
      check(page.page_size, { kind = "int32" }, "page_size", errs, true, types)
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

-- shaping an output ------------------------------------------------------------------------------

local function shape_error(path, msg)
  error(format("output %s %s", path, msg), 0)
end

-- "2026-12-01 14:00:03" (SQLite's CURRENT_TIMESTAMP, UTC) and other accepted forms as RFC 3339
-- with a "T" and an offset ("Z" when it had none); a number as Unix seconds.
local function rfc3339(v, path)
  if type(v) == "number" then
    if v ~= v or v == huge or v == -huge then shape_error(path, "is not a time") end
    return os.date("!%Y-%m-%dT%H:%M:%SZ", floor(v))
  end
  if type(v) ~= "string" then shape_error(path, "must be a timestamp, got a " .. type(v)) end
  local date, time, rest = v:match("^(%d%d%d%d%-%d%d%-%d%d)[Tt ](%d%d:%d%d:%d%d[%.%d]*)(.*)$")
  if not date then shape_error(path, "is not a timestamp: " .. v) end
  if rest == "" then rest = "Z" elseif rest == "z" then rest = "Z" end
  local s = date .. "T" .. time .. rest
  if not is_timestamp(s) then shape_error(path, "is not a timestamp: " .. v) end
  return s
end

local shape

local function shape_record(v, ty, path, types, entity)
  if type(v) ~= "table" then shape_error(path, "must be an object (" .. ty.name .. ")") end
  local out = json.object()
  for _, f in ipairs(ty.fields) do
    local x = v[f.name]
    local p = path .. "." .. f.name
    if x == nil or x == null then
      if f.default ~= nil then
        out[f.name] = f.default
      elseif entity and not f.nullable or not entity and not f.optional then
        shape_error(p, "is missing")
      elseif x == null then
        out[f.name] = null
      end
    else
      out[f.name] = shape(x, f.type, p, types)
    end
  end
  return out
end

-- The JSON value of v as declared by t: booleans from 0/1, RFC 3339 timestamps, int64 cdata as
-- integers, records with their declared fields only, lists as arrays. Raises (a 500, logged)
-- when v cannot be that type: the handler broke the contract its schema states.
function shape(v, t, path, types)
  local k = t.kind
  if k == "bool" then
    if v == 1 or v == "1" or v == "true" then return true end
    if v == 0 or v == "0" or v == "false" then return false end
    if type(v) ~= "boolean" then shape_error(path, "must be true or false") end
    return v
  elseif k == "timestamp" then
    return rfc3339(v, path)
  elseif k == "date" then
    if type(v) ~= "string" or not is_date(v:sub(1, 10)) then shape_error(path, "must be a date") end
    return v:sub(1, 10)
  elseif k == "int32" or k == "int64" then
    if type(v) == "string" then v = tonumber(v) end
    if type(v) == "cdata" then return v end
    if type(v) ~= "number" or v % 1 ~= 0 then shape_error(path, "must be an integer") end
    return v
  elseif k == "float32" or k == "float64" then
    if type(v) == "cdata" or type(v) == "string" then v = tonumber(v) end
    if type(v) ~= "number" then shape_error(path, "must be a number") end
    return v
  elseif k == "string" or k == "uuid" or k == "bytes" then
    if type(v) ~= "string" then shape_error(path, "must be a string, got a " .. type(v)) end
    return v
  elseif k == "list" then
    if type(v) ~= "table" then shape_error(path, "must be a list") end
    local out = json.array()
    for i = 1, #v do out[i] = shape(v[i], t.of, path .. "[" .. i .. "]", types) end
    return out
  elseif k == "ref" then
    local ty = types[t.ref]
    if not ty then return v end
    if ty.kind == "enum" then
      if type(v) ~= "string" then shape_error(path, "must be one of " .. concat(ty.values, ", ")) end
      return v
    end
    return shape_record(v, ty, path, types, t.is == "entity")
  end
  return v
end

-- The body of a successful rpc, shaped by its output type (paginated: { items, next_page_token }).
local function shape_output(rpc, out, types)
  local t = rpc.output_type
  if not t then return out end
  local where = rpc.service .. "." .. rpc.name
  if rpc.paginated then
    if type(out) ~= "table" then shape_error(where, "must be { items = {...}, next_page_token = ... }") end
    local items = out.items
    if items == nil then shape_error(where .. ".items", "is missing") end
    local body = json.object { items = shape(items, { kind = "list", of = t }, where .. ".items", types) }
    local token = out.next_page_token
    if token ~= nil and token ~= null then
      if type(token) ~= "string" then shape_error(where .. ".next_page_token", "must be a string") end
      body.next_page_token = token
    end
    return body
  end
  return shape(out, t, where, types)
end
M.shape = function(v, t, types) return shape(v, t, "value", types or {}) end

-- serving ---------------------------------------------------------------------------------------

local function failure(error_status, code, message, fields)
  local status = error_status[code]
  local body = { error = code, message = message, fields = fields }
  if not status then
    status, body.error = 500, "unknown"
  end
  return status, body
end

-- Whether principal has one of roles: principal.roles is a list of names or a set (name = true).
local function has_role(principal, roles)
  local have = type(principal) == "table" and principal.roles
  if type(have) ~= "table" then return false end
  for _, role in ipairs(roles) do
    if have[role] == true then return true end
    for _, h in ipairs(have) do
      if h == role then return true end
    end
  end
  return false
end

-- The owner check of permission: check(..., resource:, owner_field:): loads the resource's owner
-- field by the input holding its key (opts.db) and compares it with the caller's id
-- (opts.owner_id(principal), default principal.id). An error code and message, or nil.
local function owner_check(owner, input, principal, opts)
  local key = input[owner.param]
  if key == nil then return "invalid_argument", owner.param .. " is required" end
  local rows = opts.db:query(format('SELECT "%s" AS owner FROM "%s" WHERE "%s" = ?', owner.field,
    owner.table, owner.key), key)
  local row = rows and rows[1]
  if not row then return "not_found", "not found" end
  local me
  if opts.owner_id then
    me = opts.owner_id(principal)
  elseif type(principal) == "table" then
    me = principal.id
  end
  if me == nil or row.owner == nil or tostring(row.owner) ~= tostring(me) then
    return "permission_denied", "only the owner may do this"
  end
  return nil
end

local function serve(mod, app, rpc, fn, opts, req, res)
  local error_status = mod.error_status
  -- app may be a group: ctx.app is the app itself.
  local ctx = { app = rawget(app, "app") or app, req = req, res = res, service = rpc.service,
    rpc = rpc.name }
  if rpc.auth == "required" then
    local principal = opts.auth(req, ctx)
    if principal == nil or principal == false then
      -- opts.challenge (auth:rpc_options()): the WWW-Authenticate a 401 carries (RFC 6750).
      if type(opts.challenge) == "string" then res:header("WWW-Authenticate", opts.challenge) end
      return failure(error_status, "unauthenticated", "authentication required")
    end
    ctx.principal = principal
    if rpc.roles and not has_role(principal, rpc.roles) then
      return failure(error_status, "permission_denied",
        "one of the roles " .. concat(rpc.roles, ", ") .. " is required")
    end
    if rpc.permission and not opts.authorize(principal, rpc.permission, req, ctx) then
      return failure(error_status, "permission_denied",
        "permission " .. rpc.permission .. " is required")
    end
  elseif opts.auth then
    -- auth: none still offers the principal when there is one; nil is fine.
    local principal = opts.auth(req, ctx)
    if principal then ctx.principal = principal end
  end
  local input, a, b = decode(rpc, req, opts, mod.types)
  if not input then return a, b end
  ctx.page = a
  if rpc.owner then
    local code, message = owner_check(rpc.owner, input, ctx.principal, opts)
    if code then return failure(error_status, code, message) end
  end
  local out, err = fn(input, ctx)
  if out == res then return res end
  if err ~= nil then
    if type(err) ~= "table" or type(err.code) ~= "string" then
      return failure(error_status, "internal")
    end
    return failure(error_status, err.code, err.message, err.fields)
  end
  -- ctx.status: a 2xx the handler picked (201 Created, 202, 204 No Content).
  local status = ctx.status
  if status ~= nil and (type(status) ~= "number" or status % 1 ~= 0 or status < 200 or status > 299) then
    error(format("handler %s.%s: ctx.status must be a 2xx status, got %s", rpc.service, rpc.name,
      tostring(status)), 0)
  end
  if not rpc.output or status == 204 then return status or 204, "" end
  if out == nil then
    error(format("handler %s.%s returned nothing and no error", rpc.service, rpc.name), 0)
  end
  return status or 200, shape_output(rpc, out, mod.types)
end

local RPC_FIELDS = { "service", "name", "method", "pattern", "handlers" }

-- The routes module of a generated routes.lua. def.rpcs lists { service, name, method, path,
-- pattern, handlers, auth, permission, paginated, output, body, inputs, errors }; def.types maps
-- the refs of the inputs; def.error_status maps an error code to its HTTP status (default
-- M.ERROR_STATUS). The tables are kept, not copied: the module exposes them as rpcs, types and
-- error_status.
function M.routes(def)
  if type(def) ~= "table" then error("rpc.routes: expects { rpcs =, types = }", 2) end
  for _, k in ipairs({ "rpcs", "types" }) do
    if type(def[k]) ~= "table" then error("rpc.routes: def." .. k .. " must be a table", 2) end
  end
  local error_status = def.error_status or M.ERROR_STATUS
  if type(error_status) ~= "table" then error("rpc.routes: def.error_status must be a table", 2) end
  local seen = {}
  for i, r in ipairs(def.rpcs) do
    for _, k in ipairs(RPC_FIELDS) do
      if type(r[k]) ~= "string" then
        error(format("rpc.routes: rpcs[%d].%s must be a string", i, k), 2)
      end
    end
    if type(r.inputs) ~= "table" then
      error(format("rpc.routes: rpcs[%d].inputs must be a table", i), 2)
    end
    for _, f in ipairs(r.inputs) do
      local bad = type_error(f.type, def.types, seen)
      if bad then
        error(format("rpc.routes: %s.%s input %s: %s", r.service, r.name, tostring(f.name), bad), 2)
      end
    end
  end
  if def.module ~= nil and type(def.module) ~= "string" then
    error("rpc.routes: def.module must be the generated module's name", 2)
  end
  local mod = { rpcs = def.rpcs, types = def.types, error_status = error_status, sagas = def.sagas }
  -- Where the default handlers are: beside the generated module ("generated.routes" ->
  -- "generated.handlers.<service>"), or "handlers.<service>" when it was not required by name.
  local prefix = def.module and def.module:match("^(.*)%.[^.]*$")
  prefix = (prefix and prefix .. "." or "") .. "handlers."

  -- Registers every RPC on app (a zever app or group). handlers maps a service name to a table
  -- of rpc name -> function(input, ctx) (default: the handlers module of each service beside
  -- the generated one: require "generated.handlers.<service>").
  -- opts.auth(req, ctx) -> principal | nil is required when an rpc says auth: required;
  -- opts.authorize(principal, permission, req, ctx) -> bool when one has permission:.
  -- opts.challenge: the WWW-Authenticate header of an unauthenticated 401 (app.auth:rpc_options()
  -- gives auth and challenge).
  -- opts.page_size (50) and opts.max_page_size (1000) bound paginated rpcs.
  function mod.register(app, handlers, opts)
    if type(app) ~= "table" or type(app.route) ~= "function" then
      error("routes.register: app must be a zever app or group", 2)
    end
    if handlers ~= nil and type(handlers) ~= "table" then
      error("routes.register: handlers must be a table of services", 2)
    end
    if opts ~= nil and type(opts) ~= "table" then
      error("routes.register: opts must be a table", 2)
    end
    opts = opts or {}
    -- opts.permission (app.permission): the authorize of permission: rpcs (zever.permission).
    if opts.authorize == nil and type(opts.permission) == "table" then
      opts = setmetatable({ authorize = opts.permission:authorizer() }, { __index = opts })
    end
    for _, rpc in ipairs(def.rpcs) do
      local svc
      if handlers then
        svc = handlers[rpc.service]
      else
        -- The app's handlers/<service>.lua (zever gen's stubs) first, then the generated one.
        local own = "handlers." .. rpc.handlers
        svc = require(require("zever.assets").module(own) and own or prefix .. rpc.handlers)
      end
      local fn = type(svc) == "table" and svc[rpc.name]
      if type(fn) ~= "function" then
        error(format("routes.register: no handler %s.%s (%s%s)", rpc.service, rpc.name,
          (prefix:gsub("%.", "/")), rpc.handlers .. ".lua"), 2)
      end
      if rpc.auth == "required" and type(opts.auth) ~= "function" then
        error(format("routes.register: %s.%s has auth: required: pass opts.auth(req)",
          rpc.service, rpc.name), 2)
      end
      if rpc.owner and (type(opts.db) ~= "table" or type(opts.db.query) ~= "function") then
        error(format("routes.register: %s.%s checks the owner of %s: pass opts.db",
          rpc.service, rpc.name, rpc.owner.table), 2)
      end
      if rpc.permission and type(opts.authorize) ~= "function" then
        error(format("routes.register: %s.%s needs permission %q: pass opts.authorize or opts.permission",
          rpc.service, rpc.name, rpc.permission), 2)
      end
      app:route(rpc.method, rpc.service .. "." .. rpc.name, rpc.pattern, function(req, res)
        return serve(mod, app, rpc, fn, opts, req, res)
      end, { source = fn })   -- zever routes names the app's handler, not this wrapper
    end
    return app
  end

  return mod
end

-- jobs ------------------------------------------------------------------------------------------

-- The jobs module of a generated jobs.lua. def.jobs lists { name, queue, attempts, backoff,
-- timeout }, def.schedules lists { name, cron, job, args }; both are exposed as they are.
function M.jobs(def)
  if type(def) ~= "table" or type(def.jobs) ~= "table" or type(def.schedules) ~= "table" then
    error("rpc.jobs: expects { jobs = {...}, schedules = {...} }", 2)
  end
  for i, job in ipairs(def.jobs) do
    if type(job.name) ~= "string" then
      error(format("rpc.jobs: jobs[%d].name must be a string", i), 2)
    end
  end
  local JOBS, SCHEDULES = def.jobs, def.schedules
  local mod = { jobs = JOBS, schedules = SCHEDULES }

  -- Registers every job with app.jobs and every schedule with app.scheduler (each battery is
  -- resolved only when the schema has jobs, or schedules: a new app's app.lua registers the
  -- generated jobs before it has any). handlers defaults to require "handlers.jobs".
  -- A job without a handler raises, naming it: a job the schema declares must be handled.
  function mod.register(app, handlers)
    if type(app) ~= "table" then error("jobs.register: app must be a zever app", 2) end
    if #JOBS == 0 and #SCHEDULES == 0 then return app end
    if handlers == nil then handlers = require "handlers.jobs" end
    if type(handlers) ~= "table" then error("jobs.register: handlers must be a table", 2) end
    for _, job in ipairs(JOBS) do
      if type(handlers[job.name]) ~= "function" then
        error(format("jobs.register: no handler for job %s (handlers/jobs.lua)", job.name), 2)
      end
    end
    if #JOBS > 0 then
      local jobs = app.jobs
      for _, job in ipairs(JOBS) do
        jobs:register(job.name, handlers[job.name], { attempts = job.attempts,
          backoff = job.backoff, queue = job.queue, timeout = job.timeout })
      end
    end
    if #SCHEDULES > 0 then
      local scheduler = app.scheduler
      for _, s in ipairs(SCHEDULES) do scheduler:cron(s.cron, s.job, s.args) end
    end
    return app
  end

  return mod
end

return M
