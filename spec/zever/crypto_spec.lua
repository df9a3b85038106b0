-- zever.crypto: the keyring (the crypto battery, adapter local): sealing with key ids, signing,
-- rotation, the closed guard, keys from config (redacted by `zever config show`, never in an
-- error), and the keyless helpers.

local crypto = require "zever.crypto"
local config = require "zever.config"
local container = require "zever.container"
local process = require "spec.support.process"
local tmpdir = require("spec.support.files").tmpdir

local function key(byte) return string.rep(string.char(byte), 32) end
local function b64(s) return (crypto.b64url(s)) end

describe("zever.crypto", function()
  describe("keyring", function()
    local ring
    before_each(function()
      ring = crypto.new{ keys = { { id = "k2", key = key(2) }, { id = "k1", key = key(1) } } }
    end)

    it("encrypts with a fresh nonce each time and decrypts with the additional data", function()
      local a, b = ring:encrypt("hello", "ctx"), ring:encrypt("hello", "ctx")
      assert.not_equal(a, b)
      assert.is_nil(a:find("hello", 1, true))
      assert.equal("hello", ring:decrypt(a, "ctx"))
      assert.equal("hello", ring:decrypt(b, "ctx"))
      assert.equal("", ring:decrypt(ring:encrypt("")))
      local v, err = ring:decrypt(a, "other")
      assert.is_nil(v)
      assert.equal("invalid", err.code)
      assert.equal("crypto", err.battery)
    end)

    it("writes the active key's id and decrypts with any key of the ring", function()
      local sealed = ring:encrypt("x")
      assert.equal("\1\2k2", sealed:sub(1, 4))
      local old = crypto.new{ keys = { { id = "k1", key = key(1) } } }
      assert.equal("x", ring:decrypt(old:encrypt("x")))
      assert.is_nil(old:decrypt(sealed))                        -- k2 unknown to the old ring
      assert.same({ "k2", "k1" }, ring.ids)
    end)

    it("refuses truncated, re-labelled and garbage input without raising", function()
      local sealed = ring:encrypt("secret")
      local relabel = sealed:sub(1, 2) .. "k1" .. sealed:sub(5)  -- k2's ciphertext under k1
      for _, bad in ipairs({ "", "\1", "\2\2k2", sealed:sub(1, #sealed - 1), sealed:sub(1, 20),
        relabel, string.rep("\0", 64), sealed .. "x" }) do
        local v, err = ring:decrypt(bad)
        assert.is_nil(v)
        assert.equal("invalid", err.code)
      end
    end)

    it("signs with the active key and verifies with any", function()
      local mac = ring:sign("msg")
      assert.equal(32, #mac)
      assert.is_true(ring:verify("msg", mac))
      assert.is_false(ring:verify("msg2", mac))
      assert.is_false(ring:verify("msg", mac:sub(1, 31)))
      local old = crypto.new{ keys = { { id = "k1", key = key(1) } } }
      assert.is_true(ring:verify("msg", old:sign("msg")))
      assert.is_false(old:verify("msg", mac))
    end)

    it("derives its AES and HMAC keys from the configured key, never using it directly", function()
      local sig = ring:sign("m")
      assert.not_equal(crypto.hmac("sha256", key(2), "m"), sig)
      assert.equal(crypto.hmac("sha256", crypto.hmac("sha256", key(2), "zever hmac-sha256"), "m"), sig)
    end)

    it("returns closed after close, and still raises on misuse", function()
      assert.is_true(ring:close())
      assert.is_true(ring:close())
      local v, err = ring:encrypt("x")
      assert.is_nil(v)
      assert.equal("closed", err.code)
      assert.equal("closed", select(2, ring:decrypt("x")).code)
      assert.equal("closed", select(2, ring:sign("x")).code)
      assert.has_error(function() ring:encrypt(1) end, "crypto:encrypt: plaintext must be a string")
    end)

    it("raises on misuse, naming the key by id only", function()
      assert.has_error(function() ring:encrypt("x", 5) end, "crypto:encrypt: aad must be a string")
      assert.has_error(function() ring:verify("x") end, "crypto:verify: mac must be a string")
      assert.has_error(function() crypto.new{ keys = {} } end)
      local ok, err = pcall(crypto.new, { keys = { { id = "short", key = "0123456789" } } })
      assert.is_false(ok)
      assert.matches("key short must be 32 bytes", err)
      assert.is_nil(err:find("0123456789", 1, true))
    end)
  end)

  describe("keys text", function()
    local adapter = require "adapters.crypto.local"

    it("reads base64 and base64url keys, the first active", function()
      local std = "k2:" .. ("AQEB"):rep(10) .. "AQE="                  -- base64 with padding
      local text = "k3:" .. b64(key(3)) .. ", " .. std
      local keys = assert(adapter.parse_keys(text))
      assert.equal(2, #keys)
      assert.equal("k3", keys[1].id)
      assert.equal(key(3), keys[1].key)
      assert.equal(32, #keys[2].key)
      local ring = crypto.new{ keys = text }
      assert.same({ "k3", "k2" }, ring.ids)
    end)

    it("names the bad key's id and never its value", function()
      local secret = b64(string.rep("z", 31))
      local rows = {
        { "k1:" .. secret, 'key "k1" is not 32 bytes' },
        { "k1:" .. b64(key(1)) .. ",k1:" .. b64(key(2)), 'key id "k1" appears twice' },
        { "no-colon", "want \"id:base64key\"" },
        { "", "no key" },
      }
      for _, row in ipairs(rows) do
        local keys, err = adapter.parse_keys(row[1])
        assert.is_nil(keys)
        assert.equal("invalid", err.code)
        assert.matches(row[2], err.message, 1, true)
        assert.is_nil(err.message:find(secret, 1, true))
      end
    end)
  end)

  describe("app.crypto", function()
    it("resolves the configured keys and becomes the default keyring", function()
      local text = "live:" .. b64(key(9))
      local cfg = assert(config.load{ dir = "/nonexistent-zever-dir", env = { CRYPTO_KEYS = text } })
      local c = container.new(cfg)
      finally(function() c:close(); crypto.set_default(nil) end)
      local ring = assert(c:get("crypto"))
      assert.same({ "live" }, ring.ids)
      assert.equal(ring, crypto.default())
      local other = crypto.new{ keys = { { id = "live", key = key(9) } } }
      assert.equal("v", other:decrypt(ring:encrypt("v")))
    end)

    it("reports a bad key as a config error without the key", function()
      local secret = b64(string.rep("q", 20))
      local cfg = assert(config.load{ dir = "/nonexistent-zever-dir", env = { CRYPTO_KEYS = "a:" .. secret } })
      local c = container.new(cfg)
      finally(function() c:close() end)
      local ring, err = c:get("crypto")
      assert.is_nil(ring)
      assert.matches('key "a" is not 32 bytes', tostring(err), 1, true)
      assert.is_nil(tostring(err):find(secret, 1, true))
    end)

    it("falls back to one process key shared by every keyring without keys", function()
      local a, b = crypto.new(), crypto.new()
      assert.equal("x", b:decrypt(a:encrypt("x")))
    end)

    it("is redacted by zever config show", function()
      local secret = b64(key(5))
      local dir = tmpdir({ ["zever.yaml"] = "crypto:\n  keys: \"k1:" .. secret .. "\"\n" })
      finally(function() os.execute("rm -rf '" .. dir .. "'") end)
      local r = process.run("cd " .. process.quote(dir) .. " && env -u ZEVER_ENV " ..
        process.quote(require("zever.sys").exe()) .. " config show")
      assert.equal(0, r.code)
      assert.matches('\ncrypto:\n  adapter: local\n  keys: "%[REDACTED%]"\n', r.stdout)
      assert.is_nil(r.stdout:find(secret, 1, true))
      assert.is_nil(config.redact({ crypto = { keys = secret } }).crypto.keys:find(secret, 1, true))
    end)
  end)

  describe("keyless helpers", function()
    it("makes URL-safe tokens of the asked size", function()
      local t = crypto.token()
      assert.equal(43, #t)
      assert.matches("^[%w_%-]+$", t)
      assert.equal(16, #crypto.unb64url(crypto.token(16)))
      assert.not_equal(crypto.token(), crypto.token())
      assert.has_error(function() crypto.token(0) end)
    end)

    it("encrypts raw AES-GCM and checks arguments", function()
      local ct, tag = crypto.aes_gcm_encrypt(key(0), ("\0"):rep(12), ("\0"):rep(16))
      assert.equal(16, #ct)
      assert.equal(16, #tag)
      assert.equal(("\0"):rep(16), crypto.aes_gcm_decrypt(key(0), ("\0"):rep(12), ct, tag))
      assert.is_nil(crypto.aes_gcm_decrypt(key(0), ("\0"):rep(12), ct, ("\0"):rep(16)))
      assert.has_error(function() crypto.aes_gcm_encrypt("short", "iv", "x") end,
        "crypto.aes_gcm_encrypt: key must be 32 bytes")
      assert.has_error(function() crypto.hmac("md5", "k", "m") end)
      assert.is_true(crypto.equal("a", "a"))
      assert.has_error(function() crypto.equal("a", nil) end)
    end)
  end)
end)
