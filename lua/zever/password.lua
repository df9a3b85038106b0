-- zever.password: the password battery: hash, verify (constant time), needs_rehash. Adapter
-- argon2id (adapters.password.argon2id: libargon2 on libuv's thread pool, OWASP defaults).
--
--   local password = require "zever.password"
--   local encoded = password.hash("correct horse")              -- default parameters
--   password.verify("correct horse", encoded)                    -- true / false
--   password.needs_rehash(encoded)                               -- parameters changed?
--   app.password:hash(pw), app.password:verify(pw, encoded), ...  -- from the `password` config
--
-- hash returns the PHC string ("$argon2id$v=19$m=19456,t=2,p=1$salt$tag"): store it as it is.
-- verify returns false for a wrong password and nil, err (code "invalid") for an encoded value
-- that is not an argon2id hash. A password is a string of at most 4096 bytes (longer raises:
-- hashing megabytes is a denial of service, not a password). Both wait off the event loop: in
-- a request or job the coroutine yields while a thread hashes; in a script the call pumps the
-- loop until the hash is done.
--
-- The usual login: if verify succeeds and needs_rehash(encoded) is true, hash again and store
-- the new string (raising the cost over time without a migration).

local battery = require "zever.battery"

local type, error = type, error

local M = {}

local Password = battery.define("password", "the password hasher is closed")
M.error = Password.error
local CLOSED = Password.CLOSED
local MAX = 4096

local function check_pw(pw, fname)
  if type(pw) ~= "string" then error(fname .. ": password must be a string", 3) end
  if #pw > MAX then error(fname .. ": password is longer than 4096 bytes", 3) end
end

function Password:hash(pw)
  check_pw(pw, "password:hash")
  if self.closed then return nil, CLOSED end
  return self.impl:hash(pw)
end

function Password:verify(pw, encoded)
  check_pw(pw, "password:verify")
  if type(encoded) ~= "string" then error("password:verify: encoded must be a string", 2) end
  if self.closed then return nil, CLOSED end
  return self.impl:verify(pw, encoded)
end

function Password:needs_rehash(encoded)
  if type(encoded) ~= "string" then error("password:needs_rehash: encoded must be a string", 2) end
  if self.closed then return nil, CLOSED end
  return self.impl:needs_rehash(encoded)
end

function M.wrap(impl)
  local p = battery.object(Password, impl)
  p.params = impl.params
  return p
end

-- new{ memory_kib, iterations, parallelism, hash_length, salt_length }
function M.new(opts)
  return battery.default(M.wrap, "adapters.password.argon2id", "password.new", opts)
end

local default
local function get_default()
  if not default then default = M.new() end
  return default
end

-- Module-level calls with the default (OWASP) parameters.
function M.hash(pw)
  check_pw(pw, "password.hash")
  return get_default():hash(pw)
end

function M.verify(pw, encoded)
  check_pw(pw, "password.verify")
  if type(encoded) ~= "string" then error("password.verify: encoded must be a string", 2) end
  return get_default():verify(pw, encoded)
end

function M.needs_rehash(encoded)
  if type(encoded) ~= "string" then error("password.needs_rehash: encoded must be a string", 2) end
  return get_default():needs_rehash(encoded)
end

M.Password = Password
return M
