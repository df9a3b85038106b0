-- adapters.permission.rbac: role-based access control. Roles grant permissions and inherit
-- other roles; subjects hold roles. The roles come from a file (YAML or JSON) or from the db.
--
--   local impl, err = rbac.new{ roles = {...}, subjects = {...} }       -- a table
--   local impl, err = rbac.new{ file = "/app/config/roles.yaml" }       -- a file
--   local impl, err = rbac.new{ db = app.db, refresh = 5 }              -- three tables
--   impl:check(subject, permission) -> allowed, reason | nil, err (the store failed)
--   impl:roles_of(subject)          -> roles | nil, err
--   impl:reload()                   -> true | nil, err
--   rbac.open(section, ctx)         -> impl | nil, err (the adapter contract)
--
-- The model (a file's shape; the db holds the same in rows):
--   roles:
--     viewer: { permissions: [post.read] }
--     editor: { permissions: [post.create, post.edit], inherits: [viewer] }
--     admin:  { permissions: ["*"], inherits: [editor] }
--   subjects:                       optional: subject id -> roles
--     "42": [editor]
-- A permission is "<resource>.<action>" (any text); "post.*" grants every action on post and
-- "*" everything. A role holds its own permissions and those of every role it inherits,
-- transitively (computed once at load: a check is table reads); an inheritance cycle or a role
-- inheriting an unknown role is refused at load with the roles named.
--
-- A subject's roles: subject.roles (a principal carrying its roles: a JWT claim, a session),
-- plus subject.role, plus the roles assigned to its id (subject.id, or the subject itself when
-- it is a string or number) in subjects / the db. Roles the model does not know grant nothing.
--
-- The db: permission_roles(role, inherits) (inherits NULL for a role without parents),
-- permission_grants(role, permission) and permission_subjects(subject, role), created when
-- missing. The model is read at open and again once `refresh` seconds passed (at the next
-- check); assignments are read on each check of a subject id. A failing query is nil, err:
-- the front-end turns it into a deny.

local errors = require "zever.errors"
local file = require "zever.file"
local read = require "zever.config.read"
local sys = require "zever.sys"

local type, pairs, ipairs, tostring, setmetatable, format, concat, sort, match, pcall =
  type, pairs, ipairs, tostring, setmetatable, string.format, table.concat, table.sort,
  string.match, pcall

local M = {}

local Rbac = {}
Rbac.__index = Rbac

local function invalid(msg) return nil, errors.new("permission", "invalid", "permission: " .. msg) end

local function list(v)
  if v == nil then return {} end
  if type(v) == "string" then return { v } end
  if type(v) ~= "table" then return nil end
  local out = {}
  for i, x in ipairs(v) do
    if type(x) ~= "string" then return nil end
    out[i] = x
  end
  return out
end

-- The model: { roles = { name = { grants = set, via = { permission -> granting role } } },
-- subjects = { id -> { roles } } } from { roles = { name = { permissions, inherits } }, subjects }.
function M.compile(def)
  if type(def) ~= "table" then return invalid("the model must be a table") end
  local raw = def.roles or {}
  if type(raw) ~= "table" then return invalid("roles must map role names to roles") end
  local own, parents = {}, {}
  for name, r in pairs(raw) do
    if type(name) ~= "string" then return invalid("role names must be strings") end
    if type(r) ~= "table" then r = {} end
    local perms, inh = list(r.permissions), list(r.inherits)
    if not perms then return invalid(format("role %q: permissions must be a list of strings", name)) end
    if not inh then return invalid(format("role %q: inherits must be a list of role names", name)) end
    for k in pairs(r) do
      if k ~= "permissions" and k ~= "inherits" then
        return invalid(format("role %q: unknown field %q (permissions, inherits)", name, tostring(k)))
      end
    end
    own[name], parents[name] = perms, inh
  end
  local roles, state = {}, {}
  local function visit(name, path)
    if state[name] == "done" then return true end
    if state[name] == "active" then
      return invalid("an inheritance cycle: " .. concat(path, " -> ") .. " -> " .. name)
    end
    state[name] = "active"
    path[#path + 1] = name
    local grants, via = {}, {}
    for _, p in ipairs(own[name]) do
      grants[p] = true
      via[p] = name
    end
    for _, parent in ipairs(parents[name]) do
      if not own[parent] then
        return invalid(format("role %q inherits the unknown role %q", name, parent))
      end
      local ok, err = visit(parent, path)
      if not ok then return nil, err end
      for p in pairs(roles[parent].grants) do
        if not grants[p] then
          grants[p] = true
          via[p] = roles[parent].via[p]
        end
      end
    end
    path[#path] = nil
    state[name] = "done"
    roles[name] = { grants = grants, via = via }
    return true
  end
  local names = {}
  for name in pairs(own) do names[#names + 1] = name end
  sort(names)
  for _, name in ipairs(names) do
    local ok, err = visit(name, {})
    if not ok then return nil, err end
  end
  local subjects = {}
  for id, rs in pairs(def.subjects or {}) do
    local l = list(rs)
    if not l then return invalid(format("subject %q: roles must be a list", tostring(id))) end
    subjects[tostring(id)] = l
  end
  return { roles = roles, subjects = subjects }
end

-- The grant of permission by role r: the matching grant ("post.edit", "post.*" or "*").
local function grant_of(r, permission)
  local g = r.grants
  if g[permission] then return permission end
  local resource = match(permission, "^(.*)%.[^.]*$")
  while resource do
    local wild = resource .. ".*"
    if g[wild] then return wild end
    resource = match(resource, "^(.*)%.[^.]*$")
  end
  if g["*"] then return "*" end
  return nil
end

-- --- the stores ------------------------------------------------------------------------------

local SCHEMA = {
  "CREATE TABLE IF NOT EXISTS permission_roles (role TEXT NOT NULL, inherits TEXT)",
  "CREATE TABLE IF NOT EXISTS permission_grants (role TEXT NOT NULL, permission TEXT NOT NULL)",
  "CREATE TABLE IF NOT EXISTS permission_subjects (subject TEXT NOT NULL, role TEXT NOT NULL)",
}

local function load_db(db)
  local ok, def = pcall(function()
    local roles = {}
    local function role(name)
      local r = roles[name]
      if not r then
        r = { permissions = {}, inherits = {} }
        roles[name] = r
      end
      return r
    end
    for _, row in ipairs(db:query("SELECT role, inherits FROM permission_roles")) do
      local r = role(row.role)
      if row.inherits ~= nil and row.inherits ~= "" and type(row.inherits) == "string" then
        r.inherits[#r.inherits + 1] = row.inherits
      end
    end
    for _, row in ipairs(db:query("SELECT role, permission FROM permission_grants")) do
      local r = role(row.role)
      r.permissions[#r.permissions + 1] = row.permission
    end
    return { roles = roles }
  end)
  if not ok then
    return nil, errors.new("permission", "unavailable", "permission: reading the roles failed: " ..
      tostring(type(def) == "table" and def.message or def))
  end
  return M.compile(def)
end

local function load(self)
  if self.db then return load_db(self.db) end
  if self.path then
    local src = file.read(self.path)
    if not src then return invalid("cannot read " .. self.path) end
    local tree, err
    if match(self.path, "%.json$") then tree, err = read.json(src, self.path)
    else tree, err = read.yaml(src, self.path) end
    if not tree then
      return invalid(self.path .. (err and err.line and (":" .. err.line) or "") .. ": " ..
        tostring(err and err.message or err))
    end
    local model, cerr = M.compile(tree)
    if not model then return nil, errors.new("permission", "invalid", self.path .. ": " .. cerr.message) end
    return model
  end
  return M.compile(self.def or {})
end

function Rbac:reload()
  local model, err = load(self)
  if not model then return nil, err end
  self.model = model
  self.loaded_at = sys.now()
  return true
end

function Rbac:roles_of(subject)
  if self.db and self.refresh and sys.now() - self.loaded_at >= self.refresh then
    local ok, err = self:reload()
    if not ok then return nil, err end
  end
  local out, seen = {}, {}
  local function add(r)
    if type(r) == "string" and not seen[r] then
      seen[r] = true
      out[#out + 1] = r
    end
  end
  local id = subject
  if type(subject) == "table" then
    for _, r in ipairs(type(subject.roles) == "table" and subject.roles or {}) do add(r) end
    add(subject.role)
    id = subject.id
  end
  if id ~= nil then
    id = tostring(id)
    for _, r in ipairs(self.model.subjects[id] or {}) do add(r) end
    if self.db then
      local ok, rows = pcall(self.db.query, self.db,
        "SELECT role FROM permission_subjects WHERE subject = ?", id)
      if not ok then
        return nil, errors.new("permission", "unavailable",
          "permission: reading the subject's roles failed: " ..
          tostring(type(rows) == "table" and rows.message or rows))
      end
      for _, row in ipairs(rows) do add(row.role) end
    end
  end
  return out
end

function Rbac:check(subject, permission)
  local roles, err = self:roles_of(subject)
  if not roles then return nil, err end
  local model = self.model
  for _, name in ipairs(roles) do
    local r = model.roles[name]
    if r then
      local g = grant_of(r, permission)
      if g then
        local from = r.via[g]
        return true, format("role %s grants %s%s", name, g,
          from ~= name and (" (inherited from " .. from .. ")") or "")
      end
    end
  end
  if #roles == 0 then return false, "the subject has no role" end
  return false, format("no role of the subject (%s) grants %s", concat(roles, ", "), permission)
end

function M.new(opts)
  opts = opts or {}
  local self = setmetatable({ def = opts.roles and { roles = opts.roles, subjects = opts.subjects },
    path = (opts.file ~= nil and opts.file ~= "") and opts.file or nil, db = opts.db,
    refresh = opts.refresh }, Rbac)
  if self.db then
    local ok, e = pcall(function()
      for _, sql in ipairs(SCHEMA) do self.db:exec(sql) end
    end)
    if not ok then
      return nil, errors.new("permission", "unavailable", "permission: creating the tables failed: " ..
        tostring(type(e) == "table" and e.message or e))
    end
  end
  local ok, err = self:reload()
  if not ok then return nil, err end
  return self
end

-- section.source: "file" (section.file; empty = no roles: everything denied) or "db".
function M.open(section, ctx)
  if section.source == "db" then
    local db, err = ctx:get("db")
    if not db then return nil, err end
    return M.new{ db = db, refresh = section.refresh }
  end
  return M.new{ file = section.file }
end

return M
