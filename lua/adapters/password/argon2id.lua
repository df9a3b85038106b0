-- adapters.password.argon2id: password hashes with argon2id (RFC 9106) through Debian's
-- libargon2, computed on libuv's thread pool (zever.password_core) so a login never stalls the
-- worker's event loop: the calling coroutine waits (zever.sched), the loop serves others.
--
--   local impl = argon2id.new{ memory_kib = 19456, iterations = 2, parallelism = 1,
--                              hash_length = 32, salt_length = 16 }
--   impl:hash(pw) -> encoded | nil, err        impl:verify(pw, encoded) -> boolean | nil, err
--   impl:needs_rehash(encoded) -> boolean
--
-- Defaults are OWASP's (Password Storage Cheat Sheet): m = 19 MiB, t = 2, p = 1. Salts are 16
-- bytes from OpenSSL's CSPRNG. The encoded PHC string carries its parameters, so hashes made
-- with old parameters still verify; needs_rehash says when to replace one after a successful
-- login. verify compares in constant time (libargon2's argon2_compare).

local core = require "zever.password_core"
local crypto_core = require "zever.crypto_core"
local errors = require "zever.errors"
local sched = require "zever.sched"

local type, error, setmetatable = type, error, setmetatable

local M = {}

M.DEFAULTS = { memory_kib = 19456, iterations = 2, parallelism = 1, hash_length = 32,
  salt_length = 16 }

local Impl = {}
Impl.__index = Impl

local function wait(start, ...)
  local token = sched.token()
  start(function(a, b) sched.complete(token, a, b) end, ...)
  return sched.await(token)
end

local function hash_start(done, pw, salt, p)
  core.hash(pw, salt, p.iterations, p.memory_kib, p.parallelism, p.hash_length, done)
end

local function verify_start(done, encoded, pw)
  core.verify(encoded, pw, done)
end

function Impl:hash(pw)
  local p = self.params
  local encoded, msg = wait(hash_start, pw, crypto_core.random(p.salt_length), p)
  if not encoded then return nil, errors.new("password", "unavailable", "password: " .. msg) end
  return encoded
end

function Impl.verify(_, pw, encoded)
  local ok, msg = wait(verify_start, encoded, pw)
  if ok == nil then return nil, errors.new("password", "invalid", "password: " .. msg) end
  return ok
end

function Impl:needs_rehash(encoded)
  local t, m, par, len = core.params(encoded)
  if not t then return true end
  local p = self.params
  return t ~= p.iterations or m ~= p.memory_kib or par ~= p.parallelism or len ~= p.hash_length
end

local function int(v, default, name, min, max)
  if v == nil then return default end
  if type(v) ~= "number" or v % 1 ~= 0 or v < min or v > max then
    error("password: " .. name .. " must be an integer in " .. min .. ".." .. max, 3)
  end
  return v
end

function M.new(opts)
  opts = opts or {}
  local d = M.DEFAULTS
  local p = {
    memory_kib = int(opts.memory_kib, d.memory_kib, "memory_kib", 8, 4194304),
    iterations = int(opts.iterations, d.iterations, "iterations", 1, 1000),
    parallelism = int(opts.parallelism, d.parallelism, "parallelism", 1, 64),
    hash_length = int(opts.hash_length, d.hash_length, "hash_length", 16, 64),
    salt_length = int(opts.salt_length, d.salt_length, "salt_length", 8, 64),
  }
  if p.memory_kib < 8 * p.parallelism then
    error("password: memory_kib must be at least 8 * parallelism", 2)
  end
  return setmetatable({ params = p }, Impl)
end

-- The adapter contract: section is the config's password section.
function M.open(section)
  return M.new{ memory_kib = section.memory_kib, iterations = section.iterations,
    parallelism = section.parallelism, hash_length = section.hash_length,
    salt_length = section.salt_length }
end

return M
