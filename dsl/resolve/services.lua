-- dsl.resolve.services: the resolver phase for services and rpcs: options, params, http
-- routes, auth, error codes.
-- It adds methods to the shared state S (dsl/resolve/common.lua); dsl/resolver.lua runs them.

if jit then jit.off(true, true) end -- interpreted, like all of the resolver (dsl/resolver.lua)

local C = require "dsl.resolve.common"
local S = C.S
local ERROR_CODES = C.ERROR_CODES
local PARAM_ATTRS = C.PARAM_ATTRS
local RPC_OPTIONS = C.RPC_OPTIONS
local SERVICE_OPTIONS = C.SERVICE_OPTIONS
local VERBS = C.VERBS
local describe = C.describe
local ir = require "dsl.ir"
local set = C.set
local suggest = C.suggest
local value_text = C.value_text
local where = C.where

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
  local version = self.versions and self.versions[self.mod]
  if version and full:sub(1, #version + 2) ~= "/" .. version .. "/" then
    self:warn(path, "the path %s of module %s (folder %s/) does not start with /%s/", full,
      self.mod, version, version)
  end
  if self.prefix and p:sub(1, #self.prefix) == self.prefix then
    self:warn(path, "the path %s already starts with the service prefix %s (the route is %s)", p,
      self.prefix, full)
  end
  -- (A set of its own: set() caches by list, for the constant lists of names.)
  local names, have = {}, {}
  for _, i in ipairs(inputs) do
    names[#names + 1] = i.name
    have[i.name] = true
  end
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
    self.routes[key] = { name = self.service_name .. "." .. rpc.name, file = self.file, node = v }
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
  if opts.auth then self:auth(opts.auth.value, node) end
  if opts.permission then
    local v = opts.permission.value
    if v.kind == "call" and v.name == "check" then
      self:permission_check(v, node, node.inputs)
    elseif v.kind ~= "string" and v.kind ~= "ident" then
      self:err(v, 'permission takes a name or check("action", resource: Entity, owner_field: ' ..
        'field), found %s', describe(v))
    else
      node.permission = v.value or v.name
    end
    if node.permission then
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

-- auth: required | none | required(roles: { admin, support })
function S:auth(v, node)
  local word = (v.kind == "ident" or v.kind == "call") and v.name or nil
  if word ~= "required" and word ~= "none" then
    return self:err(v, "auth is required, required(roles: { ... }) or none, found %s%s",
      value_text(v), suggest(word, { "none", "required" }))
  end
  node.auth = word
  if v.kind ~= "call" then return end
  if word == "none" then return self:err(v, "auth: none takes no arguments") end
  for _, a in ipairs(v.args) do
    local list = a.value
    if a.name ~= "roles" then
      self:err(a, "auth: required takes roles: { name, ... }, found %s%s",
        a.name and (a.name .. ":") or describe(list), suggest(a.name, { "roles" }))
    elseif list.kind ~= "list" or #list.items == 0 then
      self:err(list, "roles takes a list of role names ({ admin }), found %s", describe(list))
    else
      local roles, seen = {}, {}
      for _, item in ipairs(list.items) do
        local role = (item.kind == "ident" and item.name) or (item.kind == "string" and item.value)
        if not role then
          self:err(item, "a role is a name, found %s", describe(item))
        elseif seen[role] then
          self:err(item, "role %s is listed twice", role)
        else
          seen[role] = true
          roles[#roles + 1] = role
        end
      end
      node.roles = roles
    end
  end
end

-- permission: check("booking.cancel", resource: Booking, owner_field: guest_id): the permission
-- plus an owner check (the route loads the resource by the input holding its key and compares
-- owner_field with the caller).
function S:permission_check(v, node, inputs)
  local action, resource, field
  for i, a in ipairs(v.args) do
    if i == 1 and not a.name then
      if a.value.kind ~= "string" then
        self:err(a.value, 'check takes the action first as a string ("booking.cancel"), found %s',
          describe(a.value))
      else
        action = a.value
      end
    elseif a.name == "resource" then
      resource = a.value
    elseif a.name == "owner_field" then
      field = a.value
    else
      self:err(a, "check takes an action string, resource: and owner_field:, found %s%s",
        a.name and (a.name .. ":") or describe(a.value),
        suggest(a.name, { "owner_field", "resource" }))
    end
  end
  if not action then
    if #v.args == 0 or v.args[1].name then
      self:err(v, 'check takes the action first as a string ("booking.cancel")')
    end
    return
  end
  node.permission = action.value
  if not resource and not field then return end
  if not (resource and field) then
    return self:err(v, "check needs both resource: and owner_field: for an owner check")
  end
  if resource.kind ~= "ident" then
    return self:err(resource, "resource: takes an entity name, found %s", describe(resource))
  end
  local sym = self:lookup(resource.name, self.mod)
  if not sym or sym.kind ~= "entity" then
    local ents = {}
    for _, q in ipairs(self.order) do
      local s = self.symbols[q]
      if s.kind == "entity" then ents[#ents + 1] = s.module == self.mod and s.decl.name or q end
    end
    return self:err(resource, "resource: %s is %s%s", resource.name,
      sym and ("a " .. sym.kind .. ", not an entity") or "not a declared entity",
      suggest(resource.name, ents))
  end
  self.used[sym.qname] = true
  local ent = sym.node
  if field.kind ~= "ident" then
    return self:err(field, "owner_field: takes a field of %s, found %s", sym.decl.name,
      describe(field))
  end
  local names, found = {}, false
  for _, c in ipairs(ent and ent.columns or {}) do
    names[#names + 1] = c.name
    if c.name == field.name then found = true end
  end
  if not found then
    return self:err(field, "owner_field: %s is not a field of %s%s", field.name, sym.decl.name,
      suggest(field.name, names))
  end
  local key = sym.primary and sym.primary.name
  if not key then return end
  -- The input that holds the resource's key: its primary key's name, or <entity>_<key>.
  local want = { key, ir.snake(sym.decl.name) .. "_" .. key }
  local param
  for _, i in ipairs(inputs) do
    if i.name == want[1] or i.name == want[2] then
      param = i.name
      break
    end
  end
  if not param then
    return self:err(v, "the owner check loads %s by its key: rpc %s needs an input %s or %s",
      sym.decl.name, node.name, want[1], want[2])
  end
  node.owner = { resource = sym.qname, table = ent.table, key = key, param = param,
    field = field.name }
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
  self.service_name = d.name -- not self.service: that is this method
  self:unique_names(d.rpcs or {}, "rpc", d.name)
  for _, r in ipairs(d.rpcs or {}) do
    if r.name then node.rpcs[#node.rpcs + 1] = self:rpc(r) end
  end
  return node
end

-- jobs and schedules ---------------------------------------------------------------------------

