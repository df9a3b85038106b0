-- adapters.crypto.local: the keyring of the crypto battery, held in this process.
--
--   local impl = require("adapters.crypto.local").new{ keys = { { id = "k2", key = k2 }, ... } }
--   impl:encrypt(pt, aad) -> sealed       impl:decrypt(sealed, aad) -> pt | nil
--   impl:sign(msg) -> mac                 impl:verify(msg, mac) -> boolean
--   impl.ids                              the key ids, first (the active one) first
--
-- Each configured key is 32 random bytes; two keys are derived from it with HMAC-SHA256 (one
-- for AES-256-GCM, one for HMAC-SHA256), so one secret never serves two algorithms. The first
-- key encrypts and signs; every key decrypts (chosen by the key id in the sealed text) and
-- verifies (each is tried, in constant time per key). Sealed format (bytes):
--
--   +----+-----+--------+----------+-----------------+---------+
--   | 01 | len | key id | nonce 12 | ciphertext (n)  | tag 16  |
--   +----+-----+--------+----------+-----------------+---------+
--
-- Nonces are 12 random bytes per message (NIST SP 800-38D 8.2.2: keep one key under 2^32
-- messages; rotate keys long before). It never logs, prints or returns key material; errors
-- name a key by its id only.

local core = require "zever.crypto_core"
local errors = require "zever.errors"

local type, error, setmetatable, ipairs = type, error, setmetatable, ipairs
local char, byte, sub, find, gsub, format = string.char, string.byte, string.sub, string.find,
  string.gsub, string.format
local hmac, random, equal, aead, mac = core.hmac, core.random, core.equal, core.aead, core.mac

local M = {}

local IV = 12
local VERSION = "\1"

local Impl = {}
Impl.__index = Impl

local function derive(key)
  return hmac(256, key, "zever aes-256-gcm"), hmac(256, key, "zever hmac-sha256")
end

-- Parses "id:base64key,id2:base64key" (base64 or base64url, 32 bytes each). Returns a list of
-- { id, key } or nil, err; the error names the key id, never the key.
function M.parse_keys(text)
  local list, seen = {}, {}
  for item in text:gmatch("[^,%s]+") do
    local id, b64 = item:match("^([%w_%-%.]+):(.+)$")
    if not id or #id > 64 then
      return nil, errors.new("crypto", "invalid",
        "crypto.keys: want \"id:base64key\" items separated by commas (an id is 1-64 of " ..
        "A-Z a-z 0-9 _ - .)")
    end
    if seen[id] then
      return nil, errors.new("crypto", "invalid", format("crypto.keys: key id %q appears twice", id))
    end
    local key = core.unb64url((gsub(gsub(gsub(b64, "=+$", ""), "%+", "-"), "/", "_")))
    if not key or #key ~= 32 then
      return nil, errors.new("crypto", "invalid", format("crypto.keys: key %q is not 32 bytes " ..
        "of base64 (make one with: head -c32 /dev/urandom | base64)", id))
    end
    seen[id] = true
    list[#list + 1] = { id = id, key = key }
  end
  if #list == 0 then return nil, errors.new("crypto", "invalid", "crypto.keys: no key") end
  return list
end

-- opts.keys: a list of { id, key } (raw 32-byte keys), the first active.
function M.new(opts)
  local keys = opts and opts.keys
  if type(keys) ~= "table" or #keys == 0 then error("crypto: keys must be a non-empty list", 2) end
  local self = setmetatable({ ids = {}, by_id = {}, list = {} }, Impl)
  for i, k in ipairs(keys) do
    if type(k.id) ~= "string" or not find(k.id, "^[%w_%-%.]+$") or #k.id > 64 then
      error("crypto: key " .. i .. ": id must be 1-64 of A-Z a-z 0-9 _ - .", 2)
    end
    if type(k.key) ~= "string" or #k.key ~= 32 then
      error("crypto: key " .. k.id .. " must be 32 bytes", 2)
    end
    if self.by_id[k.id] then error("crypto: key id " .. k.id .. " appears twice", 2) end
    local ek, mk = derive(k.key)
    local entry = { id = k.id, aead = aead(ek), mac = mac(256, mk) }
    self.ids[i], self.list[i], self.by_id[k.id] = k.id, entry, entry
  end
  self.active = self.list[1]
  return self
end

function Impl:encrypt(pt, aad)
  local k = self.active
  local iv = random(IV)
  return VERSION .. char(#k.id) .. k.id .. iv .. k.aead:seal(iv, pt, aad)
end

function Impl:decrypt(sealed, aad)
  if sub(sealed, 1, 1) ~= VERSION then return nil end
  local n = byte(sealed, 2)
  if not n then return nil end
  local k = self.by_id[sub(sealed, 3, 2 + n)]
  if not k then return nil end
  local at = 3 + n
  if #sealed < at + IV + 16 - 1 then return nil end
  return k.aead:open(sub(sealed, at, at + IV - 1), sub(sealed, at + IV), aad)
end

function Impl:sign(msg)
  return self.active.mac:compute(msg)
end

function Impl:verify(msg, tag)
  local ok = false
  local list = self.list
  for i = 1, #list do
    if equal(list[i].mac:compute(msg), tag) then ok = true end
  end
  return ok
end

-- One random key per process, shared by every worker thread: what an app without crypto.keys
-- signs with (sessions then end when the process does; zever.crypto logs that once).
function M.ephemeral()
  return { { id = "ephemeral", key = core.process_key() } }
end

function M.open(section)
  local text = section and section.keys or ""
  if text == "" then return M.new{ keys = M.ephemeral() } end
  local keys, err = M.parse_keys(text)
  if not keys then return nil, err end
  return M.new{ keys = keys }
end

return M
