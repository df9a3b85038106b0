local zever = require "zever"
local testing = require "zever.testing"

describe("zever.testing", function()
  describe("serve", function()
    local app = zever.app()
    app:get("/hello", function() return "hello world" end)
    app:get("/wait", function() zever.sleep(0.05) return { waited = true } end)
    app:post("/echo", function(req) return req.body end)

    it("serves an app on a free loopback port to a real client", function()
      local srv = testing.serve(app)
      assert.is_true(srv.port > 0)
      local res = srv:fetch("GET", "/hello")
      assert.are.equal(200, res.status)
      assert.are.equal("hello world", res.body)
      assert.are.equal("zever", res.headers["server"])
      srv:close()
    end)

    it("serves handlers that wait, and request bodies", function()
      local srv = testing.serve(app)
      assert.are.same({ waited = true }, srv:fetch("GET", "/wait"):json())
      assert.are.equal("payload", srv:fetch("POST", "/echo", { body = "payload" }).body)
      srv:close()
    end)

    it("answers HEAD without a body", function()
      local srv = testing.serve(app)
      local res = srv:fetch("HEAD", "/hello")
      assert.are.equal(200, res.status)
      assert.are.equal("11", res.headers["content-length"])
      assert.are.equal("", res.body)
      srv:close()
    end)
  end)

  describe("settle", function()
    local loop = require "zever.loop"

    it("waits until the loop holds no more handles than before, and says when it did not", function()
      local before = #loop.handles()
      local t = loop.after(3600, function() end)
      finally(function() t:stop() end)
      assert.is_false(testing.settle(before, 0.01))       -- the timer still holds the loop
      assert.are.equal(before + 1, #loop.handles())       -- the guard is gone, the timer is not
      loop.after(0.001, function() t:stop() end)
      assert.is_true(testing.settle(before, 10))
      assert.are.equal(before, #loop.handles())
    end)

    it("leaves nothing open after a served app's client hung up and the app closed", function()
      local before = #loop.handles()
      local app = zever.app()
      app:get("/hello", function() return "hello world" end)
      local srv = testing.serve(app)
      assert.are.equal(200, srv:fetch("GET", "/hello").status)
      srv:close()
      assert.is_true(testing.settle(before, 10), table.concat(loop.handles(), ","))
    end)
  end)

  describe("request", function()
    it("raises when given something other than an app", function()
      assert.has_error(function() testing.request({}, "GET", "/") end, "testing.request wants an app")
    end)

    it("encodes a table body as JSON", function()
      local app = zever.app()
      app:post("/", function(req) return { ct = req:header("content-type"), body = req:json() } end)
      local res = testing.request(app, "POST", "/", { body = { a = 1 } })
      assert.are.same({ ct = "application/json", body = { a = 1 } }, res:json())
    end)
  end)

  describe("repeated response headers", function()
    local function cookie_app()
      local app = zever.app()
      app:get("/login", function(_, res)
        res:cookie("sid", "abc", { path = "/", http_only = true, max_age = 60 })
        res:cookie("theme", "dark", { same_site = "Lax" })
        res:header("Vary", "Accept")
        return "ok"
      end)
      return app
    end

    local function check(res)
      local set = res:header_values("Set-Cookie")
      assert.are.equal(2, #set)
      assert.matches("^sid=abc", set[1])
      assert.matches("^theme=dark", set[2])
      local v, attrs = res:cookie("sid")
      assert.are.equal("abc", v)
      assert.are.equal("/", attrs.path)
      assert.are.equal("60", attrs["max-age"])
      assert.is_true(attrs.httponly)
      assert.are.equal("dark", (res:cookie("theme")))
      assert.is_nil(res:cookie("missing"))
      assert.are.same({ "Accept" }, res:header_values("vary"))
      -- headers[name] keeps the last value, as before.
      assert.matches("^theme=dark", res.headers["set-cookie"])
    end

    it("keeps every Set-Cookie of an in-process request", function()
      check(testing.request(cookie_app(), "GET", "/login"))
    end)

    it("keeps every Set-Cookie of a served request", function()
      local srv = testing.serve(cookie_app())
      local ok, err = pcall(check, srv:fetch("GET", "/login"))
      srv:close()
      assert(ok, err)
    end)
  end)

  describe("app", function()
    local fs = require "spec.support.files"
    local APP = [[
local zever = require "zever"
local app = zever.app()
app:get("/count", function() return { n = app.db:first("SELECT count(*) AS n FROM items").n } end)
app:post("/items", function(req, res)
  app.db:insert_into("items"):values({ name = req:json().name }):exec()
  app.jobs:dispatch("announce", { name = req:json().name })
  return res:status(201):send("")
end)
app:get("/q", function(req) return req.query end)
app:get("/hits/:k", function(req)
  local n = app.cache:incr(req.params.k)
  local allowed = app.limiter:allow(req.params.k)
  return { n = n, allowed = allowed }
end)
app.jobs:register("announce", function(args)
  if args.name == "bad" then error("refused") end
  assert(app.mailer:send{ to = "team@example.com", subject = "new: " .. args.name, text = "!" })
  if args.name == "chain" then app.jobs:dispatch("announce", { name = "chained" }) end
end, { attempts = 2 })
return app
]]
    local MIGRATION = [[
return { up = function(db) db:exec("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)") end,
  down = function(db) db:exec("DROP TABLE items") end }
]]
    local dir
    setup(function()
      dir = fs.tmpdir({ ["app.lua"] = APP, ["migrations/0001_items.lua"] = MIGRATION,
        ["zever.yaml"] = "db:\n  dsn: sqlite:dev.db\nmailer:\n  from: app@example.com\n" ..
          "limiter:\n  rate: 0.001\n  burst: 2\n" }, "zever-testing-app")
    end)
    teardown(function() fs.rm_rf(dir) end)

    it("loads the app with its migrations on a database of its own", function()
      local t = testing.app(dir)
      assert.are.same({ n = 0 }, t:get("/count"):json())
      assert.are.equal(201, t:post("/items", { json = { name = "a" } }).status)
      assert.are.same({ n = 1 }, t:get("/count"):json())
      local other = testing.app(dir)
      assert.are.same({ n = 0 }, other:get("/count"):json())   -- not the first app's database
      other:close()
      t:close()
      assert.is_nil(fs.slurp(dir .. "/dev.db"))                   -- the configured file: untouched
    end)

    it("runs dispatched jobs, the jobs they dispatch, and retries a failing one later", function()
      local t = testing.app(dir)
      t:post("/items", { json = { name = "chain" } })
      t:post("/items", { json = { name = "bad" } })
      assert.are.equal(0, #testing.mails())
      assert.are.same({ ran = 3, done = 2, failed = 1 }, testing.perform_jobs())
      local subjects = {}
      for i, m in ipairs(t:mails()) do subjects[i] = m.subject end
      table.sort(subjects)
      assert.are.same({ "new: chain", "new: chained" }, subjects)
      assert.are.equal("app@example.com", t:mails()[1].from)
      assert.are.same({ "team@example.com" }, { t:mails()[1].to })
      -- The failed job waits for its backoff: nothing is due now.
      assert.are.same({ ran = 0, done = 0, failed = 0 }, t:perform_jobs())
      t:clear_mails()
      assert.are.equal(0, #t:mails())
      t:close()
    end)

    it("starts each app with an empty cache and limiter", function()
      for _ = 1, 2 do
        local t = testing.app(dir)
        assert.are.same({ n = 1, allowed = true }, t:get("/hits/k"):json())
        assert.are.same({ n = 2, allowed = true }, t:get("/hits/k"):json())
        assert.are.same({ n = 3, allowed = false }, t:get("/hits/k"):json())
        t:reset()
        assert.are.same({ n = 1, allowed = true }, t:get("/hits/k"):json())
        t:close()
      end
    end)

    it("sends query tables, JSON bodies and headers, in-process and over a socket", function()
      local t = testing.app(dir)
      assert.are.same({ a = "1", b = "x y" }, t:get("/q", { query = { a = 1, b = "x y" } }):json())
      local srv = t:serve()
      assert.are.same({ a = "1", b = "x y" }, srv:get("/q", { query = { a = 1, b = "x y" } }):json())
      assert.are.equal(201, srv:post("/items", { json = { name = "s" } }).status)
      assert.are.same({ n = 1 }, t:get("/count"):json())          -- the served app is the same app
      srv:close()
      t:close()
    end)

    it("gives an app configured for PostgreSQL an SQLite database of its own", function()
      local pg = fs.tmpdir({ ["app.lua"] = APP, ["migrations/0001_items.lua"] = MIGRATION,
        ["zever.yaml"] = "db:\n  adapter: postgres\n  dsn: postgres://app:pw@127.0.0.1:1/dev\n" },
        "zever-testing-pg")
      local t = testing.app(pg)
      assert.are.equal(201, t:post("/items", { json = { name = "a" } }).status)
      assert.are.same({ n = 1 }, t:get("/count"):json())
      assert.are.equal("sqlite", t.app:config().db.adapter)
      t:close()
      local app = require("zever.app").load(pg)           -- loaded plainly under zever test
      assert.are.equal("sqlite::memory:", app:config().db.dsn)
      app:close()
      fs.rm_rf(pg)
    end)

    it("raises when there is no app to act on", function()
      assert.has_error(function() testing.perform_jobs() end,
        "testing.perform_jobs: no app (call testing.app first)")
      assert.has_error(function() testing.app(42) end,
        "testing.app wants a folder, an app file or an app")
    end)
  end)
end)
