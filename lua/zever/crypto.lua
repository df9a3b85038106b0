-- zever.crypto: the crypto battery (adapter "local": adapters.crypto.local) and the primitives
-- under it (host/crypto/, OpenSSL's libcrypto).
--
-- Keyless functions:
--   crypto.random_bytes(n)          -> n bytes from the CSPRNG
--   crypto.token([n])               -> n random bytes (default 32) as base64url text
--   crypto.equal(a, b)              -> boolean, constant time (for equal lengths)
--   crypto.hmac(alg, key, msg)      -> raw MAC; alg "sha256" | "sha384" | "sha512"
--   crypto.digest(alg, msg)         -> raw SHA-2 digest; the same algs
--   crypto.b64url(s), crypto.unb64url(s) -> text; bytes | nil (strict, no padding)
--   crypto.aes_gcm_encrypt(key32, iv, pt[, aad]) -> ct, tag
--   crypto.aes_gcm_decrypt(key32, iv, ct, tag[, aad]) -> pt | nil
--
-- A keyring (the battery; app.crypto from the `crypto` config section, or crypto.new{keys}):
--   c:encrypt(pt[, aad])  -> sealed bytes (AES-256-GCM, the active key's id inside)
--   c:decrypt(sealed[, aad]) -> pt | nil, err ("invalid": tampered, wrong aad, unknown key id)
--   c:sign(msg)           -> raw HMAC-SHA256 with the active key
--   c:verify(msg, mac)    -> boolean (true when any key made mac)
--   c:sign_cookie(name, value) / c:verify_cookie(name, text) -> text; value | nil, err
--   c:encrypt_cookie(name, value) / c:decrypt_cookie(name, text) -> text; value | nil, err
--   c.ids                 the key ids, the active one first
--
-- Rotation: put the new key first in crypto.keys ("new:..., old:..."); new cookies and
-- ciphertexts use it, old ones still decrypt and verify until the old key is removed.
-- Cookie texts are base64url, so any value can be signed or encrypted; the cookie's name is
-- bound into the MAC (and is the AEAD's additional data), so a value cannot be moved to another
-- cookie. crypto.default() is the keyring signed and encrypted cookies use when none is passed:
-- the app's (set when app.crypto is first resolved) or, without one, an ephemeral process key.
-- Keys are never logged, printed or put in an error.

local battery = require "zever.battery"
local core = require "zever.crypto_core"

local type, error, tostring, getmetatable, find, sub = type, error, tostring, getmetatable,
  string.find, string.sub
local check_string = battery.string
local b64url, unb64url = core.b64url, core.unb64url

local M = {}

local Crypto = battery.define("crypto", "the keyring is closed")
M.error = Crypto.error
local CLOSED = Crypto.CLOSED
local INVALID = Crypto.error("invalid", "the data does not authenticate with any key")

-- --- primitives -----------------------------------------------------------------------------

local BITS = { sha256 = 256, sha384 = 384, sha512 = 512 }

function M.random_bytes(n)
  if type(n) ~= "number" or n % 1 ~= 0 or n < 0 or n > 1048576 then
    error("crypto.random_bytes: n must be an integer in 0..1048576", 2)
  end
  return core.random(n)
end

function M.token(n)
  n = n or 32
  if type(n) ~= "number" or n % 1 ~= 0 or n < 1 or n > 1024 then
    error("crypto.token: n must be an integer in 1..1024", 2)
  end
  return b64url(core.random(n))
end

function M.equal(a, b)
  if type(a) ~= "string" or type(b) ~= "string" then error("crypto.equal: want two strings", 2) end
  return core.equal(a, b)
end

function M.hmac(alg, key, msg)
  local bits = BITS[alg]
  if not bits then error('crypto.hmac: alg must be "sha256", "sha384" or "sha512"', 2) end
  if type(key) ~= "string" or type(msg) ~= "string" then
    error("crypto.hmac: key and msg must be strings", 2)
  end
  return core.hmac(bits, key, msg)
end

-- The SHA-2 digest of msg (raw bytes): alg "sha256", "sha384" or "sha512".
function M.digest(alg, msg)
  local bits = BITS[alg]
  if not bits then error('crypto.digest: alg must be "sha256", "sha384" or "sha512"', 2) end
  if type(msg) ~= "string" then error("crypto.digest: msg must be a string", 2) end
  return core.digest(bits, msg)
end

function M.b64url(s)
  if type(s) ~= "string" then error("crypto.b64url: want a string", 2) end
  return b64url(s)
end

function M.unb64url(s)
  if type(s) ~= "string" then error("crypto.unb64url: want a string", 2) end
  return unb64url(s)
end

local function check_raw(key, iv, fname)
  if type(key) ~= "string" or #key ~= 32 then error(fname .. ": key must be 32 bytes", 3) end
  if type(iv) ~= "string" or #iv == 0 then error(fname .. ": iv must be a non-empty string", 3) end
end

function M.aes_gcm_encrypt(key, iv, pt, aad)
  check_raw(key, iv, "crypto.aes_gcm_encrypt")
  if type(pt) ~= "string" then error("crypto.aes_gcm_encrypt: pt must be a string", 2) end
  local out = core.aead(key):seal(iv, pt, aad)
  return sub(out, 1, -17), sub(out, -16)
end

function M.aes_gcm_decrypt(key, iv, ct, tag, aad)
  check_raw(key, iv, "crypto.aes_gcm_decrypt")
  if type(ct) ~= "string" or type(tag) ~= "string" or #tag ~= 16 then
    error("crypto.aes_gcm_decrypt: ct must be a string and tag 16 bytes", 2)
  end
  return core.aead(key):open(iv, ct .. tag, aad)
end

-- --- the keyring ----------------------------------------------------------------------------

local function opt_aad(aad, fname)
  if aad ~= nil and type(aad) ~= "string" then error(fname .. ": aad must be a string", 3) end
end

function Crypto:encrypt(pt, aad)
  check_string(pt, "crypto:encrypt", "plaintext")
  opt_aad(aad, "crypto:encrypt")
  if self.closed then return nil, CLOSED end
  return self.impl:encrypt(pt, aad)
end

function Crypto:decrypt(sealed, aad)
  check_string(sealed, "crypto:decrypt", "sealed")
  opt_aad(aad, "crypto:decrypt")
  if self.closed then return nil, CLOSED end
  local pt = self.impl:decrypt(sealed, aad)
  if pt == nil then return nil, INVALID end
  return pt
end

function Crypto:sign(msg)
  check_string(msg, "crypto:sign", "msg")
  if self.closed then return nil, CLOSED end
  return self.impl:sign(msg)
end

function Crypto:verify(msg, tag)
  check_string(msg, "crypto:verify", "msg")
  check_string(tag, "crypto:verify", "mac")
  if self.closed then return nil, CLOSED end
  return self.impl:verify(msg, tag)
end

-- Signed cookie text: base64url(value) "." base64url(HMAC(name "=" value)).
function Crypto:sign_cookie(name, value)
  check_string(name, "crypto:sign_cookie", "name")
  check_string(value, "crypto:sign_cookie", "value")
  if self.closed then return nil, CLOSED end
  return b64url(value) .. "." .. b64url(self.impl:sign(name .. "=" .. value))
end

function Crypto:verify_cookie(name, text)
  check_string(name, "crypto:verify_cookie", "name")
  check_string(text, "crypto:verify_cookie", "text")
  if self.closed then return nil, CLOSED end
  local dot = find(text, ".", 1, true)
  if not dot then return nil, INVALID end
  local value, tag = unb64url(sub(text, 1, dot - 1)), unb64url(sub(text, dot + 1))
  if not value or not tag or not self.impl:verify(name .. "=" .. value, tag) then
    return nil, INVALID
  end
  return value
end

-- Encrypted cookie text: base64url(sealed), the cookie's name as additional data.
function Crypto:encrypt_cookie(name, value)
  check_string(name, "crypto:encrypt_cookie", "name")
  check_string(value, "crypto:encrypt_cookie", "value")
  if self.closed then return nil, CLOSED end
  return b64url(self.impl:encrypt(value, name))
end

function Crypto:decrypt_cookie(name, text)
  check_string(name, "crypto:decrypt_cookie", "name")
  check_string(text, "crypto:decrypt_cookie", "text")
  if self.closed then return nil, CLOSED end
  local sealed = unb64url(text)
  local pt = sealed and self.impl:decrypt(sealed, name)
  if pt == nil then return nil, INVALID end
  return pt
end

local default

function M.wrap(impl)
  local c = battery.object(Crypto, impl)
  c.ids = impl.ids
  return c
end

-- The container's keyring also becomes the default one of this Lua state (zever.cookie's
-- signed and encrypted cookies, sessions).
function M.wrap_config(impl, section, ctx)
  local c = M.wrap(impl)
  default = c
  if (section.keys or "") == "" and ctx and ctx.get then
    local log = ctx:get("log")
    if log and log.warn then
      log:warn("crypto.keys is empty: signing with an ephemeral process key (signed cookies " ..
        "and sessions end when the process does)")
    end
  end
  return c
end

-- opts.keys: a list of { id = "k1", key = <32 bytes> }, or the text of crypto.keys.
function M.new(opts)
  battery.opt_table(opts, "crypto.new", "opts")
  local keys = opts and opts.keys
  local adapter = require "adapters.crypto.local"
  if keys == nil then
    keys = adapter.ephemeral()
  elseif type(keys) == "string" then
    local err
    keys, err = adapter.parse_keys(keys)
    if not keys then error(tostring(err), 2) end
  end
  return M.wrap(adapter.new{ keys = keys })
end

function M.default()
  if default == nil or default.closed then default = M.new() end
  return default
end

-- Makes c the default keyring (specs, apps that build their own); nil restores the fallback.
function M.set_default(c)
  if c ~= nil and (type(c) ~= "table" or getmetatable(c) ~= Crypto) then
    error("crypto.set_default: want a keyring from crypto.new or app.crypto", 2)
  end
  default = c
end

M.Crypto = Crypto
return M
