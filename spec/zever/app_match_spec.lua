-- zever.app dispatch through the FFI match: the same answers r:match gives (parameters in pattern
-- order, percent-decoding, splats, HEAD, 405, 404).
local zever = require "zever"
local testing = require "zever.testing"

describe("zever.app", function()
  describe("dispatch", function()
    local app = zever.app()
    app:get("/users/:id", function(req) return { id = req.params.id } end)
    app:get("/repos/:owner/:repo/stargazers", function(req)
      return req.params.owner .. "/" .. req.params.repo
    end)
    app:get("/files/*path", function(req) return req.params.path end)
    local rows = {
      { "one parameter", "GET", "/users/42", 200, '{"id":"42"}' },
      { "a percent-encoded parameter, decoded", "GET", "/users/a%20b", 200, '{"id":"a b"}' },
      { "two parameters in pattern order", "GET", "/repos/julien/router/stargazers", 200,
        "julien/router" },
      { "a splat with slashes", "GET", "/files/a/b.txt", 200, "a/b.txt" },
      { "an empty splat", "GET", "/files/", 200, "" },
      { "HEAD on a GET route", "HEAD", "/users/1", 200, nil },
      { "another method", "POST", "/users/1", 405, nil },
      { "an unknown path", "GET", "/nope", 404, nil },
    }
    for _, row in ipairs(rows) do
      it("answers " .. row[1], function()
        local res = testing.request(app, row[2], row[3])
        assert.equal(row[4], res.status)
        if row[5] then assert.equal(row[5], res.body) end
      end)
    end
  end)

  -- app.hits: the router's parameterless hits, answered without the router the next time.
  describe("hits of routes without parameters", function()
    local function count(hits)
      local n = 0
      for _, by in pairs(hits) do for _ in pairs(by) do n = n + 1 end end
      return n
    end

    it("keeps static hits only, and answers them as the router did", function()
      local app = zever.app()
      app:get("/hello", function() return "hello" end)
      app:get("/users/:id", function(req) return req.params.id end)
      app:get("/files/*path", function(req) return "[" .. req.params.path .. "]" end)
      for _ = 1, 3 do
        assert.equal("hello", testing.request(app, "GET", "/hello").body)
        assert.equal("7", testing.request(app, "GET", "/users/7").body)
        assert.equal("[]", testing.request(app, "GET", "/files/").body)
        assert.equal(404, testing.request(app, "GET", "/nope").status)
        assert.equal(301, testing.request(app, "GET", "/hello/").status)
        assert.equal(405, testing.request(app, "POST", "/hello").status)
      end
      assert.same({ GET = { ["/hello"] = 1 } }, app.hits)
      assert.equal(1, app.nhits)
    end)

    it("forgets them when a route is added (HEAD on a GET route, then a HEAD route)", function()
      local app = zever.app()
      app:get("/x", function() return "get" end)
      assert.equal(200, testing.request(app, "HEAD", "/x").status)
      assert.equal(1, app.hits.HEAD["/x"])
      app:head("/x", function(_, res) res:header("X-Head", "1"); return "" end)
      assert.equal(0, count(app.hits))
      local res = testing.request(app, "HEAD", "/x")
      assert.equal("1", res.headers["X-Head"] or res.headers["x-head"])
      assert.equal(2, app.hits.HEAD["/x"])
    end)

    it("keeps at most 1,024 paths and answers the others through the router", function()
      local app = zever.app()
      for i = 1, 1100 do app:get("/r" .. i, function() return "r" .. i end) end
      for i = 1, 1100 do assert.equal("r" .. i, testing.request(app, "GET", "/r" .. i).body) end
      assert.equal(1024, app.nhits)
      assert.equal(1024, count(app.hits))
      assert.equal("r1100", testing.request(app, "GET", "/r1100").body)
      assert.equal("r1", testing.request(app, "GET", "/r1").body)
    end)
  end)
end)
