-- adapters.tenant.single: one tenant for every request (tenant.id, default "default"): the
-- zero-infrastructure default, for apps that are not multi-tenant yet but scope their data.
--
--   impl:resolve(req) -> id
--   single.open(section) -> impl (the adapter contract)

local M = {}

local Single = {}
Single.__index = Single

function Single:resolve()
  return self.id
end

function M.new(opts)
  return setmetatable({ id = (opts and opts.id ~= nil and opts.id ~= "") and opts.id or "default" },
    Single)
end

function M.open(section)
  return M.new{ id = section.id }
end

return M
