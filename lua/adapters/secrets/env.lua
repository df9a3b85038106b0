-- adapters.secrets.env: secrets from environment variables with a prefix (secrets.prefix,
-- default "SECRET_"): the secret "stripe_key" is $SECRET_STRIPE_KEY.
--
--   impl:get(name) -> value | nil
--   env.open(section) -> impl (the adapter contract)
--
-- The name is upper-cased and every character but letters and digits becomes "_". The
-- environment is read at each get (a value set after start is seen; nothing is cached).

local getenv, upper, gsub, setmetatable = os.getenv, string.upper, string.gsub, setmetatable

local M = {}

local Env = {}
Env.__index = Env

function Env:get(name)
  local v = (self.getenv or getenv)(self.prefix .. upper((gsub(name, "[^%w]", "_"))))
  if v == nil or v == "" then return nil end
  return v
end

function M.new(opts)
  opts = opts or {}
  return setmetatable({ prefix = opts.prefix or "SECRET_", getenv = opts.getenv }, Env)
end

function M.open(section)
  return M.new{ prefix = section.prefix }
end

return M
