-- zever.auth: JWT (RFC 7515 / 7519 / 8037 vectors, alg none and algorithm confusion refused,
-- claims with leeway, revocation on the cache), opaque tokens on the session store, the auth
-- middleware (401 with WWW-Authenticate through curl), and the .zen `auth: required` hook.

local auth = require "zever.auth"
local core = require "zever.crypto_core"
local cache = require "zever.cache"
local session = require "zever.session"
local json = require "zever.json"
local testing = require "zever.testing"
local hs = require "spec.support.http_script"

local function unhex(s) return (s:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end)) end
local function b64(s)
  local t = core.b64url(s):gsub("-", "+"):gsub("_", "/")
  return t .. ("="):rep((4 - #t % 4) % 4)
end
local function pem(kind, der)
  local body = b64(der):gsub(("."):rep(64), "%0\n"):gsub("\n$", "")
  return "-----BEGIN " .. kind .. "-----\n" .. body .. "\n-----END " .. kind .. "-----\n"
end
-- Raw keys of the RFCs' JWKs, wrapped as SubjectPublicKeyInfo / PKCS#8 DER.
local function ed25519_public(x) return pem("PUBLIC KEY", unhex("302a300506032b6570032100") .. x) end
local function ed25519_private(d)
  return pem("PRIVATE KEY", unhex("302e020100300506032b657004220420") .. d)
end
local function p256_public(x, y)
  return pem("PUBLIC KEY", unhex("3059301306072a8648ce3d020106082a8648ce3d030107034200") .. "\4" .. x .. y)
end

local SECRET = string.rep("k", 32)
local T0 = 1700000000

-- RFC 7515 appendix A.1 (also RFC 7519 section 3.1): HS256, iss "joe", exp 1300819380.
local A1_KEY = core.unb64url("AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow")
local A1 = "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9" ..
  ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ" ..
  ".dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
-- RFC 7515 appendix A.3: ES256 over the same claims.
local A3 = "eyJhbGciOiJFUzI1NiJ9" ..
  ".eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ" ..
  ".DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"
local A3_PUB = p256_public(core.unb64url("f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"),
  core.unb64url("x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"))
-- RFC 8037 appendix A: Ed25519.
local ED_D = core.unb64url("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
local ED_X = core.unb64url("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")

describe("zever.auth", function()
  describe("jwt vectors", function()
    local clock = function() return 1300819000 end   -- before the vectors' exp

    it("verifies RFC 7515 A.1 / RFC 7519 3.1 (HS256)", function()
      local a = auth.new{ secret = A1_KEY, clock = clock }
      local claims = assert(a:verify(A1))
      assert.equal("joe", claims.iss)
      assert.equal(1300819380, claims.exp)
      assert.is_true(claims["http://example.com/is_root"])
    end)

    it("verifies RFC 7515 A.3 (ES256) with the JWK's public key", function()
      local a = auth.new{ algorithm = "ES256", public_key = A3_PUB, clock = clock }
      assert.equal("joe", assert(a:verify(A3)).iss)
    end)

    it("signs RFC 8037 A.4 (Ed25519) to the byte", function()
      local key = assert(core.sig_key(ed25519_private(ED_D)))
      local input = "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc"
      assert.equal("hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg",
        core.b64url(key:sign(input)))
      assert.is_true(assert(core.sig_key(ed25519_public(ED_X))):verify(input, key:sign(input)))
    end)

    it("refuses the vectors once expired (leeway 60 s)", function()
      local a = auth.new{ secret = A1_KEY, clock = function() return 1300819380 + 59 end }
      assert.is_not_nil(a:verify(A1))
      a = auth.new{ secret = A1_KEY, clock = function() return 1300819380 + 60 end }
      local v, err = a:verify(A1)
      assert.is_nil(v)
      assert.equal("expired", err.code)
    end)
  end)

  describe("jwt issue and verify", function()
    local now
    local function make(opts)
      now = T0
      opts = opts or {}
      opts.clock = function() return now end
      if opts.secret == nil and (opts.algorithm or "HS256"):sub(1, 2) == "HS" then opts.secret = SECRET end
      return auth.new(opts)
    end

    for _, alg in ipairs({ "HS256", "HS384", "HS512", "EdDSA" }) do
      it("round-trips a token with " .. alg, function()
        local opts = { algorithm = alg, issuer = "app", audience = "api" }
        if alg == "EdDSA" then opts.private_key = ed25519_private(ED_D) end
        local a = make(opts)
        local token, c = assert(a:issue("user:1", { role = "admin" }, 600))
        assert.equal("user:1", c.sub)
        local claims = assert(a:verify(token))
        assert.same({ "user:1", "admin", "app", "api", T0, T0 + 600 },
          { claims.sub, claims.role, claims.iss, claims.aud, claims.iat, claims.exp })
        assert.equal(22, #claims.jti)
        local header = json.decode(core.unb64url(token:match("^[^.]+")))
        assert.same({ alg = alg, typ = "JWT" }, header)
      end)
    end

    it("round-trips ES256 with a generated key, and verifies with the public key alone", function()
      local dir = os.tmpname()
      os.remove(dir)
      os.execute("mkdir -p " .. dir .. " && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 " ..
        "-out " .. dir .. "/k.pem 2>/dev/null && openssl pkey -in " .. dir .. "/k.pem -pubout -out " ..
        dir .. "/p.pem 2>/dev/null")
      finally(function() os.execute("rm -rf " .. dir) end)
      local read = function(p) local f = assert(io.open(p)); local s = f:read("*a"); f:close(); return s end
      local signer = make{ algorithm = "ES256", private_key = read(dir .. "/k.pem") }
      local verifier = make{ algorithm = "ES256", public_key = read(dir .. "/p.pem") }
      local token = assert(signer:issue("u", nil, 60))
      assert.equal("u", assert(verifier:verify(token)).sub)
      assert.has_error(function() verifier:issue("u") end, "auth.jwt: this key can verify only (no private key)")
    end)

    it("refuses alg none, another algorithm and forged headers", function()
      local a = make()
      local token = assert(a:issue("user:1"))
      local _, payload, sig = token:match("^([^.]+)%.([^.]+)%.([^.]*)$")
      local function with_header(h, s) return core.b64url(h) .. "." .. payload .. "." .. (s or sig) end
      local rows = {
        { "alg none, no signature", with_header('{"alg":"none","typ":"JWT"}', "") },
        { "alg none, the old signature", with_header('{"alg":"none"}') },
        { "alg NONE", with_header('{"alg":"NONE"}', "") },
        { "HS512 header on an HS256 key", with_header('{"alg":"HS512"}') },
        { "HS256 header with crit", with_header('{"alg":"HS256","crit":["exp"]}') },
        { "a header that is not JSON", with_header("alg HS256") },
        { "no alg", with_header('{"typ":"JWT"}') },
        { "an empty signature", token:gsub("[^.]+$", "") },
        { "two segments", token:match("^[^.]+%.[^.]+") },
        { "four segments", token .. ".x" },
        { "a flipped signature", token:sub(1, -2) .. (token:sub(-1) == "A" and "B" or "A") },
        { "a reordered header under the old signature", with_header('{"typ":"JWT","alg":"HS256"}') },
      }
      -- The last row's header is acceptable, but it changes the bytes the signature covers.
      for _, row in ipairs(rows) do
        local v, err = a:verify(row[2])
        assert.is_nil(v, row[1])
        assert.equal("invalid", err.code, row[1])
      end
    end)

    it("refuses algorithm confusion: an HS256 token whose secret is the public key", function()
      local pub = ed25519_public(ED_X)
      local a = make{ algorithm = "EdDSA", public_key = pub }
      local header = core.b64url('{"alg":"HS256","typ":"JWT"}')
      local body = core.b64url(json.encode({ sub = "admin", exp = T0 + 600 }))
      for _, secret in ipairs({ pub, ED_X }) do
        local forged = header .. "." .. body .. "." .. core.b64url(core.hmac(256, secret, header .. "." .. body))
        local v, err = a:verify(forged)
        assert.is_nil(v)
        assert.equal("invalid", err.code)
        assert.matches("not EdDSA", err.message)
      end
      -- An EdDSA instance never takes an HMAC secret, and keys of the wrong type are refused.
      assert.has_error(function() auth.new{ algorithm = "ES256", public_key = pub } end,
        "auth.jwt: the key is an EdDSA key, not ES256")
      assert.has_error(function() auth.new{ algorithm = "HS256", secret = "short" } end,
        "auth.jwt: HS256 needs a secret of at least 32 bytes")
      assert.has_error(function() auth.new{ algorithm = "none" } end)
    end)

    it("checks exp, nbf, iat, iss and aud with leeway", function()
      local a = make{ issuer = "app", audience = "api", leeway = 30 }
      local function token_with(claims)
        local h = core.b64url('{"alg":"HS256","typ":"JWT"}')
        local input = h .. "." .. core.b64url(json.encode(claims))
        return input .. "." .. core.b64url(core.hmac(256, SECRET, input))
      end
      local base = { sub = "u", iss = "app", aud = "api" }
      local function with(extra)
        local c = {}
        for k, v in pairs(base) do c[k] = v end
        for k, v in pairs(extra) do c[k] = v end
        return token_with(c)
      end
      local rows = {
        { "exp in the future", { exp = T0 + 1 }, true },
        { "exp within leeway", { exp = T0 - 29 }, true },
        { "exp past leeway", { exp = T0 - 30 }, "expired" },
        { "no exp", {}, "invalid" },
        { "exp a string", { exp = "later" }, "invalid" },
        { "nbf within leeway", { exp = T0 + 60, nbf = T0 + 30 }, true },
        { "nbf past leeway", { exp = T0 + 60, nbf = T0 + 31 }, "invalid" },
        { "iat in the future", { exp = T0 + 60, iat = T0 + 31 }, "invalid" },
        { "iat now", { exp = T0 + 60, iat = T0 }, true },
        { "wrong iss", { exp = T0 + 60, iss = "other" }, "invalid" },
        { "no iss", { exp = T0 + 60, iss = json.null }, "invalid" },
        { "aud in a list", { exp = T0 + 60, aud = { "x", "api" } }, true },
        { "wrong aud", { exp = T0 + 60, aud = "web" }, "invalid" },
      }
      for _, row in ipairs(rows) do
        local v, err = a:verify(with(row[2]))
        if row[3] == true then
          assert.is_not_nil(v, row[1])
        else
          assert.is_nil(v, row[1])
          assert.equal(row[3], err.code, row[1])
        end
      end
    end)

    it("revokes a token by its jti until it would expire", function()
      local revoked = cache.new{ name = "auth-spec-" .. math.random(1e9) }
      finally(function() revoked:close() end)
      local a = make{ revoked = revoked }
      local token, c = assert(a:issue("u", nil, 600))
      local other = assert(a:issue("u", nil, 600))
      assert.is_true(a:revoke(c.jti))
      local v, err = a:verify(token)
      assert.is_nil(v)
      assert.equal("revoked", err.code)
      assert.is_not_nil(a:verify(other))
      assert.equal("unsupported", select(2, make():revoke("x")).code)
    end)

    it("raises on misuse", function()
      local a = make()
      assert.has_error(function() a:issue("") end, "auth:issue: subject must be a non-empty string")
      assert.has_error(function() a:issue("u", { exp = 1 }) end, "auth:issue: claim exp is set by issue itself")
      assert.has_error(function() a:verify(nil) end, "auth:verify: token must be a string")
      assert.has_error(function() a:issue("u", nil, -1) end)
    end)
  end)

  describe("session adapter", function()
    it("issues opaque tokens on the session store and revokes them at once", function()
      local now = T0
      local store = session.new{ name = "auth-tokens-" .. math.random(1e9), clock = function() return now end }
      local a = auth.new{ adapter = "session", store = store, clock = function() return now end }
      local token, c = assert(a:issue("user:5", { scope = "read" }, 120))
      assert.equal(43, #token)
      assert.equal(token, c.jti)
      local claims = assert(a:verify(token))
      assert.same({ "user:5", "read" }, { claims.sub, claims.scope })
      now = now + 121
      assert.equal("expired", select(2, a:verify(token)).code)
      now = T0
      local t2 = assert(a:issue("user:5"))
      assert.is_true(a:revoke(t2))
      assert.equal("invalid", select(2, a:verify(t2)).code)
      assert.has_error(function()
        auth.new{ adapter = "session", store = session.new{ adapter = "cookie" } }
      end)
    end)
  end)

  describe("zever.middleware.auth over HTTP", function()
    local app, srv, a
    before_each(function()
      local zever = require "zever"
      a = auth.new{ secret = SECRET, realm = "notes" }
      app = zever.app()
      app:group("/api", function(r)
        r:use(zever.middleware.auth{ auth = a })
        r:get("/me", function(req) return { sub = req.user.sub } end)
      end)
      app:group("/open", function(r)
        r:use(zever.middleware.auth{ auth = a, optional = true })
        r:get("/me", function(req) return { sub = req.user and req.user.sub or json.null } end)
      end)
      srv = testing.serve(app)
    end)
    after_each(function()
      srv:close()
      app:close()
    end)

    local function get(path, token)
      local out = hs.curl(("-D - %s %s"):format(token and ("-H 'Authorization: Bearer " .. token .. "'") or "",
        srv:url(path)))
      local head, body = out:match("^(.-\r\n\r\n)(.*)$")
      return head, json.decode(body)
    end

    it("answers 401 with a Bearer challenge without a token", function()
      local head, body = get("/api/me")
      assert.matches("^HTTP/1.1 401", head)
      assert.matches('\r\n[Ww][Ww][Ww]%-[Aa]uthenticate: Bearer realm="notes"\r\n', head)
      assert.same({ error = "unauthenticated" }, body)
    end)

    it("says invalid_token for a refused token", function()
      local head = get("/api/me", "not.a.token")
      assert.matches('Bearer realm="notes", error="invalid_token"\r\n', head)
    end)

    it("sets req.user from a valid bearer token", function()
      local token = assert(a:issue("user:9"))
      local head, body = get("/api/me", token)
      assert.matches("^HTTP/1.1 200", head)
      assert.equal("user:9", body.sub)
    end)

    it("lets an optional route through without a user", function()
      local _, body = get("/open/me")
      assert.equal(json.null, body.sub)
      local _, body2 = get("/open/me", assert(a:issue("u2")))
      assert.equal("u2", body2.sub)
    end)
  end)

  describe(".zen auth: required", function()
    it("authenticates generated routes through auth:rpc_options and challenges with 401", function()
      local rpc = require "zever.rpc"
      local zever = require "zever"
      local a = auth.new{ secret = SECRET }
      local routes = rpc.routes({ types = {}, rpcs = {
        { service = "Notes", name = "Mine", method = "GET", path = "/notes", pattern = "/notes",
          handlers = "notes", auth = "required", output = "Out", errors = {}, inputs = {} },
      } })
      local app = zever.app()
      local seen
      routes.register(app, { Notes = { Mine = function(_, ctx) seen = ctx.principal; return { n = 1 } end } },
        a:rpc_options())
      local res = testing.request(app, "GET", "/notes")
      assert.equal(401, res.status)
      assert.equal('Bearer realm="zever"', res.headers["www-authenticate"])
      res = testing.request(app, "GET", "/notes", { headers = { authorization = "Bearer " .. a:issue("user:3") } })
      assert.equal(200, res.status)
      assert.equal("user:3", seen.sub)
    end)
  end)

  describe("app.auth", function()
    it("resolves jwt from config with a secret derived from crypto.keys", function()
      local config = require "zever.config"
      local container = require "zever.container"
      local keys = "k1:" .. core.b64url(string.rep("z", 32))
      local cfg = assert(config.load{ dir = "/nonexistent-zever-dir", env = { CRYPTO_KEYS = keys,
        AUTH_ISSUER = "me", AUTH_TTL = "10m" } })
      local c = container.new(cfg)
      finally(function() c:close(); require("zever.crypto").set_default(nil) end)
      local a = assert(c:get("auth"))
      local token, claims = assert(a:issue("user:1"))
      assert.equal(claims.iat + 600, claims.exp)
      assert.equal("me", assert(a:verify(token)).iss)
      assert.is_true(a:revoke(claims.jti))                     -- on the cache battery
      assert.equal("revoked", select(2, a:verify(token)).code)
      local shown = config.redact(config.load{ dir = "/nonexistent-zever-dir",
        env = { AUTH_SECRET = string.rep("s", 40) } })
      assert.equal("[REDACTED]", shown.auth.secret)
    end)
  end)
end)
