-- zever.mailer (the front-end), the log adapter through the conformance suite, the adapter
-- registration, and `zever mail test`.

local mailer_mod = require "zever.mailer"
local json = require "zever.json"

local HERE = debug.getinfo(1, "S").source:sub(2):match("^(.*)/[^/]*$") or "."
-- Loaded in this spec's environment, where busted's describe/it live.
local conformance = setfenv(assert(loadfile(HERE .. "/../conformance/mailer.lua")), getfenv(1))()

local function read_lines(path)
  local lines = {}
  local f = io.open(path, "rb")
  if not f then return lines end
  for line in f:lines() do lines[#lines + 1] = line end
  f:close()
  return lines
end

local function open_log(extra)
  local path = os.tmpname()
  local section = { adapter = "log", log_file = path, from = "", max_bytes = 10 * 1024 * 1024 }
  for k, v in pairs(extra or {}) do section[k] = v end
  local backend = assert(require("adapters.mailer.log").new(section))
  return mailer_mod.new(backend, section), path
end

conformance("log", function()
  local m, path = open_log{ max_bytes = 300 }
  return m, function()
    local lines = read_lines(path)
    if #lines == 0 then return nil end
    return json.decode(lines[#lines])
  end
end)

describe("zever.mailer", function()
  it("writes one JSON line per mail with headers and sizes", function()
    local m, path = open_log()
    local id = assert(m:send{ from = { name = "Zoë", email = "z@x.io" }, to = { "a@b.c", "d@e.f" }, bcc = "h@x.io",
      subject = "Grüße", text = "hello", html = "<p>hello</p>",
      attachments = { { filename = "a.txt", content_type = "text/plain", data = "abc" } } })
    m:close()
    local lines = read_lines(path)
    os.remove(path)
    assert.are.equal(1, #lines)
    local e = json.decode(lines[1])
    assert.are.equal(id, e.message_id)
    assert.are.equal("z@x.io", e.from)
    assert.are.same({ "a@b.c", "d@e.f" }, e.to)
    assert.are.same({ "h@x.io" }, e.bcc)
    assert.are.equal("Grüße", e.subject)
    assert.are.equal(5, e.text_bytes)
    assert.are.equal(12, e.html_bytes)
    assert.are.same({ { filename = "a.txt", content_type = "text/plain", bytes = 3 } }, e.attachments)
    assert.is_truthy(e.headers:find("^From: =%?UTF%-8%?Q%?Zo=C3=AB%?= <z@x%.io>\r\n"))
    assert.is_truthy(e.headers:find("Content-Type: multipart/mixed;", 1, true))
    assert.is_truthy(e.size > #e.headers)
    assert.is_truthy(e.time:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ$"))
  end)

  it("logs the headers and the size of exactly the message SMTP would send", function()
    -- The log mailer renders only the headers and measures the bodies: every shape of body
    -- (QP or base64, line breaks, trailing spaces, "=", empty) must size to the rendered bytes.
    local mime = require "zever.mime"
    local rng = 12345
    local function rand(n)
      rng = (rng * 1103515245 + 12345) % 2147483648
      return rng % n
    end
    local pieces = { "a", "word ", "=", " ", "\t", "\n", "\r\n", "é", "€", "\0", "\127", "abcdefg\127", string.rep("x", 90) }
    local function body()
      local t = {}
      for i = 1, rand(40) do t[i] = pieces[rand(#pieces) + 1] end
      return table.concat(t)
    end
    local m, path = open_log()
    local sent = {}
    for i = 1, 200 do
      local msg = { from = "z@x.io", to = "a@b.c", subject = "s" .. i,
        message_id = "<" .. i .. "@x.io>", date = "Mon, 30 Nov 2026 01:00:00 +0000" }
      local shape = i % 4
      if shape ~= 1 then msg.text = body() end
      if shape ~= 0 then msg.html = body() end
      if i % 3 == 0 then
        msg.attachments = { { filename = "f" .. i .. ".bin", data = body() } }
      end
      assert(m:send(msg))
      sent[i] = msg
    end
    m:close()
    local lines = read_lines(path)
    os.remove(path)
    assert.are.equal(#sent, #lines)
    for i, msg in ipairs(sent) do
      local e = json.decode(lines[i])
      local bytes = assert(mime.build(msg))
      assert.are.equal(#bytes, e.size, "message " .. i)
      assert.are.equal(bytes:sub(1, #e.headers), e.headers, "message " .. i)
      assert.are.equal("\r\n", bytes:sub(#e.headers + 1, #e.headers + 2), "message " .. i)
    end
  end)

  it("writes the same line through the FFI path as through the classic binding", function()
    -- headers = {} renders nothing but sends the message down the classic path (send_fields).
    local many = {}
    for i = 1, 40 do many[i] = "r" .. i .. "@x.io" end
    local msgs = {
      { from = { name = "Zoë Example", email = "zoe@example.com" },
        to = { "alice@example.com", { name = "Bob Smith", email = "bob@example.org" } },
        bcc = "audit@example.com", subject = "Your order #12345 has shipped — Grüße",
        text = "Hello Alice,\n\nIt shipped.\n", html = "<p>Hello</p>\n" },
      { from = "App <app@x.io>", to = "\"Smith, Jo\" <jo@x.io>", cc = { { email = "c@x.io" } },
        reply_to = "r@x.io", subject = "plain", text = "" },
      { to = many, subject = string.rep("ü", 80), html = string.rep("=", 50) },
      { from = "a@b.c", to = {}, cc = "c@d.e", subject = "", text = "\127 DEL" },
    }
    local m, path = open_log{ from = "Default <d@x.io>" }
    for i, msg in ipairs(msgs) do
      msg.message_id, msg.date = "<" .. i .. "@x.io>", "Mon, 30 Nov 2026 01:00:00 +0000"
      local classic = { headers = {} }
      for k, v in pairs(msg) do classic[k] = v end
      assert.are.equal(msg.message_id, m:send(msg))
      assert.are.equal(msg.message_id, m:send(classic))
    end
    m:close()
    local lines = read_lines(path)
    os.remove(path)
    assert.are.equal(2 * #msgs, #lines)
    for i = 1, #msgs do
      local fast, classic = json.decode(lines[2 * i - 1]), json.decode(lines[2 * i])
      fast.time, classic.time = nil, nil
      assert.are.same(classic, fast, "message " .. i)
    end
    assert.are.equal(40, #json.decode(lines[5]).to)
  end)

  it("refuses and raises on the FFI path's shapes exactly as the classic binding does", function()
    local m = open_log()
    local cases = {
      { to = "bad" }, { to = { "a@b.c", "x@-y.z" } }, { from = "Zoë <z@x.io", to = "a@b.c" },
      { to = "a@b.c\r\nBcc: evil@x.io" }, { to = "a@b.c", subject = "x\ny" },
      { to = { "a@b.c", 42 } }, { from = { email = "z@x.io", name = 7 }, to = "a@b.c" },
      { to = "a@b.c", subject = 5 }, { to = "a@b.c", text = false }, { to = { { name = "n" } } },
      { from = { "a@b.c", "c@d.e" }, to = "a@b.c" }, { to = "a@b.c", text = "\255" },
    }
    local function outcome(msg)
      local ok, id, err = pcall(m.send, m, msg)
      if not ok then return "raised: " .. tostring(id) end
      if id then return "sent" end
      return err.code .. ": " .. tostring(err)
    end
    for i, msg in ipairs(cases) do
      if msg.from == nil then msg.from = "z@x.io" end
      local classic = { headers = {} }
      for k, v in pairs(msg) do classic[k] = v end
      local got = outcome(msg)
      assert.are_not.equal("sent", got, "case " .. i)
      assert.are.equal(outcome(classic), got, "case " .. i)
    end
    m:close()
  end)

  it("uses mailer.from when a message has no From", function()
    local m, path = open_log{ from = "App <app@x.io>" }
    assert(m:send{ to = "a@b.c", text = "x" })
    m:close()
    local e = json.decode(read_lines(path)[1])
    os.remove(path)
    assert.are.equal("app@x.io", e.from)
  end)

  it("refuses a message without From when no default is configured", function()
    local m = open_log()
    local id, err = m:send{ to = "a@b.c" }
    assert.is_nil(id)
    assert.are.equal("invalid", err.code)
    assert.are.equal("mailer: from is missing: a message needs exactly one From address", tostring(err))
  end)

  it("returns unavailable when the log file cannot be opened", function()
    local backend, err = require("adapters.mailer.log").new{ log_file = "/nonexistent/dir/mail.log" }
    assert.is_nil(backend)
    assert.are.equal("unavailable", err.code)
  end)

  it("is what app.mailer resolves to with the default config", function()
    local path = os.tmpname()
    local cfg = assert(require("zever.config").load{ dir = "/nonexistent-zever-dir",
      env = { MAILER_LOG_FILE = path } })
    assert.are.equal("log", cfg.mailer.adapter)
    assert.are.equal(10 * 1024 * 1024, cfg.mailer.max_bytes)
    local c = require("zever.container").new(cfg)
    local m = assert(c:get("mailer"))
    assert(m:send{ from = "a@b.c", to = "c@d.e", text = "x" })
    assert(c:close())
    assert.are.equal(1, #read_lines(path))
    os.remove(path)
  end)

  it("sends a test message with zever mail test", function()
    local dir = require("spec.support.files").tmpdir()
    local log = dir .. "/mail.log"
    local f = assert(io.open(dir .. "/zever.yaml", "w"))
    f:write("mailer:\n  log_file: ", log, "\n  from: ops@x.io\n")
    f:close()
    local zever = require("zever.sys").exe()
    local p = io.popen(zever .. " mail test --to someone@example.com --app " .. dir .. " 2>&1")
    local out = p:read("*a")
    p:close()
    assert.is_truthy(out:match("^<[^>]+@x%.io>\n$"), out)
    local e = json.decode(read_lines(log)[1])
    assert.are.equal("zever mail test", e.subject)
    assert.are.same({ "someone@example.com" }, e.to)
    os.execute("rm -rf " .. dir)
  end)
end)
