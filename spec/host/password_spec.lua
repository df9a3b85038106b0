-- zever.password_core: argon2id known-answer vectors (RFC 9106 and the reference
-- implementation's), the PHC string, verification and parameter parsing of hostile input.

local core = require "zever.password_core"

local function hex(s) return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end)) end

describe("zever.password_core", function()
  describe("known answers", function()
    it("matches RFC 9106 section 5.3 (argon2id with secret and associated data)", function()
      local tag = core.raw(("\1"):rep(32), ("\2"):rep(16), ("\3"):rep(8), ("\4"):rep(12), 3, 32, 4, 32)
      assert.equal("0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659", hex(tag))
    end)

    -- The reference implementation's test.c (phc-winner-argon2), argon2id, version 0x13.
    local rows = {
      { 2, 65536, 1, "password", "somesalt",
        "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc" },
      { 2, 256, 1, "password", "somesalt",
        "$argon2id$v=19$m=256,t=2,p=1$c29tZXNhbHQ$nf65EOgLrQMR/uIPnA4rEsF5h7TKyQwu9U1bMCHGi/4" },
      { 2, 256, 2, "password", "somesalt",
        "$argon2id$v=19$m=256,t=2,p=2$c29tZXNhbHQ$bQk8UB/VmZZF4Oo79iDXuL5/0ttZwg2f/5U52iv1cDc" },
      { 1, 65536, 1, "password", "somesalt",
        "$argon2id$v=19$m=65536,t=1,p=1$c29tZXNhbHQ$9qWtwbpyPd3vm1rB1GThgPzZ3/ydHL92zKL+15XZypg" },
    }
    for _, row in ipairs(rows) do
      it(("writes and verifies t=%d m=%d p=%d"):format(row[1], row[2], row[3]), function()
        assert.equal(row[6], core.hash_sync(row[4], row[5], row[1], row[2], row[3], 32))
        assert.is_true(core.verify_sync(row[6], row[4]))
        assert.is_false(core.verify_sync(row[6], "passwore"))
      end)
    end
  end)

  describe("params", function()
    it("reads the parameters of a PHC string", function()
      assert.same({ 2, 19456, 1, 32 },
        { core.params("$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc") })
    end)

    it("refuses anything else without allocating argon2 memory for it", function()
      local rows = { "", "garbage", "$argon2i$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        "$argon2id$v=16$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        "$argon2id$v=19$m=4294967295,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        "$argon2id$v=19$m=99999999999,t=2,p=1$c29tZXNhbHQ$CTFh",
        "$argon2id$v=19$m=65536,t=0,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
        "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$!!!!", "$argon2id$v=19$m=65536,t=2,p=1" }
      for _, e in ipairs(rows) do
        assert.is_nil(core.params(e), e)
        local ok, msg = core.verify_sync(e, "password")
        assert.is_nil(ok, e)
        assert.equal("not an argon2id hash", msg)
      end
      assert.is_nil((core.verify_sync("$argon2id$v=19\0$m=1", "x")))
    end)

    it("raises for parameters out of range", function()
      assert.has_error(function() core.hash_sync("pw", "short", 2, 256, 1, 32) end)
      assert.has_error(function() core.hash_sync("pw", "somesalt", 0, 256, 1, 32) end)
      assert.has_error(function() core.hash_sync("pw", "somesalt", 2, 4, 1, 32) end)
      assert.has_error(function() core.hash_sync(("x"):rep(4097), "somesalt", 2, 256, 1, 32) end)
    end)
  end)
end)
