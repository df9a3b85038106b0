-- adapters.auth.jwt: JSON Web Tokens (RFC 7519) signed as compact JWS (RFC 7515) with HS256,
-- HS384, HS512 (HMAC), EdDSA (Ed25519, RFC 8037) or ES256 (P-256, RFC 7518), over libcrypto
-- (zever.crypto_core), with a revocation list on a cache.
--
--   local impl = jwt.new{ algorithm = "HS256", secret = "...32+ bytes...",   -- HS*
--                         private_key = pem, public_key = pem,                -- EdDSA / ES256
--                         issuer = "app", audience = "api", ttl = 3600, leeway = 60,
--                         revoked = cache | nil, clock = nil }
--   impl:issue(subject, claims, ttl) -> token, claims
--   impl:verify(token)               -> claims | nil, err   (codes invalid, expired, revoked)
--   impl:revoke(jti[, ttl])          -> true | nil, err
--
-- One algorithm per instance: the token's "alg" must equal it exactly, so "none", another
-- HMAC size, or an HMAC token made with a public key as its secret (algorithm confusion) are
-- refused before any signature is computed; a public key is parsed as EdDSA or ES256 only and
-- never used as an HMAC secret. "crit" headers are refused (RFC 7515 4.1.11: none is
-- understood). Claims: exp is required and checked, nbf and iat when present (iat may not be
-- in the future), all with `leeway` seconds of clock skew; iss must equal `issuer` and aud
-- contain `audience` when those are configured. Issued tokens carry sub, iat, exp, a random
-- jti (16 bytes, base64url), and iss/aud when configured; claims may add any JSON members but
-- not replace those. A revoked jti stays on the cache until the token would have expired.
-- Secrets and keys are never put in an error or a log line.

local core = require "zever.crypto_core"
local errors = require "zever.errors"
local json = require "zever.json"
local sys = require "zever.sys"

local type, error, pairs, setmetatable, tostring, floor, find, sub, byte =
  type, error, pairs, setmetatable, tostring, math.floor, string.find, string.sub, string.byte
local b64url, unb64url, equal = core.b64url, core.unb64url, core.equal
local encode, decode = json.encode, json.decode

local M = {}

local HMAC = { HS256 = 256, HS384 = 384, HS512 = 512 }
local ASYM = { EdDSA = true, ES256 = true }
M.ALGORITHMS = { "HS256", "HS384", "HS512", "EdDSA", "ES256" }

local function fail(code, message) return nil, errors.new("auth", code, message) end

local INVALID = "invalid"

local Impl = {}
Impl.__index = Impl

local function now(self)
  local c = self.clock
  if c then return c() end
  return sys.wall()
end

local RESERVED = { sub = true, iat = true, exp = true, jti = true, iss = true, aud = true,
  nbf = true }

function Impl:issue(subject, claims, ttl)
  if not self.can_sign then error("auth.jwt: this key can verify only (no private key)", 3) end
  local t = floor(now(self))
  local c = {}
  if claims then
    for k, v in pairs(claims) do
      if RESERVED[k] then error("auth:issue: claim " .. k .. " is set by issue itself", 3) end
      c[k] = v
    end
  end
  c.sub, c.iat, c.exp, c.jti = subject, t, t + (ttl or self.ttl), b64url(core.random(16))
  if self.issuer then c.iss = self.issuer end
  if self.audience then c.aud = self.audience end
  local input = self.header_b64 .. "." .. b64url(encode(c))
  return input .. "." .. b64url(self.signer(input)), c
end

-- Whether a header segment is acceptable: the one we write (no decoding), or a JSON object
-- whose alg is ours and that has no crit. Accepted texts are remembered (a few).
function Impl:header_ok(h)
  if h == self.header_b64 then return true end
  local seen = self.seen_headers
  if seen[h] then return true end
  local raw = unb64url(h)
  local v = raw and decode(raw)
  if type(v) ~= "table" or v.alg ~= self.algorithm or v.crit ~= nil then return false end
  if v.typ ~= nil and v.typ ~= "JWT" and v.typ ~= "at+jwt" then return false end
  if self.nseen < 16 then
    seen[h] = true
    self.nseen = self.nseen + 1
  end
  return true
end

local function has_aud(aud, want)
  if aud == want then return true end
  if type(aud) == "table" then
    for i = 1, #aud do
      if aud[i] == want then return true end
    end
  end
  return false
end

