-- zever.cookie and the cookie methods of requests and responses: Set-Cookie serialization
-- (golden rows), validation that keeps headers intact, signed and encrypted cookies with key
-- rotation, and a real client (curl with a cookie jar) against a served app.

local cookie = require "zever.cookie"
local crypto = require "zever.crypto"
local request = require "zever.request"
local response = require "zever.response"
local testing = require "zever.testing"
local hs = require "spec.support.http_script"

local function key(byte) return string.rep(string.char(byte), 32) end

-- The Set-Cookie values of a response, in order.
local function set_cookies(res)
  local out, h = {}, res.headers
  for i = 1, #h, 2 do
    if h[i] == "Set-Cookie" then out[#out + 1] = h[i + 1] end
  end
  return out
end

-- A request whose Cookie header holds the name=value parts of the given Set-Cookie values.
local function request_with(list)
  local parts = {}
  for i, v in ipairs(list) do parts[i] = v:match("^[^;]*") end
  local header = table.concat(parts, "; ")
  local src = { header = function(_, n) if n == "cookie" then return header end end }
  return request.new("GET", "/", nil, {}, src)
end

describe("zever.cookie", function()
  describe("serialize", function()
    -- { name, cookie name, value, opts, expected Set-Cookie value }
    local rows = {
      { "a bare cookie", "a", "1", nil, "a=1" },
      { "an empty value", "a", "", nil, "a=" },
      { "a number value", "n", 42, nil, "n=42" },
      { "a quoted value is kept as written", "q", '"abc"', nil, 'q="abc"' },
      { "every attribute, in a fixed order", "sid", "xyz", { path = "/", domain = "example.com",
        max_age = 3600, expires = 1700000000, secure = true, http_only = true, same_site = "strict",
        partitioned = true },
        "sid=xyz; Path=/; Domain=example.com; Max-Age=3600; Expires=Tue, 14 Nov 2023 22:13:20 GMT; " ..
        "Secure; HttpOnly; SameSite=Strict; Partitioned" },
      { "same_site in any case", "a", "1", { same_site = "LAX" }, "a=1; SameSite=Lax" },
      { "same_site none with secure", "a", "1", { same_site = "none", secure = true },
        "a=1; Secure; SameSite=None" },
      { "a negative max_age is written as 0", "a", "1", { max_age = -5 }, "a=1; Max-Age=0" },
      { "expires at the epoch", "a", "", { expires = 0 }, "a=; Expires=Thu, 01 Jan 1970 00:00:00 GMT" },
      { "a __Host- cookie with what it needs", "__Host-id", "1", { secure = true, path = "/" },
        "__Host-id=1; Path=/; Secure" },
      { "a __Secure- cookie with secure", "__Secure-id", "1", { secure = true },
        "__Secure-id=1; Secure" },
      { "false flags write nothing", "a", "1", { secure = false, http_only = false }, "a=1" },
    }
    for _, row in ipairs(rows) do
      it("writes " .. row[1], function()
        assert.equal(row[5], cookie.serialize(row[2], row[3], row[4]))
      end)
    end

    -- { name, cookie name, value, opts, part of the message }
    local bad = {
      { "a name with a space", "a b", "1", nil, "invalid cookie name" },
      { "a name with '='", "a=b", "1", nil, "invalid cookie name" },
      { "an empty name", "", "1", nil, "invalid cookie name" },
      { "a value with CR LF (header injection)", "a", "1\r\nSet-Cookie: evil=1", nil, "value has a byte" },
      { "a value with ';' (attribute injection)", "a", "1; Domain=evil.com", nil, "value has a byte" },
      { "a value with a space", "a", "x y", nil, "value has a byte" },
      { "a value with a NUL", "a", "x\0y", nil, "value has a byte" },
      { "a table value", "a", {}, nil, "value must be a string" },
      { "a path with ';'", "a", "1", { path = "/; Domain=evil.com" }, "path contains" },
      { "a path with LF", "a", "1", { path = "/\nX-Evil: 1" }, "path contains" },
      { "a domain with a space", "a", "1", { domain = "a b.com" }, "invalid domain" },
      { "a fractional max_age", "a", "1", { max_age = 1.5 }, "max_age must be" },
      { "an infinite max_age", "a", "1", { max_age = math.huge }, "max_age must be" },
      { "a string expires", "a", "1", { expires = "tomorrow" }, "expires must be" },
      { "an unknown same_site", "a", "1", { same_site = "loose" }, "same_site must be" },
      { "same_site none without secure", "a", "1", { same_site = "none" }, "needs secure" },
      { "partitioned without secure", "a", "1", { partitioned = true }, "partitioned needs" },
      { "a __Secure- cookie without secure", "__Secure-a", "1", nil, "__Secure- cookie needs" },
      { "a __Host- cookie with a domain", "__Host-a", "1",
        { secure = true, path = "/", domain = "example.com" }, "__Host- cookie needs" },
      { "a __Host- cookie without path /", "__Host-a", "1", { secure = true }, "__Host- cookie needs" },
      { "an unknown option", "a", "1", { httponly = true }, "unknown option httponly" },
    }
    for _, row in ipairs(bad) do
      it("raises for " .. row[1], function()
        local ok, err = pcall(cookie.serialize, row[2], row[3], row[4])
        assert.is_false(ok)
        assert.matches(row[5], err, 1, true)
      end)
    end

    it("blames the caller", function()
      local ok, err = pcall(function() cookie.serialize("a b", "1") end)
      assert.is_false(ok)
      assert.matches("cookie_spec.lua:%d+: cookie: invalid cookie name", err)
    end)
  end)

  describe("res:cookie and req:cookie", function()
    local ring
    before_each(function() ring = crypto.new{ keys = { { id = "k1", key = key(1) } } } end)

    it("sends one Set-Cookie header per cookie, in order", function()
      local res = response.new()
      res:cookie("a", "1"):cookie("b", "2", { path = "/", http_only = true })
      res:header("Set-Cookie", "c=3")
      res:clear_cookie("old", { path = "/app" })
      assert.same({ "a=1", "b=2; Path=/; HttpOnly", "c=3",
        "old=; Path=/app; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT" }, set_cookies(res))
    end)

    it("leaves the response untouched when a cookie is invalid", function()
      local res = response.new()
      assert.has_error(function() res:cookie("a", "x\r\nLocation: http://evil") end)
      assert.same({}, set_cookies(res))
    end)

    it("reads cookies one by one and as a table", function()
      local req = request_with({ "a=1", "b=two" })
      assert.equal("1", req:cookie("a"))
      assert.is_nil(req:cookie("zzz"))
      assert.same({ a = "1", b = "two" }, req.cookies)
      assert.equal("two", req:cookie("b"))
      assert.same({}, request_with({}).cookies)
    end)

    it("round-trips signed and encrypted values of any bytes", function()
      local value = "user=42; admin=false \0\255 \"quoted\""
      local res = response.new()
      res:cookie("s", value, { signed = true, crypto = ring, http_only = true })
      res:cookie("e", value, { encrypted = true, crypto = ring })
      local list = set_cookies(res)
      assert.matches("; HttpOnly$", list[1])
      assert.is_nil(list[2]:find("user=42", 1, true))   -- encrypted: not readable
      local req = request_with(list)
      assert.equal(value, req:cookie("s", { signed = true, crypto = ring }))
      assert.equal(value, req:cookie("e", { encrypted = true, crypto = ring }))
    end)

    it("rejects a tampered, moved or unsigned value with code invalid", function()
      local res = response.new()
      res:cookie("s", "role=user", { signed = true, crypto = ring })
      res:cookie("e", "role=user", { encrypted = true, crypto = ring })
      local s, e = set_cookies(res)[1]:match("^s=(.*)$"), set_cookies(res)[2]:match("^e=(.*)$")
      local forged = crypto.b64url("role=admin") .. s:match("%..*$")
      local flipped = e:sub(1, -2) .. (e:sub(-1) == "A" and "B" or "A")
      local rows = {
        { "s=" .. forged, "s", "signed" },           -- another value under the same MAC
        { "t=" .. s, "t", "signed" },                 -- the value moved to another cookie
        { "s=role=user", "s", "signed" },             -- never signed
        { "e=" .. flipped, "e", "encrypted" },        -- a flipped ciphertext byte
        { "f=" .. e, "f", "encrypted" },              -- moved to another cookie
        { "e=!!!", "e", "encrypted" },                -- not base64url
      }
      for _, row in ipairs(rows) do
        local req = request_with({ row[1] })
        local v, err = req:cookie(row[2], { [row[3]] = true, crypto = ring })
        assert.is_nil(v, row[1])
        assert.equal("invalid", err.code)
      end
      assert.is_nil(request_with({}):cookie("s", { signed = true, crypto = ring }))
    end)

    it("keeps reading cookies of a rotated-out key while new ones use the new key", function()
      local old = crypto.new{ keys = { { id = "old", key = key(2) } } }
      local res = response.new()
      res:cookie("s", "v1", { signed = true, crypto = old })
      res:cookie("e", "v1", { encrypted = true, crypto = old })
      local rotated = crypto.new{ keys = { { id = "new", key = key(3) }, { id = "old", key = key(2) } } }
      local req = request_with(set_cookies(res))
      assert.equal("v1", req:cookie("s", { signed = true, crypto = rotated }))
      assert.equal("v1", req:cookie("e", { encrypted = true, crypto = rotated }))
      -- New cookies are made with the new key: the old keyring alone cannot read them.
      local res2 = response.new()
      res2:cookie("s", "v2", { signed = true, crypto = rotated })
      res2:cookie("e", "v2", { encrypted = true, crypto = rotated })
      local req2 = request_with(set_cookies(res2))
      assert.is_nil(req2:cookie("s", { signed = true, crypto = old }))
      assert.is_nil(req2:cookie("e", { encrypted = true, crypto = old }))
      assert.equal("v2", req2:cookie("e", { encrypted = true, crypto = rotated }))
      -- Once the old key is removed, its cookies stop verifying.
      local dropped = crypto.new{ keys = { { id = "new", key = key(3) } } }
      assert.is_nil(req:cookie("s", { signed = true, crypto = dropped }))
      assert.is_nil(req:cookie("e", { encrypted = true, crypto = dropped }))
    end)

    it("uses the default keyring when none is passed", function()
      crypto.set_default(ring)
      finally(function() crypto.set_default(nil) end)
      local res = response.new():cookie("s", "x", { signed = true })
      assert.equal("x", request_with(set_cookies(res)):cookie("s", { signed = true, crypto = ring }))
    end)

    it("raises on misuse", function()
      local req = request_with({ "a=1" })
      assert.has_error(function() req:cookie(1) end, "req:cookie(name) wants a string")
      assert.has_error(function() req:cookie("a", "signed") end, "req:cookie: opts must be a table")
      assert.has_error(function() response.new():cookie("a", "1", "x") end,
        "res:cookie: opts must be a table")
      assert.has_error(function() response.new():cookie("a b", "1", { signed = true, crypto = ring }) end)
    end)
  end)

  describe("over HTTP", function()
    local t, srv, jar
    before_each(function()
      local app = require("zever").app()
      local ring = crypto.new{ keys = { { id = "k1", key = key(7) } } }
      app:get("/login", function(_, res)
        res:cookie("plain", "p1", { path = "/", http_only = true, same_site = "lax" })
        res:cookie("sig", "user:42", { signed = true, crypto = ring, path = "/" })
        res:cookie("enc", "secret stuff", { encrypted = true, crypto = ring, path = "/" })
        return "in"
      end)
      app:get("/me", function(req)
        return { plain = req:cookie("plain"), sig = req:cookie("sig", { signed = true, crypto = ring }),
          enc = req:cookie("enc", { encrypted = true, crypto = ring }) }
      end)
      t = app
      srv = testing.serve(app)
      jar = os.tmpname()
    end)
    after_each(function()
      srv:close()
      t:close()
      os.remove(jar)
    end)

    it("sets three cookies that curl stores and sends back", function()
      local head = hs.curl("-D - -o /dev/null -c " .. jar .. " " .. srv:url("/login"))
      local n = 0
      for _ in head:gmatch("\r\n[Ss]et%-[Cc]ookie: ") do n = n + 1 end
      assert.equal(3, n)
      assert.matches("\r\nSet%-Cookie: plain=p1; Path=/; HttpOnly; SameSite=Lax\r\n", head)
      local body = hs.curl("-b " .. jar .. " " .. srv:url("/me"))
      assert.same({ plain = "p1", sig = "user:42", enc = "secret stuff" }, require("zever.json").decode(body))
    end)

    it("answers a hostile Cookie header without an error", function()
      local body = hs.curl("-H 'Cookie: sig=;;; =; enc=\"; plain=\"x\"; a b=c' " .. srv:url("/me"))
      assert.same({ plain = "x" }, require("zever.json").decode(body))
    end)
  end)
end)
