-- The MIME builder (host/mime/ through zever.mime and zever.mime_core): golden rows for headers,
-- bodies and boundaries, header-injection attempts, the address checker, and a round trip of
-- every kind of message through Python's standard email package (spec/support/parse_mail.py),
-- which nobody here wrote.

local mime = require "zever.mime"
local core = require "zever.mime_core"
local json = require "zever.json"

local DATE = "Sun, 29 Nov 2026 22:54:38 +0000"
local HERE = debug.getinfo(1, "S").source:sub(2):match("^(.*)/[^/]*$") or "."
local PARSER = HERE .. "/../support/parse_mail.py"

local function pinned(msg)
  msg.from = msg.from or "a@b.c"
  if msg.to == nil and msg.cc == nil and msg.bcc == nil then msg.to = "t@b.c" end
  msg.date = msg.date or DATE
  msg.message_id = msg.message_id or "<id@b.c>"
  return msg
end

-- The raw (folded) value of a top-level header.
local function header(bytes, name)
  local head = bytes:match("^(.-\r\n)\r\n")
  return ("\r\n" .. head):match("\r\n" .. name:gsub("%p", "%%%0") .. ": (.-)\r\n%f[%S]")
end

local function python(bytes)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(bytes)
  f:close()
  local p = assert(io.popen(require("spec.support.process").PYTHON .. " " .. PARSER .. " " .. path .. " 2>&1"))
  local out = p:read("*a")
  p:close()
  os.remove(path)
  local parsed = json.decode(out)
  assert(type(parsed) == "table", "parse_mail.py failed: " .. out)
  return parsed
end

local function crlf_to_lf(s)
  return (s:gsub("\r\n", "\n"))
end

local function hex(s)
  return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end))
end

