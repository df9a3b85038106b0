-- zever.webhook delivers through zever.httpc when no send function is given: a real POST to a
-- receiver served by zever on loopback, signed, and retried then dead-lettered on a 500.
local zever = require "zever"
local testing = require "zever.testing"
local webhook = require "zever.webhook"
local httpc = require "zever.httpc"

describe("zever.webhook over zever.httpc", function()
  local t, srv, received, fail_with

  before_each(function()
    received, fail_with = {}, nil
    local app = zever.app()
    app:post("/hooks/:name", function(req, res)
      if fail_with then return res:status(fail_with):send("no") end
      local ok, err = webhook.verify("endpoint-secret-0001", req.body, req:header("zever-signature"))
      received[#received + 1] = { name = req.params.name, ok = ok, err = err, body = req.body,
        event = req:header("zever-event") }
      return res:status(204):send("")
    end)
    t = testing.app(app)
    srv = t:serve()
  end)

  after_each(function()
    httpc.close_idle()
    srv:close()
    t:close()
  end)

  it("signs and posts a delivery with the default sender", function()
    local hooks = webhook.new{ jobs = t.app.jobs }
    assert(hooks:register("order.paid", srv:url("/hooks/a"), "endpoint-secret-0001"))
    assert.equals(1, hooks:deliver("order.paid", { id = 7 }))
    assert.equals(1, t:perform_jobs().done)
    assert.equals(1, #received)
    assert.is_true(received[1].ok, tostring(received[1].err))
    assert.equals('{"id":7}', received[1].body)
    assert.equals("order.paid", received[1].event)
  end)

  it("fails the job on a 500 and on a refused connection, without the URL's credentials", function()
    local hooks = webhook.new{ jobs = t.app.jobs, attempts = 1, backoff = { base = 0, cap = 0 } }
    assert(hooks:register("order.paid", srv:url("/hooks/a"), "endpoint-secret-0001"))
    assert(hooks:register("order.paid", "http://user:pw-secret@127.0.0.1:1/hooks/b",
      "endpoint-secret-0001"))
    fail_with = 500
    assert.equals(2, hooks:deliver("order.paid", { id = 8 }))
    local r = t:perform_jobs()
    assert.equals(0, r.done)
    local dead = assert(t.app.jobs:failed())
    assert.equals(2, #dead)
    local text = dead[1].error .. "\n" .. dead[2].error
    assert.matches("answered 500", text)
    assert.matches("refused", text)
    assert.is_nil(text:find("pw-secret", 1, true), text)
  end)
end)
