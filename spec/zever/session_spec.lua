-- zever.session with the memory and cookie adapters (the conformance suite), and
-- zever.middleware.session over HTTP: req.session, fixation, expiry, cookies.

local session = require "zever.session"
local crypto = require "zever.crypto"
local testing = require "zever.testing"
local hs = require "spec.support.http_script"
local json = require "zever.json"

local n = 0
require("spec.conformance.session")("memory", function(opts)
  n = n + 1
  opts.name = "conformance-" .. n        -- a fresh process-wide table per store
  opts.max_bytes = 1024 * 1024
  return session.new(opts)
end)

require("spec.conformance.session")("cookie", function(opts)
  opts.adapter = "cookie"
  opts.crypto = crypto.new{ keys = { { id = "s1", key = string.rep("s", 32) } } }
  return session.new(opts)
end, { cookie = true })

describe("adapters.session.cookie", function()
  it("refuses a session too large for a cookie, with code invalid", function()
    local store = session.new{ adapter = "cookie",
      crypto = crypto.new{ keys = { { id = "s1", key = string.rep("s", 32) } } } }
    local s = store:create()
    s.data.blob = string.rep("x", 5000)
    local token, err = store:save(s)
    assert.is_nil(token)
    assert.equal("invalid", err.code)
    assert.matches("at most 4000", err.message)
  end)

  it("reads a session sealed with a rotated-out key", function()
    local old = crypto.new{ keys = { { id = "old", key = string.rep("o", 32) } } }
    local s1 = session.new{ adapter = "cookie", crypto = old }
    local rec = s1:create()
    rec.data.u = 1
    local token = assert(s1:save(rec))
    local rotated = crypto.new{ keys = { { id = "new", key = string.rep("n", 32) },
      { id = "old", key = string.rep("o", 32) } } }
    local s2 = session.new{ adapter = "cookie", crypto = rotated }
    assert.equal(1, s2:load(token).data.u)
  end)
end)

describe("zever.middleware.session", function()
  local zever = require "zever"
  local t0, now, app, srv, jar

  local function make(opts)
    now = t0
    opts.clock = function() return now end
    opts.name = "mw-" .. tostring(os.time()) .. "-" .. math.random(1e9)
    app = zever.app()
    app.log = require("zever.log").new{ level = "off" }   -- /boom and /bad log their 500s
    app:use(zever.middleware.session(opts))
    app:post("/login", function(req)
      req.session:regenerate()
      req.session.user = req.query.user
      return { id = req.session:id() }
    end)
    app:get("/me", function(req)
      return { user = req.session.user or json.null, id = req.session:id() or json.null }
    end)
    app:get("/count", function(req)
      local c = (req.session.count or 0) + 1
      req.session.count = c
      return { count = c }
    end)
    app:get("/cart", function(req)
      local cart = req.session.cart or {}
      cart[#cart + 1] = req.query.item
      req.session.cart = cart
      return { n = #cart }
    end)
    app:post("/logout", function(req)
      req.session:destroy()
      return { ok = true }
    end)
    app:get("/plain", function() return "no session" end)
    app:get("/boom", function(req) req.session.x = 1; error("boom") end)
    srv = testing.serve(app)
    jar = os.tmpname()
  end

  local function curl(method, path, extra)
    local out = hs.curl(("-X %s -D - -b %s -c %s %s %s"):format(method, jar, jar, extra or "",
      srv:url(path)))
    local head, body = out:match("^(.-\r\n\r\n)(.*)$")
    return head, body ~= "" and json.decode(body) or nil
  end

  local function set_cookie(head) return head:match("\r\n[Ss]et%-[Cc]ookie: ([^\r\n]*)") end

  before_each(function() t0 = 1700000000 end)
  after_each(function()
    srv:close()
    app:close()
    os.remove(jar)
  end)

  for _, adapter in ipairs({ "memory", "cookie" }) do
    describe("(" .. adapter .. ")", function()
      local opts
      before_each(function()
        opts = { adapter = adapter, idle_timeout = 600, absolute_timeout = 3600 }
        if adapter == "cookie" then
          opts.crypto = crypto.new{ keys = { { id = "m1", key = string.rep("m", 32) } } }
        end
      end)

      it("keeps data across requests with the cookie curl sends back", function()
        make(opts)
        for i = 1, 3 do
          local _, body = curl("GET", "/count")
          assert.equal(i, body.count)
        end
      end)

      it("sends no cookie for a request that leaves the session empty or unused", function()
        make(opts)
        local head = curl("GET", "/me")
        assert.is_nil(set_cookie(head))
        head = curl("GET", "/plain")
        assert.is_nil(set_cookie(head))
      end)

      it("sets an HttpOnly SameSite=Lax cookie bounded by the absolute timeout", function()
        make(opts)
        local head = curl("GET", "/count")
        local c = set_cookie(head)
        assert.matches("^zever_session=[%w_%-]+; Path=/; Max%-Age=3600; HttpOnly; SameSite=Lax$", c)
      end)

      it("saves changes inside nested tables", function()
        make(opts)
        curl("GET", "/cart?item=a")
        local _, body = curl("GET", "/cart?item=b")
        assert.equal(2, body.n)
      end)

      it("treats an expired session as absent", function()
        make(opts)
        curl("GET", "/count")
        now = now + 601                                    -- idle
        local _, body = curl("GET", "/count")
        assert.equal(1, body.count)
      end)

      it("saves nothing when the handler raises", function()
        make(opts)
        local head = curl("GET", "/boom")
        assert.matches("^HTTP/1.1 500", head)
        assert.is_nil(set_cookie(head))
      end)

      it("clears the cookie on destroy", function()
        make(opts)
        curl("POST", "/login?user=ann")
        local head = curl("POST", "/logout")
        assert.matches("^zever_session=; Path=/; Max%-Age=0", set_cookie(head))
        local _, body = curl("GET", "/me")
        assert.equal(json.null, body.user)
      end)
    end)
  end

  it("refuses a session id the client made up and gives a new one (fixation)", function()
    make{ idle_timeout = 600, absolute_timeout = 3600 }
    local fixed = string.rep("A", 43)
    local f = io.open(jar, "w")
    f:write(("127.0.0.1\tFALSE\t/\tFALSE\t0\tzever_session\t%s\n"):format(fixed))
    f:close()
    local head, body = curl("POST", "/login?user=ann")
    assert.not_equal(fixed, body.id)
    assert.matches("^zever_session=" .. body.id:gsub("%-", "%%-") .. ";", set_cookie(head))
  end)

  it("regenerates the id on login so the id seen before stops working", function()
    make{ idle_timeout = 600, absolute_timeout = 3600 }
    local _, before = curl("GET", "/count")
    assert.equal(1, before.count)
    local _, me = curl("GET", "/me")
    local old = me.id
    local _, login = curl("POST", "/login?user=ann")
    assert.not_equal(old, login.id)
    -- The pre-login id (what an attacker who planted or saw it holds) finds nothing now.
    local out = hs.curl(("-H 'Cookie: zever_session=%s' %s"):format(old, srv:url("/me")))
    assert.equal(json.null, json.decode(out).user)
    local _, after = curl("GET", "/me")
    assert.equal("ann", after.user)
  end)

  it("raises on a data key that names a method", function()
    make{}
    app:get("/bad", function(req) req.session.destroy = 1 end)
    local head = curl("GET", "/bad")
    assert.matches("^HTTP/1.1 500", head)
  end)
end)
