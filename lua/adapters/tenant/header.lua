-- adapters.tenant.header: the tenant named by a request header (tenant.header, default
-- X-Tenant-ID).
--
-- TRUST: any client can send any header. Use this resolver only behind a gateway (a reverse
-- proxy, an API gateway, a service mesh) that authenticates the caller, sets the header itself
-- and strips the header from what clients send; otherwise a client picks its tenant. See
-- docs/tenant.md.
--
--   impl:resolve(req) -> id | nil, reason   reason "missing" or "invalid"
--   header.open(section) -> impl (the adapter contract)
--
-- An id is 1..64 bytes of letters, digits, "-", "_" and "." starting with a letter or digit:
-- it goes into log lines and queries, so anything else is refused rather than cleaned.

local find, lower = string.find, string.lower

local M = {}

local Header = {}
Header.__index = Header

function Header:resolve(req)
  local v = req:header(self.header)
  if v == nil or v == "" then return nil, "missing" end
  if #v > 64 or find(v, "^[%w][%w%-_.]*$") == nil then return nil, "invalid" end
  return v
end

function M.new(opts)
  local h = opts and opts.header
  return setmetatable({ header = lower((h ~= nil and h ~= "") and h or "x-tenant-id") }, Header)
end

function M.open(section)
  return M.new{ header = section.header }
end

return M
