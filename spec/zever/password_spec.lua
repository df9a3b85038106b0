-- zever.password: hash / verify / needs_rehash with argon2id, off the event loop, from config.

local password = require "zever.password"
local sched = require "zever.sched"
local loop = require "zever.loop"
local testing = require "zever.testing"

-- Small parameters keep the suite fast; the defaults are checked separately.
local FAST = { memory_kib = 256, iterations = 1, parallelism = 1 }

describe("zever.password", function()
  it("hashes with a fresh salt each time and verifies", function()
    local p = password.new(FAST)
    local a = assert(p:hash("correct horse"))
    local b = assert(p:hash("correct horse"))
    assert.not_equal(a, b)
    assert.matches("^%$argon2id%$v=19%$m=256,t=1,p=1%$", a)
    assert.is_true(p:verify("correct horse", a))
    assert.is_true(p:verify("correct horse", b))
    assert.is_false(p:verify("correct horsf", a))
    assert.is_false(p:verify("", a))
    assert.is_true(p:verify("", assert(p:hash(""))))
    assert.is_true(p:verify("p\0w\255", assert(p:hash("p\0w\255"))))
  end)

  it("uses OWASP's parameters by default", function()
    local encoded = assert(password.hash("pw"))
    assert.matches("^%$argon2id%$v=19%$m=19456,t=2,p=1%$", encoded)
    assert.is_true(password.verify("pw", encoded))
    assert.is_false(password.needs_rehash(encoded))
  end)

  it("says a hash needs rehashing when the parameters change", function()
    local old = assert(password.new(FAST):hash("pw"))
    local p = password.new{ memory_kib = 512, iterations = 1, parallelism = 1 }
    assert.is_true(p:needs_rehash(old))
    assert.is_true(p:verify("pw", old))                    -- old hashes still verify
    local new = assert(p:hash("pw"))
    assert.is_false(p:needs_rehash(new))
    assert.is_true(p:needs_rehash("not a hash"))
  end)

  it("returns invalid for a stored value that is not an argon2id hash", function()
    local ok, err = password.new(FAST):verify("pw", "$2b$12$abcdefghijklmnopqrstuv")
    assert.is_nil(ok)
    assert.equal("invalid", err.code)
    assert.equal("password", err.battery)
  end)

  it("raises on misuse", function()
    local p = password.new(FAST)
    assert.has_error(function() p:hash(nil) end, "password:hash: password must be a string")
    assert.has_error(function() p:hash(("x"):rep(4097)) end,
      "password:hash: password is longer than 4096 bytes")
    assert.has_error(function() p:verify("x", 1) end, "password:verify: encoded must be a string")
    assert.has_error(function() password.new{ memory_kib = 4 } end)
    assert.has_error(function() password.new{ iterations = 0 } end)
  end)

  it("returns closed after close", function()
    local p = password.new(FAST)
    assert.is_true(p:close())
    assert.equal("closed", select(2, p:hash("x")).code)
    assert.equal("closed", select(2, p:verify("x", "y")).code)
  end)

  it("hashes off the event loop: the loop runs other callbacks while a hash is computed", function()
    -- Heavy enough that a synchronous hash would finish before the loop turns once.
    local p = password.new{ memory_kib = 65536, iterations = 3, parallelism = 1 }
    local order = {}
    local done = false
    sched.spawn(function()
      local encoded = p:hash("pw")
      order[#order + 1] = "hashed"
      assert.is_true(p:verify("pw", encoded))
      order[#order + 1] = "verified"
      done = true
    end)
    -- The coroutine is waiting now; the loop is free: a zero-delay timer fires first.
    loop.after(0, function() order[#order + 1] = "timer" end)
    assert.is_true(testing.run_until(function() return done end, 60))
    assert.same({ "timer", "hashed", "verified" }, order)
  end)

  it("resolves app.password from the password config section", function()
    local config = require "zever.config"
    local container = require "zever.container"
    local cfg = assert(config.load{ dir = "/nonexistent-zever-dir", env = {
      PASSWORD_MEMORY_KIB = "1024", PASSWORD_ITERATIONS = "1" } })
    local c = container.new(cfg)
    finally(function() c:close() end)
    local p = assert(c:get("password"))
    local encoded = assert(p:hash("pw"))
    assert.matches("^%$argon2id%$v=19%$m=1024,t=1,p=1%$", encoded)
    assert.is_true(p:verify("pw", encoded))
  end)
end)
