-- The HTTP client's pure core (host/httpc/resp.c): the response parser and the request head
-- writer, as golden rows. Every row is parsed whole and one byte at a time: the result must not
-- depend on how the bytes arrive.
local httpc = require "zever.httpc"

local CRLF = "\r\n"
local function r(...) return table.concat({ ... }, CRLF) end

-- { name, response bytes, no_body, expected: status, body, keep_alive, fields (flat) | error }
local ROWS = {
  { "a Content-Length body", r("HTTP/1.1 200 OK", "Content-Length: 5", "", "hello"), false,
    { status = 200, body = "hello", keep_alive = true, fields = { "Content-Length", "5" } } },
  { "a chunked body with an extension and a trailer",
    r("HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "", "5;ext=1", "hello", "6", " world",
      "0", "X-T: 1", "", ""), false,
    { status = 200, body = "hello world", keep_alive = true } },
  { "a body until the close (no length, no chunking)", r("HTTP/1.1 200 OK", "", "all of it"),
    false, { status = 200, body = "all of it", keep_alive = false } },
  { "HTTP/1.0 closes by default", r("HTTP/1.0 200 OK", "Content-Length: 2", "", "ok"), false,
    { status = 200, body = "ok", keep_alive = false } },
  { "HTTP/1.0 with keep-alive stays open",
    r("HTTP/1.0 200 OK", "Connection: keep-alive", "Content-Length: 2", "", "ok"), false,
    { status = 200, body = "ok", keep_alive = true } },
  { "Connection: close", r("HTTP/1.1 200 OK", "Connection: close", "Content-Length: 0", "", ""),
    false, { status = 200, body = "", keep_alive = false } },
  { "204 has no body even with a length", r("HTTP/1.1 204 No Content", "Content-Length: 9", "", ""),
    false, { status = 204, body = "" } },
  { "304 has no body", r("HTTP/1.1 304 Not Modified", "", ""), false, { status = 304, body = "" } },
  { "a response to HEAD has no body", r("HTTP/1.1 200 OK", "Content-Length: 100", "", ""), true,
    { status = 200, body = "", keep_alive = true } },
  { "interim 100 and 103 are skipped",
    r("HTTP/1.1 100 Continue", "", "HTTP/1.1 103 Early Hints", "Link: </a>", "",
      "HTTP/1.1 201 Created", "Content-Length: 1", "", "x"), false,
    { status = 201, body = "x", fields = { "Content-Length", "1" } } },
  { "values are trimmed and names keep their case",
    r("HTTP/1.1 200 OK", "X-A:   b c  ", "x-empty:", "Content-Length: 0", "", ""), false,
    { status = 200, fields = { "X-A", "b c", "x-empty", "", "Content-Length", "0" } } },
  { "bare LF line ends are read", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", false,
    { status = 200, body = "ok" } },
  { "a status line without a reason", r("HTTP/1.1 404", "Content-Length: 0", "", ""), false,
    { status = 404, body = "" } },
  { "equal Content-Length values agree", r("HTTP/1.1 200 OK", "Content-Length: 2, 2", "", "ok"),
    false, { status = 200, body = "ok" } },
  { "Transfer-Encoding other than chunked runs to the close",
    r("HTTP/1.1 200 OK", "Transfer-Encoding: gzip", "", "zz"), false,
    { status = 200, body = "zz", keep_alive = false } },
  { "chunked with a Content-Length: chunked wins and the connection closes",
    r("HTTP/1.1 200 OK", "Content-Length: 99", "Transfer-Encoding: chunked", "", "2", "ok", "0",
      "", ""), false, { status = 200, body = "ok", keep_alive = false } },
  -- errors
  { "conflicting Content-Length values", r("HTTP/1.1 200 OK", "Content-Length: 2", "Content-Length: 3",
    "", "ok"), false, "SYNTAX" },
  { "a negative Content-Length", r("HTTP/1.1 200 OK", "Content-Length: -1", "", ""), false, "SYNTAX" },
  { "obs-fold", r("HTTP/1.1 200 OK", "X-A: b", " c", "Content-Length: 0", "", ""), false, "SYNTAX" },
  { "a space before the colon", r("HTTP/1.1 200 OK", "X-A : b", "", ""), false, "SYNTAX" },
  { "not HTTP", r("ICY 200 OK", "", ""), false, "SYNTAX" },
  { "HTTP/2 in a status line", r("HTTP/2 200", "", ""), false, "SYNTAX" },
  { "a two-digit status", r("HTTP/1.1 20 OK", "", ""), false, "SYNTAX" },
  { "a bad chunk size", r("HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "", "zz", "", ""), false,
    "SYNTAX" },
  { "a chunk without its CRLF", r("HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "", "2", "okX",
    "0", "", ""), false, "SYNTAX" },
  { "an overflowing chunk size", r("HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "",
    "fffffffffffffffffff", "", ""), false, "SYNTAX" },
  { "a truncated Content-Length body", r("HTTP/1.1 200 OK", "Content-Length: 10", "", "short"),
    false, "IO" },
  { "a truncated chunked body", r("HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "", "5", "he"),
    false, "IO" },
  { "a truncated head", "HTTP/1.1 200 OK\r\nContent-Le", false, "IO" },
  { "a head over 16 KiB", "HTTP/1.1 200 OK\r\nX-Big: " .. string.rep("a", 17000) .. "\r\n\r\n",
    false, "TOOLONG" },
}

describe("zever.httpc core", function()
  describe("parse", function()
    for _, row in ipairs(ROWS) do
      local name, bytes, no_body, want = row[1], row[2], row[3], row[4]
      it(name, function()
        for _, step in ipairs{ #bytes, 1, 7 } do
          local t, code = httpc.parse(bytes, no_body, step)
          if type(want) == "string" then
            assert.is_nil(t, "step " .. step)
            assert.equals(want, code, "step " .. step)
          else
            assert.is_table(t, "step " .. step .. ": " .. tostring(code))
            assert.equals(want.status, t.status)
            if want.body then assert.equals(want.body, t.body) end
            if want.keep_alive ~= nil then assert.equals(want.keep_alive, t.keep_alive) end
            if want.fields then assert.same(want.fields, t.fields) end
          end
        end
      end)
    end

    it("stops at the end of a message and leaves the next bytes alone", function()
      local t = httpc.parse(r("HTTP/1.1 200 OK", "Content-Length: 2", "", "okHTTP/1.1 200 OK"), false)
      assert.equals("ok", t.body)
      assert.equals(#"HTTP/1.1 200 OK", t.rest)
    end)
  end)

  describe("write_head", function()
    local HEADS = {
      { "a GET with fields", { "GET", "/a?b=1", { "Host", "x", "Accept", "*/*" } },
        "GET /a?b=1 HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n" },
      { "a CONNECT authority", { "CONNECT", "h:443", { "Host", "h:443" } },
        "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n" },
      { "an empty value", { "POST", "/", { "X-E", "" } }, "POST / HTTP/1.1\r\nX-E: \r\n\r\n" },
      { "CRLF in a value", { "GET", "/", { "X-A", "a\r\nX-Injected: 1" } }, "INVAL" },
      { "LF in a value", { "GET", "/", { "X-A", "a\nb" } }, "INVAL" },
      { "a space in a name", { "GET", "/", { "X A", "b" } }, "INVAL" },
      { "a colon in a name", { "GET", "/", { "X:A", "b" } }, "INVAL" },
      { "a space in the target", { "GET", "/a b", {} }, "INVAL" },
      { "a method that is not a token", { "GE T", "/", {} }, "INVAL" },
      { "an empty target", { "GET", "", {} }, "INVAL" },
    }
    for _, row in ipairs(HEADS) do
      it(row[1], function()
        local head, msg, code = httpc.write_head(row[2][1], row[2][2], row[2][3])
        if row[3] == "INVAL" then
          assert.is_nil(head)
          assert.equals("INVAL", code)
          assert.is_string(msg)
        else
          assert.equals(row[3], head)
        end
      end)
    end
  end)

  describe("parse_url", function()
    it("splits an URL, with userinfo, an IPv6 literal and default ports", function()
      local u = httpc.parse_url("https://us%40er:p%3Ass@Example.COM/a/b?c=1#frag")
      assert.same({ "https", "example.com", 443, "/a/b?c=1", "us@er", "p:ss" },
        { u.scheme, u.host, u.port, u.target, u.user, u.password })
      u = httpc.parse_url("http://[::1]:8080?x")
      assert.same({ "::1", 8080, "/?x" }, { u.host, u.port, u.target })
    end)

    it("refuses what is not an absolute http(s) URL", function()
      for _, bad in ipairs{ "/relative", "ftp://h/", "http://", "http://h:99999/", "http://h/a b",
        "http://h\r\nX: y/" } do
        assert.is_nil(httpc.parse_url(bad), bad)
      end
    end)

    it("resolves a Location against the URL it came from", function()
      local base = "http://h:81/a/b?q=1"
      assert.equals("http://h:81/c", httpc.resolve(base, "/c"))
      assert.equals("http://h:81/a/d", httpc.resolve(base, "d"))
      assert.equals("http://h:81/a/b?z", httpc.resolve(base, "?z"))
      assert.equals("http://o/x", httpc.resolve(base, "//o/x"))
      assert.equals("https://o/", httpc.resolve(base, "https://o/"))
    end)
  end)
end)
