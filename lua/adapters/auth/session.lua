-- adapters.auth.session: opaque bearer tokens kept server-side on the session battery (as
-- Laravel Sanctum's tokens or Rails' session logins): the token is a session id, its record
-- holds the subject and claims, and revoking is deleting it, effective at once everywhere the
-- store is shared.
--
--   local impl = sa.new{ store = sessions (a zever.session, server-side adapter), ttl = 3600,
--                        clock = nil }
--   impl:issue(subject, claims, ttl) -> token, claims
--   impl:verify(token)               -> claims | nil, err   (codes invalid, expired)
--   impl:revoke(token)               -> true
--
-- A token's lifetime is the sooner of ttl and the store's own idle/absolute timeouts.

local errors = require "zever.errors"
local sys = require "zever.sys"

local type, assert, pairs, setmetatable, floor, error = type, assert, pairs, setmetatable,
  math.floor, error

local M = {}

local Impl = {}
Impl.__index = Impl

local function now(self)
  local c = self.clock
  if c then return c() end
  return sys.wall()
end

function Impl:issue(subject, claims, ttl)
  local store = self.store
  local s = assert(store:create())
  local t = floor(now(self))
  local c = {}
  if claims then
    for k, v in pairs(claims) do
      if k == "sub" or k == "iat" or k == "exp" or k == "jti" then
        error("auth:issue: claim " .. k .. " is set by issue itself", 3)
      end
      c[k] = v
    end
  end
  c.sub, c.iat, c.exp = subject, t, t + (ttl or self.ttl)
  s.data.auth = c
  local token, err = store:save(s)
  if not token then return nil, errors.adopt("auth", err) end
  c.jti = token
  return token, c
end

function Impl:verify(token)
  local s, err = self.store:load(token)
  if s == nil and err then return nil, errors.adopt("auth", err) end
  local c = s and s.data.auth
  if type(c) ~= "table" then return nil, errors.new("auth", "invalid", "unknown token") end
  if type(c.exp) ~= "number" or now(self) >= c.exp then
    self.store:destroy(s)
    return nil, errors.new("auth", "expired", "the token has expired")
  end
  c.jti = token
  return c
end

function Impl:revoke(token)
  local s = self.store:load(token)
  if s then self.store:destroy(s) end
  return true
end

function M.new(opts)
  if type(opts) ~= "table" or type(opts.store) ~= "table" then
    error("auth.session: want { store = a zever.session }", 2)
  end
  if opts.store.impl and opts.store.impl.cookie then
    error("auth.session: tokens need a server-side session store, not the cookie adapter", 2)
  end
  return setmetatable({ store = opts.store, ttl = opts.ttl or 3600, clock = opts.clock }, Impl)
end

-- The adapter contract: the store is the app's session battery.
function M.open(section, ctx)
  local store, err = ctx:get("session")
  if not store then return nil, err end
  if store.impl and store.impl.cookie then
    return nil, errors.new("auth", "invalid", "auth.adapter session needs a server-side " ..
      "session.adapter (memory, db or redis), not cookie")
  end
  return M.new{ store = store, ttl = section.ttl }
end

return M
