-- The mailer conformance suite: what every mailer adapter must do, through the front-end
-- (zever.mailer) that app.mailer is. Run it from an adapter's spec:
--
--   require_conformance("log", function() return mailer, last end)
--
-- open() returns a fresh front-end mailer and a function last() -> the most recently delivered
-- message as { message_id, headers (the rendered header block), to = {emails}, bcc = {emails} },
-- or nil when nothing was delivered. The suite closes the mailer it opened.

return function(name, open)
  describe("mailer conformance: " .. name, function()
    local mailer, last

    before_each(function() mailer, last = open() end)
    after_each(function() mailer:close() end)

    local function base(extra)
      local msg = { from = "sender@example.com", to = "rcpt@example.com", subject = "Hi", text = "hello" }
      for k, v in pairs(extra or {}) do msg[k] = v end
      return msg
    end

    it("returns the Message-ID of a delivered message", function()
      local id = assert(mailer:send(base()))
      assert.is_truthy(id:match("^<[^<>@]+@example%.com>$"), id)
      assert.are.equal(id, last().message_id)
    end)

    it("keeps a pinned Message-ID", function()
      assert.are.equal("<pinned@example.com>", mailer:send(base{ message_id = "pinned@example.com" }))
    end)

    it("delivers to Bcc without writing it into the headers", function()
      assert(mailer:send(base{ cc = "c@example.com", bcc = { "hidden@example.com" } }))
      local sent = last()
      assert.are.same({ "hidden@example.com" }, sent.bcc)
      assert.is_nil(sent.headers:find("hidden@example.com", 1, true))
      assert.is_nil(sent.headers:lower():find("\nbcc:", 1, true))
    end)

    local refused = {
      { "a CRLF in the subject", { subject = "x\r\nBcc: v@x.io" }, "subject contains CR or LF" },
      { "a LF in a recipient", { to = "a@b.c\nBcc: v@x.io" }, "to[1] contains CR or LF" },
      { "a LF in a custom header", { headers = { ["X-A"] = "a\nBcc: v@x.io" } }, "contains CR or LF" },
      { "an invalid address", { cc = "not-an-address" }, "cc[1] is not a valid email address" },
      { "a missing recipient", { to = {} }, "is empty" },
      { "a message over max_bytes", { text = string.rep("x", 300) }, "exceeds the size cap" },
    }
    for _, row in ipairs(refused) do
      it("refuses " .. row[1] .. " before delivering anything", function()
        local before = last()
        local id, err = mailer:send(base(row[2]))
        assert.is_nil(id)
        assert.are.equal("invalid", err.code)
        assert.is_truthy(tostring(err):find(row[3], 1, true), tostring(err))
        assert.are.same(before, last())
      end)
    end

    it("raises on a message of the wrong type", function()
      assert.has_error(function() mailer:send("hi") end, "mailer:send: the message must be a table")
      assert.has_error(function() mailer:send(base{ to = 42 }) end)
    end)

    it("returns closed after close", function()
      assert.is_true(mailer:close())
      local id, err = mailer:send(base())
      assert.is_nil(id)
      assert.are.equal("closed", err.code)
    end)
  end)
end