function Impl:verify(token)
  if #token > 8192 then return fail(INVALID, "the token is too long") end
  local d1 = find(token, ".", 1, true)
  local d2 = d1 and find(token, ".", d1 + 1, true)
  if not d2 or find(token, ".", d2 + 1, true) then return fail(INVALID, "not a compact JWS") end
  if not self:header_ok(sub(token, 1, d1 - 1)) then
    return fail(INVALID, "the token's header is not " .. self.algorithm)
  end
  local sig = unb64url(sub(token, d2 + 1))
  if not sig or not self.verifier(sub(token, 1, d2 - 1), sig) then
    return fail(INVALID, "the signature does not verify")
  end
  local raw = unb64url(sub(token, d1 + 1, d2 - 1))
  local c = raw and byte(raw, 1) == 123 and decode(raw)       -- "{"
  if type(c) ~= "table" then return fail(INVALID, "the claims are not a JSON object") end
  local t, leeway = now(self), self.leeway
  local exp, nbf, iat = c.exp, c.nbf, c.iat
  if type(exp) ~= "number" then return fail(INVALID, "the token has no exp") end
  if t >= exp + leeway then return fail("expired", "the token has expired") end
  if nbf ~= nil and (type(nbf) ~= "number" or t < nbf - leeway) then
    return fail(INVALID, "the token is not valid yet (nbf)")
  end
  if iat ~= nil and (type(iat) ~= "number" or iat > t + leeway) then
    return fail(INVALID, "the token was issued in the future (iat)")
  end
  if self.issuer and c.iss ~= self.issuer then return fail(INVALID, "wrong issuer") end
  if self.audience and not has_aud(c.aud, self.audience) then
    return fail(INVALID, "wrong audience")
  end
  local revoked = self.revoked
  if revoked and type(c.jti) == "string" then
    local v, err = revoked:get("jwt:" .. c.jti)
    if v == nil and err then return nil, errors.adopt("auth", err) end
    if v ~= nil then return fail("revoked", "the token was revoked") end
  end
  return c
end

function Impl:revoke(jti, ttl)
  local revoked = self.revoked
  if not revoked then return fail("unsupported", "no revocation store (configure the cache)") end
  local r, err = revoked:set("jwt:" .. jti, true, ttl or (self.ttl + self.leeway))
  if r == nil and err then return nil, errors.adopt("auth", err) end
  return true
end

-- opts as in the header comment. Raises on a bad configuration (a message without the secret).
function M.new(opts)
  opts = opts or {}
  local alg = opts.algorithm or "HS256"
  local self = setmetatable({ algorithm = alg, ttl = opts.ttl or 3600, leeway = opts.leeway or 60,
    issuer = opts.issuer ~= "" and opts.issuer or nil,
    audience = opts.audience ~= "" and opts.audience or nil, revoked = opts.revoked,
    clock = opts.clock, seen_headers = {}, nseen = 0 }, Impl)
  if HMAC[alg] then
    local secret = opts.secret
    if type(secret) ~= "string" or #secret < 32 then
      error("auth.jwt: " .. alg .. " needs a secret of at least 32 bytes", 2)
    end
    local mac = core.mac(HMAC[alg], secret)
    self.signer = function(input) return mac:compute(input) end
    self.verifier = function(input, sig) return equal(mac:compute(input), sig) end
    self.can_sign = true
  elseif ASYM[alg] then
    local key, pub
    if opts.private_key and opts.private_key ~= "" then
      local msg
      key, msg = core.sig_key(opts.private_key)
      if not key or not key:private() then error("auth.jwt: private_key: " .. (msg or "not private"), 2) end
    end
    if opts.public_key and opts.public_key ~= "" then
      local msg
      pub, msg = core.sig_key(opts.public_key)
      if not pub then error("auth.jwt: public_key: " .. msg, 2) end
    end
    pub = pub or key
    if not pub then error("auth.jwt: " .. alg .. " needs private_key or public_key (PEM)", 2) end
    for _, k in pairs({ key or pub, pub }) do
      if k:alg() ~= alg then
        error("auth.jwt: the key is an " .. k:alg() .. " key, not " .. alg, 2)
      end
    end
    if key then self.signer = function(input) return key:sign(input) end end
    self.verifier = function(input, sig) return pub:verify(input, sig) end
    self.can_sign = key ~= nil
  else
    error("auth.jwt: algorithm must be one of HS256, HS384, HS512, EdDSA, ES256 (got " ..
      tostring(alg) .. ")", 2)
  end
  self.header_b64 = b64url('{"alg":"' .. alg .. '","typ":"JWT"}')
  return self
end

local function read_file(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local s = f:read("*a")
  f:close()
  return s
end

-- The adapter contract: section is the config's auth section. An empty secret for HS* is
-- derived from the crypto keyring (HMAC of its active key), so a zero-config app still signs
-- with a key that config rotation controls; the revocation list lives on the cache battery.
function M.open(section, ctx)
  local opts = { algorithm = section.algorithm, issuer = section.issuer,
    audience = section.audience, ttl = section.ttl, leeway = section.leeway }
  if HMAC[opts.algorithm or "HS256"] then
    opts.secret = section.secret
    if opts.secret == nil or opts.secret == "" then
      local keyring, err = ctx:get("crypto")
      if not keyring then return nil, err end
      opts.secret = keyring:sign("zever auth jwt " .. (opts.algorithm or "HS256"))
    end
  else
    for _, k in ipairs({ "private_key", "public_key" }) do
      local path = section[k .. "_file"]
      if path and path ~= "" then
        local pem, err = read_file(path)
        if not pem then
          return nil, errors.new("auth", "invalid", "auth." .. k .. "_file: " .. tostring(err))
        end
        opts[k] = pem
      end
    end
  end
  if section.revocation ~= false then
    local cache, err = ctx:get("cache")
    if not cache then return nil, err end
    opts.revoked = cache
  end
  local ok, impl = pcall(M.new, opts)
  if not ok then return nil, errors.new("auth", "invalid", (tostring(impl):gsub("^[^:]*:%d+: ", ""))) end
  return impl
end

return M