describe("zever.mime", function()
  describe("headers", function()
    local rows = {
      { "writes a plain ASCII subject as it is", "Subject", { subject = "Hello world" }, "Hello world" },
      { "encodes a short UTF-8 subject as one encoded word", "Subject", { subject = "Grüße" },
        "=?UTF-8?B?R3LDvMOfZQ==?=" },
      { "uses B encoding when it is shorter (CJK)", "Subject", { subject = "日本語のメール件名です" },
        "=?UTF-8?B?5pel5pys6Kqe44Gu44Oh44O844Or5Lu25ZCN44Gn44GZ?=" },
      { "folds a long ASCII subject at whitespace within 76 columns", "Subject",
        { subject = string.rep("word ", 20) .. "end" },
        "word word word word word word word word word word word word word\r\n"
          .. " word word word word word word word end" },
      { "splits a long UTF-8 subject into encoded words on folded lines", "Subject",
        { subject = "Ünïcödé " .. string.rep("long text ", 8) },
        "=?UTF-8?Q?=C3=9Cn=C3=AFc=C3=B6d=C3=A9_long_text_long_text_long_te?=\r\n"
          .. " =?UTF-8?Q?xt_long_text_long_text_long_text_long_text_long_text_?=" },
      { "encodes a subject that looks like an encoded word", "Subject", { subject = "=?utf-8?q?x?=" },
        "=?UTF-8?B?PT91dGYtOD9xP3g/PQ==?=" },
      { "encodes surrounding spaces so they survive", "Subject", { subject = " padded " },
        "=?UTF-8?Q?_padded_?=" },
      { "writes an atom display name bare", "From", { from = { name = "Zoe Smith", email = "z@x.io" } },
        "Zoe Smith <z@x.io>" },
      { "quotes a display name with a comma", "From", { from = { name = "Smith, John", email = "j@x.io" } },
        '"Smith, John" <j@x.io>' },
      { "escapes quotes and backslashes in a quoted name", "From",
        { from = { name = 'Say "hi" \\ there', email = "j@x.io" } }, [["Say \"hi\" \\ there" <j@x.io>]] },
      { "encodes a non-ASCII display name", "From", { from = { name = "Zoë", email = "z@x.io" } },
        "=?UTF-8?Q?Zo=C3=AB?= <z@x.io>" },
      { "encodes only the runs of a name that need it", "From",
        { from = { name = "Zoë Ünicode Smith", email = "z@x.io" } }, "=?UTF-8?B?Wm/DqyDDnG5pY29kZQ==?= Smith <z@x.io>" },
      { "parses a 'Name <addr>' string", "From", { from = "Zoë Q <z@x.io>" }, "=?UTF-8?Q?Zo=C3=AB?= Q <z@x.io>" },
      { "folds an address list between addresses", "To",
        { to = { "alice@example.com", { name = "Bob Builder", email = "bob@example.com" }, "carol@example.com",
          { name = "Dürer, Albrecht", email = "ad@example.com" }, "eve@example.com" } },
        "alice@example.com, Bob Builder <bob@example.com>, carol@example.com,\r\n"
          .. " =?UTF-8?B?RMO8cmVyLA==?= Albrecht <ad@example.com>, eve@example.com" },
      { "folds a long quoted name word by word, encoding the words with specials", "To",
        { to = { { name = "Dr. Jonathan Q. Public-Example, Esq., Head of Very Long Department Names",
          email = "j@x.io" } } },
        "=?UTF-8?B?RHIu?= Jonathan =?UTF-8?Q?Q=2E_Public-Example=2C_Esq=2E=2C?=\r\n"
          .. " Head of Very Long Department Names <j@x.io>" },
      { "writes a pinned Date", "Date", {}, DATE },
      { "brackets a pinned Message-ID", "Message-ID", { message_id = "abc@x.io" }, "<abc@x.io>" },
      { "writes custom headers sorted by name", "X-B", { headers = { ["X-B"] = "2", ["X-A"] = "1" } }, "2" },
    }
    for _, row in ipairs(rows) do
      it(row[1], function()
        local bytes = assert(mime.build(pinned(row[3])))
        assert.are.equal(row[4], header(bytes, row[2]))
      end)
    end

    it("writes the headers in a fixed order", function()
      local bytes = assert(mime.build(pinned{ reply_to = "r@b.c", to = "t@b.c", cc = "c@b.c", subject = "s", text = "x",
        headers = { ["X-B"] = "2", ["X-A"] = "1" } }))
      local names = {}
      for name in bytes:match("^(.-)\r\n\r\n"):gmatch("([%w-]+): ") do names[#names + 1] = name end
      assert.are.same({ "From", "Reply-To", "To", "Cc", "Subject", "Date", "Message-ID", "MIME-Version",
        "X-A", "X-B", "Content-Type", "Content-Transfer-Encoding" }, names)
    end)

    it("keeps headers given as pairs in their order", function()
      local bytes = assert(mime.build(pinned{ headers = { { "X-Z", "z" }, { "X-A", "a" } } }))
      assert.is_truthy(bytes:find("X-Z: z\r\nX-A: a\r\n", 1, true))
    end)

    it("never writes Bcc, but puts it in the envelope once", function()
      local bytes, env = assert(mime.build(pinned{ to = { "a@x.io", "B@x.io" }, cc = "b@x.io",
        bcc = { "hidden@x.io", "a@X.io" } }))
      assert.is_nil(bytes:lower():find("bcc", 1, true))
      assert.is_nil(bytes:find("hidden", 1, true))
      assert.are.same({ from = "a@b.c", to = { "a@x.io", "B@x.io", "hidden@x.io" } }, env)
    end)

    it("generates Date and a unique Message-ID on the From domain when not pinned", function()
      local a = assert(mime.build{ from = "z@mail.x.io", to = "t@b.c" })
      local b = assert(mime.build{ from = "z@mail.x.io", to = "t@b.c" })
      local ida, idb = header(a, "Message-ID"), header(b, "Message-ID")
      assert.is_truthy(ida:match("^<[%x.]+@mail%.x%.io>$"), ida)
      assert.are_not.equal(ida, idb)
      assert.is_truthy(header(a, "Date"):match("^%a%a%a, %d%d %a%a%a %d%d%d%d %d%d:%d%d:%d%d %+0000$"))
    end)
  end)

  describe("bodies", function()
    local qp = {
      { "escapes = and trailing whitespace", "a=b \nc", "a=3Db=20\r\nc" },
      { "breaks long lines softly at 76 columns", string.rep("x", 80), string.rep("x", 75) .. "=\r\nxxxxx" },
      { "escapes a tab before a line break and a lone CR", "tab\t\r\nlone\rcr", "tab=09\r\nlone=0Dcr" },
      { "escapes UTF-8 bytes", "é", "=C3=A9" },
      { "keeps a final line break", "end\n", "end\r\n" },
      { "writes nothing for nothing", "", "" },
    }
    for _, row in ipairs(qp) do
      it("quoted-printable " .. row[1], function() assert.are.equal(row[3], core.qp(row[2])) end)
    end
    local b64 = {
      { "of nothing is empty", "", "" },
      { "pads one byte", "h", "aA==" },
      { "pads two bytes", "he", "aGU=" },
      { "pads five bytes", "hello", "aGVsbG8=" },
      { "wraps at 76 columns with CRLF", string.rep("\255", 58), string.rep("/", 76) .. "\r\n/w==" },
    }
    for _, row in ipairs(b64) do
      it("base64 " .. row[1], function() assert.are.equal(row[3], core.base64(row[2])) end)
    end

    it("base64 round-trips every length up to 200 bytes", function()
      local decode = function(s)
        local alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        s = s:gsub("[^%w+/]", "")
        local out, bits, acc = {}, 0, 0
        for i = 1, #s do
          acc = acc * 64 + alpha:find(s:sub(i, i), 1, true) - 1
          bits = bits + 6
          if bits >= 8 then
            bits = bits - 8
            out[#out + 1] = string.char(math.floor(acc / 2 ^ bits) % 256)
            acc = acc % 2 ^ bits
          end
        end
        return table.concat(out)
      end
      local src = {}
      for n = 0, 200 do
        local s = table.concat(src)
        local enc = core.base64(s)
        for line in (enc .. "\r\n"):gmatch("(.-)\r\n") do assert.is_true(#line <= 76) end
        assert.are.equal(s, decode(enc))
        src[#src + 1] = string.char((n * 37 + 11) % 256)
      end
    end)

    it("uses base64 for a text that is mostly non-ASCII", function()
      local bytes = assert(mime.build(pinned{ text = string.rep("日本語", 20) }))
      assert.are.equal("base64", header(bytes, "Content-Transfer-Encoding"))
    end)
  end)

  describe("boundaries", function()
    it("derives stable boundaries containing =_ from the Message-ID", function()
      local msg = pinned{ text = "t", html = "<p>h</p>", attachments = { { "a.txt", "text/plain", "x" } } }
      local a = assert(mime.build(msg))
      local b = assert(mime.build(msg))
      assert.are.equal(a, b)
      local m = a:match('multipart/mixed;\r\n boundary="([^"]+)"')
      local alt = a:match('multipart/alternative;\r\n boundary="([^"]+)"')
      assert.are.equal("=_zv", m:sub(1, 4))
      assert.are.equal(m:sub(1, -3) .. "_a", alt)
      local other = assert(mime.build(pinned{ message_id = "<other@b.c>", text = "t", html = "h" }))
      assert.are_not.equal(alt, other:match('boundary="([^"]+)"'))
    end)

    it("cannot collide with content that contains the boundary", function()
      local first = assert(mime.build(pinned{ text = "t", html = "h" }))
      local bnd = first:match('boundary="([^"]+)"')
      local evil = "--" .. bnd .. "\n--" .. bnd .. "--\n"
      local bytes = assert(mime.build(pinned{ text = evil, html = evil,
        attachments = { { "x.txt", "text/plain", evil } } }))
      local _, n = bytes:gsub("\r\n%-%-" .. bnd:gsub("%p", "%%%0"), "")
      assert.are.equal(3, n) -- two parts and the close delimiter of the alternative
      local parsed = python(bytes)
      assert.are.equal(evil:gsub("\n", "\r\n"), parsed.parts[1].text:gsub("\r?\n", "\r\n"))
      assert.are.equal(hex(evil), parsed.parts[3].data_hex)
    end)
  end)

  describe("validation", function()
    local injections = {
      { "a subject with CRLF", { subject = "hi\r\nBcc: victim@x.io" }, "subject contains CR or LF" },
      { "a subject with a bare LF", { subject = "hi\nX: y" }, "subject contains CR or LF" },
      { "an address with LF", { to = "a@b.c\nBcc: v@x.io" }, "to[1] contains CR or LF" },
      { "a display name with CR", { to = { { name = "A\rB", email = "a@b.c" } } }, "to[1].name contains CR or LF" },
      { "a header value with LF", { headers = { ["X-A"] = "1\nBcc: v@x.io" } }, "headers[1].value contains CR or LF" },
      { "a header name with CRLF", { headers = { ["X-A\r\nBcc"] = "v" } }, "headers[1].name contains CR or LF" },
      { "a filename with LF", { attachments = { { "a\n.txt", "text/plain", "x" } } },
        "attachments[1].filename contains CR or LF" },
      { "a content type with CRLF", { attachments = { { "a.txt", "text/plain\r\nX: y", "x" } } },
        "attachments[1].content_type contains CR or LF" },
      { "a pinned date with LF", { date = "today\nX: y" }, "date contains CR or LF" },
      { "a pinned Message-ID with CR", { message_id = "<a@b>\rX: y" }, "message_id contains CR or LF" },
      { "a reply-to with a NUL", { reply_to = "a\0@b.c" }, "reply_to[1] contains a control character" },
      { "a subject that is not UTF-8", { subject = "\255\254" }, "subject is not valid UTF-8" },
      { "a reserved header", { headers = { ["bcc"] = "v@x.io" } }, "headers[1].name is set by the builder" },
      { "a header name with a colon", { headers = { ["X:Y"] = "v" } }, "headers[1].name is not a valid header name" },
      { "a bad content type", { attachments = { { "a", "text", "x" } } },
        "attachments[1].content_type is not a valid content type" },
      { "no recipient", { to = {} }, "to[1] is empty" },
      { "a bad cc address", { cc = { "ok@b.c", "not an address" } }, "cc[2] is not a valid email address" },
    }
    for _, row in ipairs(injections) do
      it("refuses " .. row[1], function()
        local bytes, err = mime.build(pinned(row[2]))
        assert.is_nil(bytes)
        assert.are.equal("invalid", err.code)
        assert.is_truthy(tostring(err):find(row[3], 1, true), tostring(err))
      end)
    end

    it("refuses a message over the size cap, 10 MiB by default", function()
      local big = string.rep("x", 10 * 1024 * 1024 + 1)
      local bytes, err = mime.build(pinned{ attachments = { { "big.bin", nil, big } } })
      assert.is_nil(bytes)
      assert.is_truthy(tostring(err):find("exceeds the size cap", 1, true))
      bytes, err = mime.build(pinned{ text = string.rep("x", 600) }, { max_bytes = 500 })
      assert.is_nil(bytes)
      assert.is_truthy(tostring(err):find("exceeds the size cap", 1, true))
      -- the rendered size counts, not just the raw bytes: 700 escaped bytes render past 1000
      bytes, err = mime.build(pinned{ text = string.rep("=", 700) }, { max_bytes = 1000 })
      assert.is_nil(bytes)
      assert.is_truthy(tostring(err):find("exceeds the size cap", 1, true))
      assert.is_truthy(mime.build(pinned{ text = "x" }, { max_bytes = 1000 }))
    end)

    it("raises on wrong types, blaming the caller", function()
      assert.has_error(function() mime.build("x") end, "mime.build: the message must be a table")
      assert.has_error(function() mime.build(pinned{ to = 5 }) end)
      assert.has_error(function() mime.build(pinned{ subject = 5 }) end, "mime.build: subject must be a string")
      assert.has_error(function() mime.build(pinned{ from = { "a@b.c", "c@d.e" } }) end,
        "mime.build: from must be one address, not a list")
      assert.has_error(function() mime.build(pinned{ attachments = { { filename = "a" } } }) end,
        "mime.build: attachments[1].data must be a string")
      assert.has_error(function() mime.build(pinned{ to = { { name = "x" } } }) end)
    end)

    it("handles more addresses, headers and attachments than its stack pools", function()
      local to, headers, atts = {}, {}, {}
      for i = 1, 40 do to[i] = "user" .. i .. "@example.com" end
      for i = 1, 20 do headers["X-H" .. string.format("%02d", i)] = tostring(i) end
      for i = 1, 10 do atts[i] = { "f" .. i .. ".txt", "text/plain", "data " .. i } end
      local bytes, env = assert(mime.build(pinned{ to = to, headers = headers, attachments = atts }))
      assert.are.equal(40, #env.to)
      local parsed = python(bytes)
      assert.are.equal(40, #parsed.addresses.to)
      assert.are.equal(11, #parsed.parts)
      assert.are.equal("20", parsed.headers["x-h20"])
    end)
  end)

  describe("addresses", function()
    local valid = { "a@b.c", "first.last+tag@sub.example.co.uk", "x@localhost", "a!#$%&'*+/=?^_`{|}~-@b.c",
      string.rep("l", 64) .. "@b.c", "a@" .. string.rep("d", 63) .. ".io", "a@1-2.3" }
    local invalid = { "", "a", "a@", "@b.c", "a..b@c.d", ".a@b.c", "a.@b.c", "a@-b.c", "a@b-.c", "a@b..c",
      "a@b.c.", "a@.b.c", string.rep("l", 65) .. "@b.c", "a@" .. string.rep("d", 64) .. ".io", "a b@c.d",
      "ä@b.c", "a@bä.c", "a@b_c.d", '"q"@b.c', "a@[127.0.0.1]", "a@b@c.d",
      "a@" .. string.rep("abcdefghi.", 26) .. "io" }
    for _, a in ipairs(valid) do
      it("accepts " .. a:sub(1, 40), function() assert.is_true(mime.check_address(a)) end)
    end
    for _, a in ipairs(invalid) do
      it("refuses " .. string.format("%q", a:sub(1, 40)), function() assert.is_false(mime.check_address(a)) end)
    end
    local parses = {
      { "a@b.c", "a@b.c", nil },
      { "  Zoë <z@x.io> ", "z@x.io", "Zoë" },
      { '"Smith, J. <x>" <j@x.io>', "j@x.io", "Smith, J. <x>" },
      { "<j@x.io>", "j@x.io", nil },
    }
    for _, row in ipairs(parses) do
      it("parses " .. row[1], function()
        local email, name = mime.parse_address(row[1])
        assert.are.equal(row[2], email)
        assert.are.equal(row[3], name)
      end)
    end
    for _, s in ipairs{ "Zoë z@x.io>", "Zoë <z@x.io", '"Zo"ë <z@x.io>', 'Z"o <z@x.io>', "Zoë <not>", "a@b.c\n" } do
      it("refuses to parse " .. string.format("%q", s), function() assert.is_nil((mime.parse_address(s))) end)
    end
  end)

  describe("Python's email package", function()
    local png = {}
    for i = 0, 1000 do png[#png + 1] = string.char((i * 97 + 13) % 256) end
    png = table.concat(png)
    local cases = {
      { "a text message", { subject = "Hello", text = "Hi there,\nsee you.\n" } },
      { "an html-only message", { subject = "H", html = "<p>Ünïcödé</p>" } },
      { "text and html", { subject = "Grüße aus Köln — " .. string.rep("lange Zeile ", 10),
        text = "Zeile eins\nZeile = zwei   \n" .. string.rep("long ", 40), html = "<p>Grüße</p>" } },
      { "an empty body", { subject = "" } },
      { "a text without a final newline", { text = "no newline" } },
      { "a CJK text in base64", { subject = "日本語のメール件名です、長いものです。" .. string.rep("件名", 20),
        text = string.rep("日本語のテキスト\n", 30) } },
      { "attachments with odd filenames", {
        from = { name = "Zoë Ünicode-Långname with a rather long display name here", email = "z@x.io" },
        to = { "a@b.c", { name = "Smith, John", email = "j@x.io" }, { name = 'Q "x" \\', email = "q@x.io" },
          { name = "Dürer", email = "d@x.io" },
          { name = "Dr. Jonathan Q. Public-Example, Esq., Head of Very Long Department Names", email = "p@x.io" } },
        cc = { "c@x.io" }, reply_to = "r@x.io", bcc = "secret@x.io",
        subject = "Files", text = "see attached", html = "<b>see</b>",
        headers = { ["X-Campaign"] = "Winter sale — 20% off", ["X-Long"] = string.rep("abc ", 40) .. "end" },
        attachments = {
          { filename = "report.pdf", content_type = "application/pdf", data = png },
          { filename = "naïve résumé.txt", content_type = "text/plain; charset=utf-8", data = "héllo\n" },
          { filename = 'quote"d.bin', data = "" },
          { filename = string.rep("x", 80) .. ".dat", content_type = "application/octet-stream", data = "12345" },
          { content_type = "image/png", data = png:sub(1, 100) },
        } } },
    }
    for _, case in ipairs(cases) do
      it("parses back " .. case[1] .. " to what was asked for", function()
        local msg = pinned(case[2])
        local bytes = assert(mime.build(msg))
        for line in bytes:gmatch("([^\n]*)\n") do
          assert.is_true(line:sub(-1) == "\r", "bare LF")
          if not line:find("^ filename%*=") then assert.is_true(#line - 1 <= 76, line) end
        end
        local p = python(bytes)
        assert.are.same({}, p.defects)
        assert.is_nil(p.headers.bcc)
        assert.are.equal(msg.subject, p.headers.subject)
        local function emails(list)
          if list == nil then return nil end
          if type(list) ~= "table" or list.email then list = { list } end
          local out = {}
          for i, a in ipairs(list) do
            out[i] = type(a) == "string" and { name = "", email = a } or { name = a.name or "", email = a.email }
          end
          return out
        end
        assert.are.same(emails(msg.from), p.addresses.from)
        assert.are.same(emails(msg.to), p.addresses.to)
        assert.are.same(emails(msg.cc), p.addresses.cc)
        assert.are.same(emails(msg.reply_to), p.addresses["reply-to"])
        for k, v in pairs(msg.headers or {}) do assert.are.equal(v, p.headers[k:lower()]) end
        local i = 1
        for _, kind in ipairs{ "text", "html" } do
          if msg[kind] or (kind == "text" and not msg.html) then
            assert.are.equal("text/" .. (kind == "text" and "plain" or "html"), p.parts[i].content_type)
            assert.are.equal(crlf_to_lf(msg[kind] or ""), crlf_to_lf(p.parts[i].text))
            i = i + 1
          end
        end
        for _, a in ipairs(msg.attachments or {}) do
          local part = p.parts[i]
          assert.are.equal("attachment", part.disposition)
          local filename = part.filename
          if filename == json.null then filename = nil end
          assert.are.equal(a.filename, filename)
          assert.are.equal((a.content_type or "application/octet-stream"):match("^[^;]+"), part.content_type)
          assert.are.equal(hex(a.data), part.data_hex)
          i = i + 1
        end
        assert.are.equal(i - 1, #p.parts)
      end)
    end
  end)
end)
