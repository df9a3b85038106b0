-- adapters.permission.noop: allows everything, for development and for apps whose checks live
-- elsewhere. Never the default (the default is rbac, which denies what no role grants).
--
--   impl:check(subject, permission) -> true, reason
--   noop.open(section) -> impl (the adapter contract)

local M = {}

local Noop = {}
Noop.__index = Noop

function Noop.check()
  return true, "noop: permissions are not checked"
end

function M.new() return setmetatable({}, Noop) end

function M.open() return M.new() end

return M
