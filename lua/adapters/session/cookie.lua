-- adapters.session.cookie: the whole session in the client's cookie, encrypted and authenticated
-- with AES-256-GCM by a crypto keyring (zever.crypto: the app's keys, rotation included). No
-- server state: a session cannot be revoked before it expires, except by rotating the keys.
--
--   ck.new{ crypto = keyring, max_bytes = 4000 } -> impl
--   impl.cookie = true
--   impl:seal(name, blob) -> token | nil, err     impl:open(name, token) -> blob | nil
--
-- The cookie's name is the additional data, so a value cannot be moved to another cookie.
-- A token longer than max_bytes (browsers keep about 4096 bytes per cookie, name and
-- attributes included) is refused with code "invalid": keep cookie sessions small.

local errors = require "zever.errors"

local format = string.format

local M = {}

local Impl = {}
Impl.__index = Impl

function Impl:seal(name, blob)
  local token = self.crypto:encrypt_cookie(name, blob)
  if #token > self.max_bytes then
    return nil, errors.new("session", "invalid", format("the session is %d bytes once " ..
      "encrypted; a cookie session holds at most %d (use a server-side adapter)", #token,
      self.max_bytes))
  end
  return token
end

function Impl:open(name, token)
  if #token > self.max_bytes then return nil end
  return (self.crypto:decrypt_cookie(name, token))
end

function Impl.close() return true end

function M.new(opts)
  if type(opts) ~= "table" or type(opts.crypto) ~= "table" then
    error("session.cookie: want { crypto = keyring }", 2)
  end
  return setmetatable({ cookie = true, crypto = opts.crypto, max_bytes = opts.max_bytes or 4000 },
    Impl)
end

-- The adapter contract: the keyring is the app's crypto battery.
function M.open(_, ctx)
  local crypto, err = ctx:get("crypto")
  if not crypto then return nil, err end
  return M.new{ crypto = crypto }
end

return M
