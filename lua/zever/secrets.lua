-- zever.secrets: the front-end of the secrets battery (app.secrets): named secrets from the
-- environment or from files, never printed.
--
--   local secrets = secrets.new{ prefix = "SECRET_" }          -- the env adapter
--   secrets:get(name)          -> value | nil | nil, err   nil alone: not set
--   secrets:require(name)      -> value | nil, err         err.code "not_found" when not set
--   tostring(secrets)          -> "secrets (env)": never a value
--
-- Adapters: env (default; $<prefix><NAME>) and file (one file per secret in a folder, refused
-- when group or others may read it). A name is a non-empty string; another raises. Values are
-- not cached by the front-end and never put into an error message, a log line or stats.

local battery = require "zever.battery"

local type, error, pairs, setmetatable, getmetatable = type, error, pairs, setmetatable,
  getmetatable

local M = {}

local Secrets = battery.define("secrets", "the secrets are closed")
M.error = Secrets.error

function Secrets:get(name)
  if type(name) ~= "string" or name == "" then error("secrets:get: name must be a non-empty string", 2) end
  if self.closed then return nil, Secrets.CLOSED end
  return self.impl:get(name)
end

function Secrets:require(name)
  if type(name) ~= "string" or name == "" then
    error("secrets:require: name must be a non-empty string", 2)
  end
  if self.closed then return nil, Secrets.CLOSED end
  local v, err = self.impl:get(name)
  if v == nil and err == nil then
    return nil, Secrets.error("not_found", "the secret " .. name .. " is not set")
  end
  return v, err
end

local mt = {}
for k, v in pairs(Secrets) do mt[k] = v end
mt.__index = Secrets
mt.__tostring = function(self) return "secrets (" .. (self.adapter or "?") .. ")" end

function M.wrap(impl, section)
  if type(impl) ~= "table" or type(impl.get) ~= "function" then
    error("secrets.wrap: expects an adapter object with get", 2)
  end
  local obj = battery.object(Secrets, impl, { adapter = section and section.adapter or "env" })
  return setmetatable(obj, mt)
end

-- opts.adapter: "env" (default; opts.prefix) or "file" (opts.dir).
function M.new(opts)
  if opts ~= nil and type(opts) ~= "table" then error("secrets.new: opts must be a table", 2) end
  opts = opts or {}
  local name = opts.adapter or "env"
  if name ~= "env" and name ~= "file" then error("secrets.new: adapter must be env or file", 2) end
  return M.wrap(require("adapters.secrets." .. name).new(opts), { adapter = name })
end

M.is = function(v) return getmetatable(v) == mt end

return M
