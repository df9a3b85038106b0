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
end)
