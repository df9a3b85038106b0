local zever = require "zever"
local testing = require "zever.testing"

local request = testing.request

describe("zever.app", function()
  describe("handlers", function()
    local app = zever.app()
    app:get("/text", function() return "hello world" end)
    app:get("/table", function() return { id = 42, tags = {} } end)
    app:get("/status", function() return 201, "made", { ["X-Kind"] = "thing" } end)
    app:get("/status-table", function() return 422, { error = "invalid" } end)
    app:get("/chain", function(_, res) return res:status(202):header("X-A", "b"):json({ ok = true }) end)
    app:get("/send", function(_, res) res:send("sent") end)
    app:get("/nothing", function() end)
    app:get("/redirect", function(_, res) return res:redirect("/text") end)
    app:get("/moved", function(_, res) return res:redirect("/text", 301) end)
    app:get("/slash", function() return { path = "a/b" } end)
    app:get("/bad", function() return function() end end)

    local rows = {
      { "a string as text/plain", "/text", 200, "text/plain; charset=utf-8", "hello world" },
      { "a table as JSON", "/table", 200, "application/json", '{"tags":{},"id":42}' },
      { "status, body and headers", "/status", 201, "text/plain; charset=utf-8", "made" },
      { "a status and a table as JSON", "/status-table", 422, "application/json", '{"error":"invalid"}' },
      { "the response object when chained", "/chain", 202, "application/json", '{"ok":true}' },
      { "what res:send wrote when nothing is returned", "/send", 200, "text/plain; charset=utf-8", "sent" },
      { "an empty 200 when nothing is written", "/nothing", 200, nil, "" },
      { "a 302 redirect", "/redirect", 302, nil, "" },
      { "a redirect with its code", "/moved", 301, nil, "" },
      { "JSON with unescaped slashes", "/slash", 200, "application/json", '{"path":"a/b"}' },
    }
    for _, row in ipairs(rows) do
      it("answers " .. row[1], function()
        local res = request(app, "GET", row[2])
        assert.are.equal(row[3], res.status)
        assert.are.equal(row[4], res.headers["content-type"])
        if row[5]:sub(1, 1) == "{" and row[5] ~= '{"path":"a/b"}' then
          assert.are.same(require("zever.json").decode(row[5]), res:json())
        else
          assert.are.equal(row[5], res.body)
        end
      end)
    end

    it("adds the headers a handler returns", function()
      assert.are.equal("thing", request(app, "GET", "/status").headers["x-kind"])
      assert.are.equal("b", request(app, "GET", "/chain").headers["x-a"])
      assert.are.equal("/text", request(app, "GET", "/redirect").headers["location"])
    end)

    it("answers 500 when a handler returns something it cannot send", function()
      local res = request(app, "GET", "/bad")
      assert.are.equal(500, res.status)
    end)
  end)

  describe("requests", function()
    local app = zever.app()
    app:get("/users/:id", function(req) return { id = req.params.id } end)
    app:get("/files/*path", function(req) return req.params.path end)
    app:get("/query", function(req) return req.query end)
    app:post("/echo", function(req, res)
      local body, err = req:json()
      if not body then return res:status(400):json({ error = err.code }) end
      return body
    end)
    app:get("/header", function(req) return { ua = req:header("User-Agent") or "none" } end)
    app:get("/id", function(req) return req.id end)
    app:get("/method", function(req) return req.method end)

    it("passes path parameters", function()
      assert.are.same({ id = "42" }, request(app, "GET", "/users/42"):json())
    end)

    it("percent-decodes path parameters", function()
      assert.are.same({ id = "a b/c" }, request(app, "GET", "/users/a%20b%2Fc"):json())
    end)

    it("passes the splat", function()
      assert.are.equal("a/b/c.txt", request(app, "GET", "/files/a/b/c.txt").body)
    end)

    it("parses the query string with percent and plus decoding", function()
      local q = request(app, "GET", "/query?a=1&b=x+y&c=%2F&d&e=1&e=2&f[]=1&f[]=2").body
      assert.are.same({ a = "1", b = "x y", c = "/", d = "", e = "2", f = { "1", "2" } },
        require("zever.json").decode(q))
    end)

    it("decodes a JSON body", function()
      local res = request(app, "POST", "/echo", { body = '{"a":[1,2]}' })
      assert.are.same({ a = { 1, 2 } }, res:json())
    end)

    it("returns nil and an invalid error for a body that is not JSON", function()
      local res = request(app, "POST", "/echo", { body = "{nope" })
      assert.are.equal(400, res.status)
      assert.are.same({ error = "invalid" }, res:json())
    end)

    it("reads headers case-insensitively", function()
      assert.are.same({ ua = "spec" }, request(app, "GET", "/header", { headers = { ["user-agent"] = "spec" } }):json())
      assert.are.same({ ua = "none" }, request(app, "GET", "/header"):json())
    end)

    it("gives each request an id, or keeps a sane incoming X-Request-Id", function()
      local a, b = request(app, "GET", "/id").body, request(app, "GET", "/id").body
      assert.are_not.equal(a, b)
      assert.are.equal("abc-123", request(app, "GET", "/id", { headers = { ["X-Request-Id"] = "abc-123" } }).body)
      assert.are_not.equal("a b", request(app, "GET", "/id", { headers = { ["X-Request-Id"] = "a b" } }).body)
    end)

    it("answers HEAD with the GET handler and no body", function()
      local res = request(app, "HEAD", "/method")
      assert.are.equal(200, res.status)
      assert.are.equal("", res.body)
    end)
  end)

  describe("routing answers", function()
    local app = zever.app()
    app:get("/things", function() return "list" end)
    app:post("/things", function() return 201, "made" end)

    it("answers 404 JSON for an unknown path", function()
      local res = request(app, "GET", "/nope")
      assert.are.equal(404, res.status)
      assert.are.same({ error = "not_found" }, res:json())
    end)

    it("answers 405 with Allow when only another method matches", function()
      local res = request(app, "DELETE", "/things")
      assert.are.equal(405, res.status)
      assert.are.equal("GET, HEAD, OPTIONS, POST", res.headers["allow"])
      assert.are.same({ error = "method_not_allowed" }, res:json())
    end)

    it("answers OPTIONS automatically with Allow", function()
      local res = request(app, "OPTIONS", "/things")
      assert.are.equal(204, res.status)
      assert.are.equal("GET, HEAD, OPTIONS, POST", res.headers["allow"])
    end)

    it("redirects to the trailing-slash twin and keeps the query", function()
      local res = request(app, "GET", "/things/?page=2")
      assert.are.equal(301, res.status)
      assert.are.equal("/things?page=2", res.headers["location"])
      assert.are.equal(308, request(app, "POST", "/things/").status)
    end)
  end)

  describe("middleware", function()
    it("runs in order around the handler and sees its response", function()
      local app = zever.app()
      local trail = {}
      app:use(function(_, _, next)
        trail[#trail + 1] = "a in"
        local res = next()
        trail[#trail + 1] = "a out"
        res:header("X-Outer", "1")
        return res
      end)
      app:use(function(req, _, next)
        trail[#trail + 1] = "b"
        req.user = "ann"
        return next()
      end)
      app:get("/", function(req) trail[#trail + 1] = "handler"; return req.user end)
      local res = request(app, "GET", "/")
      assert.are.equal("ann", res.body)
      assert.are.equal("1", res.headers["x-outer"])
      assert.are.same({ "a in", "b", "handler", "a out" }, trail)
    end)

    it("short-circuits when it does not call next", function()
      local app = zever.app()
      local reached = false
      app:use(function(req, res, next)
        if not req:header("authorization") then return res:status(401):json({ error = "unauthorized" }) end
        return next()
      end)
      app:get("/", function() reached = true; return "secret" end)
      assert.are.equal(401, request(app, "GET", "/").status)
      assert.is_false(reached)
      assert.are.equal("secret", request(app, "GET", "/", { headers = { Authorization = "x" } }).body)
    end)

    it("runs app-level middleware for 404 answers too", function()
      local app = zever.app()
      app:use(function(_, _, next) return next():header("X-Seen", "yes") end)
      local res = request(app, "GET", "/missing")
      assert.are.equal(404, res.status)
      assert.are.equal("yes", res.headers["x-seen"])
    end)

    it("raises when middleware is not a function", function()
      assert.has_error(function() zever.app():use("nope") end, "middleware must be a function(req, res, next)")
    end)

    -- Each chain position runs through its own copy of the step function up to 16 positions;
    -- past them the steps share one. Both sides must keep the order, next()'s result, a
    -- second next() call and an error raised below a middleware.
    it("keeps order and next() semantics in a chain of 24 steps", function()
      local app = zever.app()
      local trail = {}
      for i = 1, 22 do
        app:use(function(_, _, next)
          trail[#trail + 1] = i
          local res = next()
          trail[#trail + 1] = -i
          return res
        end)
      end
      local calls = 0
      app:group("/g", function(r)
        r:use(function(_, _, next)
          -- next() twice runs the rest of the chain twice; the second answer stands.
          next()
          return next()
        end)
        r:get("/deep", function()
          calls = calls + 1
          return "call " .. calls
        end)
        r:get("/boom", function() error("boom") end)
      end)
      local res = request(app, "GET", "/g/deep")
      assert.are.equal(200, res.status)
      assert.are.equal("call 2", res.body)
      local want = {}
      for i = 1, 22 do want[i] = i end
      for i = 22, 1, -1 do want[#want + 1] = -i end
      assert.are.same(want, trail)
      assert.are.equal(500, request(app, "GET", "/g/boom").status)
    end)
  end)

  describe("groups", function()
    local app = zever.app()
    local function auth(req, res, next)
      if req:header("x-admin") ~= "yes" then return res:status(403):json({ error = "forbidden" }) end
      return next()
    end
    app:group("/admin", function(r)
      r:use(auth)
      r:get("/stats", function() return { users = 3 } end)
      r:group("/deep", function(d) d:get("/x", function() return "deep" end) end)
    end)
    app:get("/public", function() return "open" end)

    it("prefixes the group's routes and applies its middleware", function()
      assert.are.equal(403, request(app, "GET", "/admin/stats").status)
      assert.are.same({ users = 3 }, request(app, "GET", "/admin/stats", { headers = { ["X-Admin"] = "yes" } }):json())
    end)

    it("applies a group's middleware to nested groups", function()
      assert.are.equal(403, request(app, "GET", "/admin/deep/x").status)
      assert.are.equal("deep", request(app, "GET", "/admin/deep/x", { headers = { ["X-Admin"] = "yes" } }).body)
    end)

    it("keeps group middleware away from other routes", function()
      assert.are.equal("open", request(app, "GET", "/public").body)
    end)
  end)

  describe("named routes", function()
    local app = zever.app()
    app:get("user", "/users/:id", function() return "" end)
    app:get("file", "/files/*path", function() return "" end)

    it("builds a path from a named route", function()
      assert.are.equal("/users/42", app:url_for("user", { id = 42 }))
    end)

    it("escapes parameters and keeps slashes in splats", function()
      assert.are.equal("/users/a%20b%2Fc", app:url_for("user", { id = "a b/c" }))
      assert.are.equal("/files/dir/a%20b.txt", app:url_for("file", { path = "dir/a b.txt" }))
    end)

    it("puts extra parameters in a sorted query string", function()
      assert.are.equal("/users/1?b=2&z=x%20y", app:url_for("user", { id = 1, z = "x y", b = 2 }))
    end)

    it("raises for an unknown name or a missing parameter", function()
      assert.has_error(function() app:url_for("nope") end, 'no route named "nope"')
      assert.has_error(function() app:url_for("user", {}) end, 'url_for("user"): missing parameter "id"')
    end)

    it("raises when a name is used twice", function()
      assert.has_error(function() app:get("user", "/u/:id", function() end) end,
        'route name "user" is already used by /users/:id')
    end)
  end)

  describe("registration", function()
    it("raises on a conflicting route, naming both", function()
      local app = zever.app()
      app:get("/a/:x", function() end)
      local ok, err = pcall(app.get, app, "/a/:y", function() end)
      assert.is_false(ok)
      assert.is_truthy(err:find("/a/:y", 1, true) and err:find("/a/:x", 1, true))
    end)

    it("raises on bad arguments", function()
      local app = zever.app()
      assert.has_error(function() app:get("/x", "not a function") end, "route handler must be a function")
      assert.has_error(function() app:route("BREW", "/x", function() end) end, "unsupported HTTP method BREW")
      assert.has_error(function() app:group("admin", function() end) end)
    end)

    it("lists routes with their handler's file and line", function()
      local app = zever.app()
      app:route({ "GET", "POST" }, "form", "/form", function() end)
      local routes = app:list_routes()
      assert.are.equal(2, #routes)
      assert.are.equal("GET", routes[1].method)
      assert.are.equal("POST", routes[2].method)
      assert.are.equal("form", routes[1].name)
      assert.is_truthy(routes[1].source:find("app_spec.lua:%d+$"))
    end)
  end)

  describe("errors", function()
    it("answers 500 JSON when a handler raises and keeps serving", function()
      local app = zever.app()
      app:get("/boom", function() error("kaput") end)
      app:get("/ok", function() return "fine" end)
      local res = request(app, "GET", "/boom")
      assert.are.equal(500, res.status)
      assert.are.same({ error = "internal" }, res:json())
      assert.are.equal("fine", request(app, "GET", "/ok").body)
    end)

    it("lets on_error shape the answer", function()
      local app = zever.app()
      app:get("/boom", function() error({ code = "teapot" }) end)
      app:on_error(function(err, _, res) return res:status(418):json({ error = err.code }) end)
      local res = request(app, "GET", "/boom")
      assert.are.equal(418, res.status)
      assert.are.same({ error = "teapot" }, res:json())
    end)

    it("falls back to 500 when on_error itself fails", function()
      local app = zever.app()
      app:get("/boom", function() error("one") end)
      app:on_error(function() error("two") end)
      assert.are.equal(500, request(app, "GET", "/boom").status)
    end)
  end)

  describe("waiting", function()
    it("lets a handler sleep and resume", function()
      local app = zever.app()
      app:get("/slow", function()
        zever.sleep(0.02)
        return "awake"
      end)
      assert.are.equal("awake", request(app, "GET", "/slow").body)
    end)
  end)

  describe("batteries", function()
    it("resolves app.db lazily to a fresh in-memory database under zever test", function()
      local app = zever.app()
      assert.is_nil(rawget(app, "db"))
      local db = app.db
      assert.are.equal(db, app.db)
      assert.is_truthy(db:exec("CREATE TABLE t (x INTEGER)"))
      assert.are.same({ { n = 0 } }, db:query("SELECT count(*) AS n FROM t"))
      assert.are.equal("sqlite::memory:", app:config().db.dsn)
      assert.is_true(app:close())
    end)

    it("reads the app's zever.yaml and resolves relative database paths next to the app", function()
      -- As `zever serve` loads it: outside the test environment (zever test gives an app whose
      -- configuration names no test database a :memory: one).
      local app_mod, was = require("zever.app"), require("zever.app").testing
      app_mod.testing = false
      finally(function() app_mod.testing = was end)
      local dir = require("spec.support.files").tmpdir()
      local f = assert(io.open(dir .. "/zever.yaml", "w"))
      f:write("db:\n  dsn: sqlite:data.db\n")
      f:close()
      f = assert(io.open(dir .. "/app.lua", "w"))
      f:write("local app = require('zever').app()\nreturn app\n")
      f:close()
      local app = require("zever.app").load(dir)
      assert.are.equal("sqlite:" .. dir .. "/data.db", app:config().db.dsn)
      assert.is_truthy(app.db:exec("CREATE TABLE t (x INTEGER)"))
      assert.is_true(app:close())
      assert.is_truthy(io.open(dir .. "/data.db", "r"))
      os.execute("rm -rf " .. dir)
    end)

    it("resolves batteries used while the app file runs against the app's folder", function()
      -- As `zever serve` loads it: outside the test environment (zever test gives an app whose
      -- configuration names no test database a :memory: one).
      local app_mod, was = require("zever.app"), require("zever.app").testing
      app_mod.testing = false
      finally(function() app_mod.testing = was end)
      local dir = require("spec.support.files").tmpdir()
      local f = assert(io.open(dir .. "/zever.yaml", "w"))
      f:write("db:\n  dsn: sqlite:early.db\n")
      f:close()
      f = assert(io.open(dir .. "/app.lua", "w"))
      f:write("local app = require('zever').app()\nassert(app.db:exec('CREATE TABLE t (x)'))\nreturn app\n")
      f:close()
      local app = require("zever.app").load(dir)
      assert.are.equal("sqlite:" .. dir .. "/early.db", app:config().db.dsn)
      assert.is_true(app:close())
      assert.is_truthy(io.open(dir .. "/early.db", "r"))
      os.execute("rm -rf " .. dir)
    end)

    it("raises with the configuration error when zever.yaml is invalid", function()
      local dir = require("spec.support.files").tmpdir()
      local f = assert(io.open(dir .. "/zever.yaml", "w"))
      f:write("db:\n  dns: sqlite:x.db\n")
      f:close()
      local app = zever.app()
      app.dir = dir
      local ok, err = pcall(function() return app.db end)
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find('db.dns: unknown field; did you mean "dsn"?', 1, true))
      os.execute("rm -rf " .. dir)
    end)
  end)
end)
