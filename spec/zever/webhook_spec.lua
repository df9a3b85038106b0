-- zever.webhook: signatures against vectors computed with `openssl dgst -sha256 -hmac`, the
-- verifier against tampered, expired and malformed input, and deliveries through the jobs
-- battery to a receiver served by zever (real HTTP with curl): signed, retried, dead-lettered
-- and requeued.

local webhook = require "zever.webhook"
local zever = require "zever"
local testing = require "zever.testing"

describe("zever.webhook", function()
  local SECRET = "whsec_5f3a9c2e8d7b6a41"
  local BODY = '{"id":"evt_1","type":"order.paid"}'

  -- { secret, body, t, expected v1 (openssl dgst -sha256 -hmac secret of "t.body") }
  local vectors = {
    { SECRET, BODY, 1700000000, "d2334c40683dd021d3faebe1a0668d23d9af3d6a98cf4a40aad4f0bb17a7d546" },
    { SECRET, BODY, 1, "6a67bcc9caa655a58bda55bafee31ce3ce9c4273ab48c2df5f915c5620940eb8" },
    { "another secret, 16+", "", 1700000000,
      "76dfab0f608a51926fb874d381595bbf12b6492eba349d0f504f5693fad9116d" },
  }
  for i, v in ipairs(vectors) do
    it("signs vector " .. i .. " as openssl computes it", function()
      assert.are.equal("t=" .. v[3] .. ",v1=" .. v[4], webhook.sign(v[1], v[2], v[3]))
    end)
  end

  describe("verify", function()
    local T = 1700000000
    local header = "t=" .. T .. ",v1=" .. vectors[1][4]
    local at = { now = T + 10 }

    it("accepts a genuine signature inside the replay window", function()
      assert.is_true(webhook.verify(SECRET, BODY, header, at))
      assert.is_true(webhook.verify(SECRET, BODY, webhook.sign(SECRET, BODY)))
    end)

    -- { name, secret(s), body, header, opts, expected code }
    local rows = {
      { "a tampered body", SECRET, BODY:gsub("paid", "free"), header, at, "invalid" },
      { "a tampered timestamp", SECRET, BODY, header:gsub("^t=%d+", "t=" .. (T + 5)), at, "invalid" },
      { "another secret", "whsec_0000000000000000", BODY, header, at, "invalid" },
      { "a flipped signature digit", SECRET, BODY, header:gsub("d546$", "d547"), at, "invalid" },
      { "a timestamp older than the window", SECRET, BODY, header, { now = T + 301 }, "expired" },
      { "a timestamp from the future", SECRET, BODY, header, { now = T - 301 }, "expired" },
      { "no v1", SECRET, BODY, "t=" .. T, at, "invalid" },
      { "no timestamp", SECRET, BODY, "v1=" .. vectors[1][4], at, "invalid" },
      { "a short v1", SECRET, BODY, "t=" .. T .. ",v1=abc", at, "invalid" },
      { "garbage", SECRET, BODY, "hello", at, "invalid" },
    }
    for _, row in ipairs(rows) do
      it("refuses " .. row[1], function()
        local ok, err = webhook.verify(row[2], row[3], row[4], row[5])
        assert.is_nil(ok)
        assert.are.equal(row[6], err.code)
        assert.are.equal("webhook", err.battery)
      end)
    end

    it("accepts any of several secrets (rotation) and any of several v1", function()
      assert.is_true(webhook.verify({ "whsec_new_000000000000", SECRET }, BODY, header, at))
      local two = "t=" .. T .. ",v1=" .. ("0"):rep(64) .. ",v1=" .. vectors[1][4]
      assert.is_true(webhook.verify(SECRET, BODY, two, at))
    end)

    it("takes tolerance 0 as no window", function()
      assert.is_true(webhook.verify(SECRET, BODY, header, { now = T + 1e6, tolerance = 0 }))
    end)
  end)

  describe("delivery", function()
    local t, srv, received, fail_with

    before_each(function()
      received, fail_with = {}, nil
      local app = zever.app()
      app:post("/hooks/:name", function(req, res)
        if fail_with then return res:status(fail_with):send("no") end
        local ok, err = webhook.verify("endpoint-secret-0001", req.body,
          req:header("zever-signature"))
        received[#received + 1] = { name = req.params.name, ok = ok, err = err,
          event = req:header("zever-event"), delivery = req:header("zever-delivery"),
          body = req.body }
        return res:status(204):send("")
      end)
      t = testing.app(app)
      srv = t:serve()
    end)

    after_each(function()
      srv:close()
      t:close()
    end)

    local function send(url, headers, body)
      local res = srv:fetch("POST", url:match("^https?://[^/]+(.*)$"), { headers = headers,
        body = body })
      return res.status
    end

    it("signs and delivers an event to each endpoint registered for it or for '*'", function()
      local hooks = webhook.new{ jobs = t.app.jobs, send = send }
      assert(hooks:register("order.paid", srv:url("/hooks/a"), "endpoint-secret-0001"))
      assert(hooks:register("*", srv:url("/hooks/b"), "endpoint-secret-0001"))
      assert(hooks:register("order.refunded", srv:url("/hooks/c"), "endpoint-secret-0001"))
      assert.are.equal(2, hooks:deliver("order.paid", { id = 7 }))
      local r = t:perform_jobs()
      assert.are.equal(2, r.done)
      assert.are.equal(2, #received)
      table.sort(received, function(x, y) return x.name < y.name end)
      for i, name in ipairs({ "a", "b" }) do
        assert.are.equal(name, received[i].name)
        assert.is_true(received[i].ok, tostring(received[i].err))
        assert.are.equal("order.paid", received[i].event)
        assert.are.equal('{"id":7}', received[i].body)
      end
      assert.are_not.equal(received[1].delivery, received[2].delivery)
      -- endpoints never shows a secret
      for _, e in ipairs(hooks:endpoints()) do assert.is_nil(e.secret) end
    end)

    it("retries a failing endpoint, dead-letters it, and delivers after a requeue", function()
      local hooks = webhook.new{ jobs = t.app.jobs, send = send, attempts = 3,
        backoff = { base = 0, cap = 0 } }
      assert(hooks:register("order.paid", srv:url("/hooks/a"), "endpoint-secret-0001"))
      fail_with = 500
      assert.are.equal(1, hooks:deliver("order.paid", { id = 8 }))
      local r = t:perform_jobs()
      assert.are.equal(3, r.ran)
      assert.are.equal(0, r.done)
      local dead = assert(t.app.jobs:failed())
      assert.are.equal(1, #dead)
      assert.matches("answered 500", dead[1].error)
      assert.is_nil(dead[1].error:find("endpoint-secret", 1, true))
      fail_with = nil
      assert.are.equal(1, t.app.jobs:retry("all"))
      assert.are.equal(1, t:perform_jobs().done)
      assert.are.equal(1, #received)
      assert.is_true(received[1].ok)
    end)

    it("refuses bad registrations and needs jobs to deliver", function()
      local hooks = webhook.new{ send = send }
      assert.are.equal("invalid", select(2, hooks:register("e", "ftp://x", "endpoint-secret-0001")).code)
      assert.are.equal("invalid", select(2, hooks:register("e", "http://x", "short")).code)
      assert.has_error(function() hooks:deliver("e", 1) end,
        "webhook:deliver: the webhooks have no jobs battery (opts.jobs)")
    end)
  end)
end)

describe("app.webhook", function()
  it("is resolved with the app's jobs battery", function()
    local app = zever.app()
    local hooks = assert(app.webhook)
    assert.are.equal("webhook", hooks.battery)
    assert.is_not_nil(app.jobs:handler(webhook.JOB))
  end)
end)
