-- zever.tenant: the front-end of the tenant battery (app.tenant): which tenant a request belongs
-- to, on the request, in every log line of the request, and in the queries that scope by it.
--
--   local tenants = tenant.new{ adapter = "header", header = "X-Tenant-ID" }   -- or "single"
--   tenants:resolve(req)     -> id | nil, err     err.code "missing" or "invalid"
--   tenants:middleware()     -> middleware: sets req.tenant, adds tenant = id to the log context
--                               of the request, answers 400 when no valid tenant is named
--   db:from("orders"):for_tenant(req.tenant)        (zever.db.query: WHERE tenant_id = ?)
--   db:insert_into("orders"):values{...}:for_tenant(req.tenant)
--
-- Resolvers (adapters): single (one tenant, tenant.id: the default) and header (a request
-- header; only behind a trusted gateway that sets it: adapters.tenant.header explains). The
-- middleware answers 400 { error = "tenant_required" | "invalid_tenant" } and does not call
-- the handler when the resolver finds none. req.tenant is the id (a string); flags
-- (zever.flag) and the query builder read it as it is.
--
-- tenant.wrap(impl) puts this front-end over an adapter: impl:resolve(req) -> id | nil, reason.

local battery = require "zever.battery"
local log = require "zever.log"

local type, error, pairs, pcall, rawset = type, error, pairs, pcall, rawset

local M = {}

local Tenants = battery.define("tenant", "the tenant resolver is closed")
M.error = Tenants.error

local MISSING = Tenants.error("missing", "the request names no tenant")
local INVALID = Tenants.error("invalid", "the request names an invalid tenant")

function Tenants:resolve(req)
  if type(req) ~= "table" then error("tenant:resolve: expects a request", 2) end
  if self.closed then return nil, Tenants.CLOSED end
  local id, reason = self.impl:resolve(req)
  if id == nil then return nil, reason == "invalid" and INVALID or MISSING end
  return id
end

function Tenants:middleware()
  return function(req, res, nxt)
    local id, err = self:resolve(req)
    if not id then
      return res:status(400):json({ error = err == INVALID and "invalid_tenant" or "tenant_required",
        message = err.message })
    end
    rawset(req, "tenant", id)
    local prev = log.context()
    local ctx = { tenant = id }
    if prev then
      for k, v in pairs(prev) do ctx[k] = v end
      ctx.tenant = id
    end
    log.set_context(ctx)
    local ok, r = pcall(nxt)
    log.set_context(prev)
    if not ok then error(r, 0) end
    return r
  end
end

function M.wrap(impl)
  if type(impl) ~= "table" or type(impl.resolve) ~= "function" then
    error("tenant.wrap: expects an adapter object with resolve", 2)
  end
  return battery.object(Tenants, impl, {})
end

-- opts.adapter: "single" (default; opts.id) or "header" (opts.header).
function M.new(opts)
  if opts ~= nil and type(opts) ~= "table" then error("tenant.new: opts must be a table", 2) end
  opts = opts or {}
  local name = opts.adapter or "single"
  if name ~= "single" and name ~= "header" then
    error("tenant.new: adapter must be single or header", 2)
  end
  return M.wrap(require("adapters.tenant." .. name).new(opts))
end

return M
