-- zever.crypto_core: AES-256-GCM (NIST / the GCM specification's test cases 13-18), HMAC
-- (RFC 4231), base64url (RFC 4648 section 5), random bytes and constant-time comparison.

local core = require "zever.crypto_core"

local function unhex(s) return (s:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end)) end
local function hex(s) return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end)) end

describe("zever.crypto_core", function()
  describe("AES-256-GCM", function()
    local K15 = "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"
    local P = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72" ..
      "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255"
    local P60 = P:sub(1, 120)
    local A = "feedfacedeadbeeffeedfacedeadbeefabaddad2"
    local IV60 = "9313225df88406e555909c5aff5269aa6a7a9538534f7da1e4c303d2a318a728" ..
      "c3c0c95156809539fcf0e2429a6b525416aedbf5a0de6a57a637b39b"
    -- { name, key, iv, plaintext, aad, ciphertext, tag } (hex), from McGrew & Viega, "The
    -- Galois/Counter Mode of Operation", appendix B (the NIST submission's test vectors).
    local rows = {
      { "test case 13: empty", ("00"):rep(32), ("00"):rep(12), "", "", "",
        "530f8afbc74536b9a963b4f1c4cb738b" },
      { "test case 14: one zero block", ("00"):rep(32), ("00"):rep(12), ("00"):rep(16), "",
        "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919" },
      { "test case 15: four blocks", K15, "cafebabefacedbaddecaf888", P, "",
        "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa" ..
        "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
        "b094dac5d93471bdec1a502270e3cc6c" },
      { "test case 16: additional data", K15, "cafebabefacedbaddecaf888", P60, A,
        "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa" ..
        "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
        "76fc6ece0f4e1768cddf8853bb2d551b" },
      { "test case 17: a 64-bit IV", K15, "cafebabefacedbad", P60, A,
        "c3762df1ca787d32ae47c13bf19844cbaf1ae14d0b976afac52ff7d79bba9de0" ..
        "feb582d33934a4f0954cc2363bc73f7862ac430e64abe499f47c9b1f",
        "3a337dbf46a792c45e454913fe2ea8f2" },
      { "test case 18: a 480-bit IV", K15, IV60, P60, A,
        "5a8def2f0c9e53f1f75d7853659e2a20eeb2b22aafde6419a058ab4f6f746bf4" ..
        "0fc0c3b780f244452da3ebf1c5d82cdea2418997200ef82e44ae7e3f",
        "a44a8266ee1c8eb0c8b5d4cf5ae9f19a" },
    }
    for _, row in ipairs(rows) do
      it("encrypts and decrypts " .. row[1], function()
        local a = core.aead(unhex(row[2]))
        local out = a:seal(unhex(row[3]), unhex(row[4]), unhex(row[5]))
        assert.equal(row[6] .. row[7], hex(out))
        assert.equal(row[4], hex(a:open(unhex(row[3]), out, unhex(row[5]))))
      end)
    end

    it("refuses a flipped bit anywhere, another IV and other additional data", function()
      local a = core.aead(unhex(K15))
      local iv, aad = unhex("cafebabefacedbaddecaf888"), unhex(A)
      local out = a:seal(iv, unhex(P60), aad)
      for i = 1, #out do
        local bad = out:sub(1, i - 1) .. string.char(bit.bxor(out:byte(i), 1)) .. out:sub(i + 1)
        assert.is_nil(a:open(iv, bad, aad), "byte " .. i)
      end
      assert.is_nil(a:open(unhex("cafebabefacedbaddecaf889"), out, aad))
      assert.is_nil(a:open(iv, out, aad .. "x"))
      assert.is_nil(a:open(iv, out))
      assert.is_nil(a:open(iv, out:sub(1, 15)))   -- shorter than a tag
      assert.is_nil(a:open(iv, ""))
    end)

    it("seals and opens 1 MB (past the stack buffer)", function()
      local a = core.aead(string.rep("k", 32))
      local big = string.rep("0123456789abcdef", 65536)
      local out = a:seal("123456789012", big)
      assert.equal(#big + 16, #out)
      assert.equal(big, a:open("123456789012", out))
    end)

    it("raises for a key that is not 32 bytes", function()
      assert.has_error(function() core.aead(string.rep("k", 16)) end)
      assert.has_error(function() core.aead(string.rep("k", 33)) end)
    end)
  end)

  describe("HMAC", function()
    local big_key = ("aa"):rep(131)
    -- RFC 4231 test cases 1, 2, 3, 4, 6 and 7: { case, key, data, bits, mac } (hex key).
    local rows = {
      { 1, ("0b"):rep(20), "Hi There", 256,
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
      { 1, ("0b"):rep(20), "Hi There", 384,
        "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59c" ..
        "faea9ea9076ede7f4af152e8b2fa9cb6" },
      { 1, ("0b"):rep(20), "Hi There", 512,
        "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cde" ..
        "daa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854" },
      { 2, hex("Jefe"), "what do ya want for nothing?", 256,
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
      { 2, hex("Jefe"), "what do ya want for nothing?", 384,
        "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e" ..
        "8e2240ca5e69e2c78b3239ecfab21649" },
      { 2, hex("Jefe"), "what do ya want for nothing?", 512,
        "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554" ..
        "9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737" },
      { 3, ("aa"):rep(20), unhex(("dd"):rep(50)), 256,
        "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe" },
      { 4, "0102030405060708090a0b0c0d0e0f10111213141516171819", unhex(("cd"):rep(50)), 256,
        "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b" },
      { 6, big_key, "Test Using Larger Than Block-Size Key - Hash Key First", 256,
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" },
      { 7, big_key, "This is a test using a larger than block-size key and a larger than " ..
        "block-size data. The key needs to be hashed before being used by the HMAC algorithm.", 256,
        "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2" },
    }
    for _, row in ipairs(rows) do
      it(string.format("matches RFC 4231 test case %d with SHA-%d", row[1], row[4]), function()
        assert.equal(row[5], hex(core.hmac(row[4], unhex(row[2]), row[3])))
        assert.equal(row[5], hex(core.mac(row[4], unhex(row[2])):compute(row[3])))
      end)
    end

    it("gives the same MAC on every reuse of a keyed context, and takes an empty key", function()
      local m = core.mac(256, "key")
      local first = m:compute("msg")
      for _ = 1, 100 do assert.equal(first, m:compute("msg")) end
      assert.not_equal(first, m:compute("msg2"))
      assert.equal(32, #core.hmac(256, "", ""))
    end)

    it("raises for a digest size it does not know", function()
      assert.has_error(function() core.hmac(1, "k", "m") end)
      assert.has_error(function() core.mac(224, "k") end)
    end)
  end)

  describe("SHA-2 digests", function()
    -- FIPS 180-2's "abc" and empty-string vectors (as sha256sum / sha384sum / sha512sum print).
    local rows = {
      { 256, "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
      { 256, "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
      { 384, "abc", "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed" ..
        "8086072ba1e7cc2358baeca134c825a7" },
      { 512, "abc", "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a" ..
        "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f" },
    }
    for _, row in ipairs(rows) do
      it("gives SHA-" .. row[1] .. " of '" .. row[2] .. "'", function()
        assert.equal(row[3], hex(core.digest(row[1], row[2])))
      end)
    end

    it("raises for a digest size it does not know", function()
      assert.has_error(function() core.digest(224, "m") end)
    end)
  end)

  describe("base64url", function()
    -- RFC 4648 section 10 vectors in the URL-safe alphabet without padding.
    local rows = { { "", "" }, { "f", "Zg" }, { "fo", "Zm8" }, { "foo", "Zm9v" }, { "foob", "Zm9vYg" },
      { "fooba", "Zm9vYmE" }, { "foobar", "Zm9vYmFy" }, { "\251\255\254", "-__-" } }
    for _, row in ipairs(rows) do
      it(string.format("round-trips %q", row[1]), function()
        assert.equal(row[2], core.b64url(row[1]))
        assert.equal(row[1], core.unb64url(row[2]))
      end)
    end

    it("refuses padding, other alphabets, a lone character and non-canonical text", function()
      for _, bad in ipairs({ "Zg==", "Zm9v+", "Zm9v/", "Z", "Zm9vY", "Zh", "Zm9 v", "Zm9v\0" }) do
        assert.is_nil(core.unb64url(bad), bad)
      end
    end)
  end)

  describe("random and equal", function()
    it("draws fresh bytes every call", function()
      local seen = {}
      for _ = 1, 1000 do
        local r = core.random(16)
        assert.equal(16, #r)
        assert.is_nil(seen[r])
        seen[r] = true
      end
      assert.equal("", core.random(0))
      assert.has_error(function() core.random(-1) end)
    end)

    it("keeps one process key for every call", function()
      local k = core.process_key()
      assert.equal(32, #k)
      assert.equal(k, core.process_key())
    end)

    it("compares strings", function()
      assert.is_true(core.equal("abc", "abc"))
      assert.is_false(core.equal("abc", "abd"))
      assert.is_false(core.equal("abc", "ab"))
      assert.is_true(core.equal("", ""))
    end)
  end)
end)
