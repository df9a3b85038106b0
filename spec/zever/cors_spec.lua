-- zever.middleware.cors: the preflight matrix and actual requests through a real socket (curl),
-- plus construction errors.

local zever = require "zever"
local testing = require "zever.testing"
local cors = require "zever.middleware.cors"

local A = "https://app.example.com"
local B = "https://evil.example.net"

local function make_app(opts)
  local app = zever.app()
  app:use(cors(opts))
  app:get("/items", function(_, res) return res:header("X-Total-Count", "2"):json({ 1, 2 }) end)
  app:put("/items", function() return "put" end)
  app:options("/custom", function() return "custom options" end)
  return app
end

describe("zever.middleware.cors", function()
  local servers = {}

  setup(function()
    servers.list = testing.serve(make_app({ origins = { A, "null" }, credentials = true,
      expose = { "X-Total-Count" }, max_age = 300 }))
    servers.any = testing.serve(make_app({ origins = "*", methods = { "GET", "PUT" },
      headers = { "Content-Type" } }))
    servers.fn = testing.serve(make_app({ origins = function(o) return o:match("%.example%.com$") ~= nil end,
      max_age = 0 }))
  end)

  teardown(function()
    for _, s in pairs(servers) do s:close() end
  end)

  describe("preflight matrix", function()
    -- { name, server, Origin, Access-Control-Request-Method, -Headers, expected: status,
    --   Allow-Origin, Allow-Methods, Allow-Headers, Allow-Credentials, Max-Age, Vary }
    local PRE_VARY = "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"
    local rows = {
      { "a listed origin", "list", A, "PUT", "content-type, x-a", 204, A,
        "GET, HEAD, PUT, PATCH, POST, DELETE", "content-type, x-a", "true", "300", PRE_VARY },
      { "a listed origin in another case", "list", "HTTPS://APP.example.com", "GET", nil, 204,
        "HTTPS://APP.example.com", "GET, HEAD, PUT, PATCH, POST, DELETE", nil, "true", "300", PRE_VARY },
      { "the null origin when listed", "list", "null", "GET", nil, 204, "null",
        "GET, HEAD, PUT, PATCH, POST, DELETE", nil, "true", "300", PRE_VARY },
      { "an origin not listed", "list", B, "GET", nil, 204, nil, nil, nil, nil, nil, PRE_VARY },
      { "a method not allowed", "any", A, "DELETE", nil, 204, nil, nil, nil, nil, nil, PRE_VARY },
      { "any origin with fixed headers", "any", B, "put", "x-other", 204, "*", "GET, PUT",
        "Content-Type", nil, "600", PRE_VARY },
      { "a function that allows", "fn", "https://x.example.com", "PUT", nil, 204,
        "https://x.example.com", "GET, HEAD, PUT, PATCH, POST, DELETE", nil, nil, nil, PRE_VARY },
      { "a function that refuses", "fn", B, "PUT", nil, 204, nil, nil, nil, nil, nil, PRE_VARY },
      { "request headers that are not names", "list", A, "GET", "a b(c)", 204, A,
        "GET, HEAD, PUT, PATCH, POST, DELETE", nil, "true", "300", PRE_VARY },
    }
    for _, row in ipairs(rows) do
      it("answers " .. row[1], function()
        local headers = { Origin = row[3], ["Access-Control-Request-Method"] = row[4] }
        if row[5] then headers["Access-Control-Request-Headers"] = row[5] end
        local r = servers[row[2]]:fetch("OPTIONS", "/items", { headers = headers })
        assert.equal(row[6], r.status)
        assert.equal(row[7], r.headers["access-control-allow-origin"])
        assert.equal(row[8], r.headers["access-control-allow-methods"])
        assert.equal(row[9], r.headers["access-control-allow-headers"])
        assert.equal(row[10], r.headers["access-control-allow-credentials"])
        assert.equal(row[11], r.headers["access-control-max-age"])
        assert.equal(row[12], r.headers.vary)
        assert.equal("", r.body)
      end)
    end

    it("leaves an OPTIONS without Access-Control-Request-Method to the routes", function()
      local r = servers.list:fetch("OPTIONS", "/custom", { headers = { Origin = A } })
      assert.equal(200, r.status)
      assert.equal("custom options", r.body)
      assert.equal(A, r.headers["access-control-allow-origin"])
    end)
  end)

  describe("actual requests", function()
    it("adds the origin, credentials, exposed headers and Vary for an allowed origin", function()
      local r = servers.list:get("/items", { headers = { Origin = A } })
      assert.equal(200, r.status)
      assert.equal("[1,2]", r.body)
      assert.equal(A, r.headers["access-control-allow-origin"])
      assert.equal("true", r.headers["access-control-allow-credentials"])
      assert.equal("X-Total-Count", r.headers["access-control-expose-headers"])
      assert.equal("Origin", r.headers.vary)
    end)

    it("runs the handler but adds no CORS header for another origin", function()
      local r = servers.list:get("/items", { headers = { Origin = B } })
      assert.equal(200, r.status)
      assert.equal("[1,2]", r.body)
      assert.is_nil(r.headers["access-control-allow-origin"])
      assert.equal("Origin", r.headers.vary)
    end)

    it("answers * without Vary when any origin is allowed", function()
      local r = servers.any:get("/items", { headers = { Origin = B } })
      assert.equal("*", r.headers["access-control-allow-origin"])
      assert.is_nil(r.headers.vary)
      assert.is_nil(r.headers["access-control-allow-credentials"])
    end)

    it("changes nothing for a request without Origin", function()
      local r = servers.list:get("/items")
      assert.equal(200, r.status)
      assert.is_nil(r.headers["access-control-allow-origin"])
      assert.is_nil(r.headers.vary)
    end)

    it("adds its headers to a 404 too", function()
      local r = servers.list:get("/missing", { headers = { Origin = A } })
      assert.equal(404, r.status)
      assert.equal(A, r.headers["access-control-allow-origin"])
    end)
  end)

  it("raises on misuse, blaming the caller", function()
    local rows = {
      { nil, "expects an options table" },
      { {}, "origins must be" },
      { { origins = "*", credentials = true }, "credentials cannot be used" },
      { { origins = { "https://a.com/" } }, "invalid origin" },
      { { origins = { A }, methods = { "GE T" } }, "invalid name" },
      { { origins = { A }, max_age = -1 }, "max_age must be" },
    }
    for _, row in ipairs(rows) do
      local ok, err = pcall(cors, row[1])
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find(row[2], 1, true), tostring(err))
    end
  end)
end)
