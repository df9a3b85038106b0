-- zever.permission: the front-end of the permission battery (app.permission): may this subject
-- do this action (on this resource)? An answer always comes with its reason.
--
--   local perms = permission.new{ roles = { editor = { permissions = { "post.edit" } } } }
--   perms:can(subject, action[, resource]) -> allowed, reason
--   perms:authorize(subject, action[, resource]) -> true | nil, err   err.code "denied"
--   perms:roles_of(subject)              -> roles | nil, err
--   perms:authorizer()                   -> fn(principal, permission, req, ctx) -> boolean,
--                                           the opts.authorize of generated .zen routes
--   perms:reload()                       -> true | nil, err
--
-- The permission checked is action when resource is nil ("post.edit"), else
-- "<resource>.<action>", resource being a string ("post") or a table naming its type
-- (resource.type). subject is a principal table (id, roles, role) or an id. A nil subject is
-- denied ("no subject"). An infrastructure failure (the db behind rbac failing) is a deny whose
-- reason says so, never an allow, and is counted (stats().errors). An action that is not a
-- string raises.
--
-- Generated routes: a .zen rpc with `permission: check("booking.cancel", ...)` or
-- `permission: "admin"` calls opts.authorize(principal, permission, req, ctx); pass
-- `permission = app.permission` to the generated register (zever.rpc builds authorize from it)
-- or `authorize = app.permission:authorizer()`.
--
-- permission.wrap(impl) puts this front-end over an adapter:
--   impl:check(subject, permission) -> allowed, reason | nil, err
--   impl:roles_of(subject) -> roles | nil, err (optional)

local battery = require "zever.battery"

local type, error, tostring, pcall = type, error, tostring, pcall

local M = {}

local Perms = battery.define("permission", "the permission checker is closed")
M.error = Perms.error

local function permission_of(action, resource, fname)
  if type(action) ~= "string" or action == "" then
    error(fname .. ": action must be a non-empty string", 3)
  end
  if resource == nil then return action end
  local kind = resource
  if type(resource) == "table" then kind = resource.type end
  if type(kind) ~= "string" or kind == "" then
    error(fname .. ": resource must be a string or a table with a type", 3)
  end
  return kind .. "." .. action
end

local function check(self, subject, permission)
  local counters = self.counters
  if self.closed then return false, "denied: the permission checker is closed" end
  if subject == nil or subject == false then
    counters.denied = counters.denied + 1
    return false, "no subject"
  end
  local ok, allowed, reason = pcall(self.impl.check, self.impl, subject, permission)
  if not ok or allowed == nil then
    counters.errors = counters.errors + 1
    counters.denied = counters.denied + 1
    local e = ok and reason or allowed
    return false, "denied: the permission store failed: " ..
      tostring(type(e) == "table" and e.message or e)
  end
  if allowed then
    counters.allowed = counters.allowed + 1
    return true, reason
  end
  counters.denied = counters.denied + 1
  return false, reason
end

function Perms:can(subject, action, resource)
  return check(self, subject, permission_of(action, resource, "permission:can"))
end

function Perms:authorize(subject, action, resource)
  local permission = permission_of(action, resource, "permission:authorize")
  local allowed, reason = check(self, subject, permission)
  if allowed then return true end
  return nil, Perms.error("denied", permission .. ": " .. reason, { permission = permission })
end

function Perms:roles_of(subject)
  if self.closed then return nil, Perms.CLOSED end
  if not self.impl.roles_of then return {} end
  return self.impl:roles_of(subject)
end

function Perms:authorizer()
  return function(principal, permission)
    return (check(self, principal, permission))
  end
end

function Perms:reload()
  if self.closed then return nil, Perms.CLOSED end
  if not self.impl.reload then return true end
  return self.impl:reload()
end

function M.wrap(impl)
  if type(impl) ~= "table" or type(impl.check) ~= "function" then
    error("permission.wrap: expects an adapter object with check", 2)
  end
  return battery.object(Perms, impl, { counters = { allowed = 0, denied = 0, errors = 0 } })
end

-- An rbac checker over a table: opts.roles, opts.subjects (adapters.permission.rbac).
function M.new(opts)
  if opts ~= nil and type(opts) ~= "table" then error("permission.new: opts must be a table", 2) end
  local impl, err = require("adapters.permission.rbac").new(opts or {})
  if not impl then error("permission.new: " .. tostring(err), 2) end
  return M.wrap(impl)
end

return M
