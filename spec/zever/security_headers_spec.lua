-- zever.middleware.security_headers: defaults, options, the CSP hook and a handler's own values.

local zever = require "zever"
local testing = require "zever.testing"
local security_headers = require "zever.middleware.security_headers"

local function run(opts, handler, path)
  local app = zever.app()
  app:use(security_headers(opts))
  app:get("/", handler or function() return "ok" end)
  return testing.request(app, "GET", path or "/")
end

describe("zever.middleware.security_headers", function()
  it("sends the defaults", function()
    local r = run()
    assert.equal("max-age=15552000; includeSubDomains", r.headers["strict-transport-security"])
    assert.equal("nosniff", r.headers["x-content-type-options"])
    assert.equal("DENY", r.headers["x-frame-options"])
    assert.equal("strict-origin-when-cross-origin", r.headers["referrer-policy"])
    assert.is_nil(r.headers["content-security-policy"])
  end)

  it("takes options and turns headers off", function()
    local r = run({ hsts = { max_age = 31536000, preload = true }, frame_options = "SAMEORIGIN",
      nosniff = false, referrer_policy = false, csp = "default-src 'self'" })
    assert.equal("max-age=31536000; includeSubDomains; preload", r.headers["strict-transport-security"])
    assert.equal("SAMEORIGIN", r.headers["x-frame-options"])
    assert.is_nil(r.headers["x-content-type-options"])
    assert.is_nil(r.headers["referrer-policy"])
    assert.equal("default-src 'self'", r.headers["content-security-policy"])
    assert.is_nil(run({ hsts = false }).headers["strict-transport-security"])
  end)

  it("asks the CSP hook per request", function()
    local n = 0
    local app = zever.app()
    app:use(security_headers({ csp = function(req)
      n = n + 1
      return "script-src 'nonce-" .. n .. "' " .. req.path
    end }))
    app:get("/a", function() return "a" end)
    assert.equal("script-src 'nonce-1' /a", testing.request(app, "GET", "/a").headers["content-security-policy"])
    assert.equal("script-src 'nonce-2' /a", testing.request(app, "GET", "/a").headers["content-security-policy"])
  end)

  it("keeps a value the handler set, and covers 404s and errors", function()
    local r = run(nil, function(_, res) return res:header("X-Frame-Options", "SAMEORIGIN"):send("x") end)
    assert.equal("SAMEORIGIN", r.headers["x-frame-options"])
    assert.equal("DENY", run(nil, nil, "/missing").headers["x-frame-options"])
  end)

  it("sends them through a real socket", function()
    local app = zever.app()
    app:use(security_headers())
    app:get("/", function() return "ok" end)
    local srv = testing.serve(app)
    local r = srv:get("/")
    srv:close()
    assert.equal("nosniff", r.headers["x-content-type-options"])
    assert.equal("DENY", r.headers["x-frame-options"])
  end)

  it("raises on misuse", function()
    local rows = {
      { { frame_options = "ALLOW" }, "frame_options must be" },
      { { hsts = { max_age = 10, preload = true } }, "preload needs" },
      { { csp = "a\nb" }, "without control characters" },
      { { nope = 1 }, "unknown option 'nope'" },
    }
    for _, row in ipairs(rows) do
      local ok, err = pcall(security_headers, row[1])
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find(row[2], 1, true), tostring(err))
    end
  end)
end)
