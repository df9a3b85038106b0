-- zever.http's request parsing against RFC 9112, and against nginx: a table of malformed and
-- ambiguous requests, each sent on its own connection as raw bytes (spec/support/
-- raw_requests.py), to zever and, when the machine has Debian's nginx, to an nginx started here.
--
-- A row is { name, bytes, want, close, n = responses (1), nginx = { status, close } }: want is
-- the status RFC 9112 asks for ("ok" is 200), close whether the server must close after it, and
-- nginx what nginx 1.22 answers when that differs (it is asserted too, so the table documents
-- every divergence; "-" is no response). zever must match want and close exactly. Every request
-- the app runs is recorded with its body: no row may ever make it run a path named /smuggled, a
-- row's routes names a path it must run, and body the body that path must get.

local http = require "zever.http"
local nginx_server = require "spec.support.nginx_server"
local hs = require "spec.support.http_script"
local run_until = require("zever.testing").run_until

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "spec/host"
local CLIENT = here .. "/../support/raw_requests.py"

local MAX_BODY = 1024

local function get(path, extra, version)
  return "GET " .. path .. " HTTP/" .. (version or "1.1") .. "\r\nHost: t\r\n" .. (extra or "")
    .. "\r\n"
end

local function post(headers, body)
  return "POST /p HTTP/1.1\r\nHost: t\r\n" .. headers .. "\r\n" .. (body or "")
end

local SMUGGLED = "GET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n"
local CHUNKED = "Transfer-Encoding: chunked\r\n"

local rows = {
  -- valid requests: the baseline both servers must serve
  { "a simple GET", get("/"), "ok", false },
  { "an HTTP/1.0 GET without Host", "GET / HTTP/1.0\r\n\r\n", "ok", true },
  { "an HTTP/1.0 GET with Connection: keep-alive",
    "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "ok", false },
  { "Connection: close", get("/", "Connection: close\r\n"), "ok", true },
  { "a POST with Content-Length", post("Content-Length: 5\r\n", "hello"), "ok", false },
  { "Content-Length with leading zeros", post("Content-Length: 005\r\n", "hello"), "ok", false },
  { "a chunked POST", post(CHUNKED, "5\r\nhello\r\n0\r\n\r\n"), "ok", false },
  { "chunked in upper case", post("Transfer-Encoding: CHUNKED\r\n", "5\r\nhello\r\n0\r\n\r\n"),
    "ok", false },
  { "a space before chunked (OWS)", post("Transfer-Encoding:  chunked\r\n", "1\r\na\r\n0\r\n\r\n"),
    "ok", false },
  { "a space after chunked (OWS)", post("Transfer-Encoding: chunked \r\n", "1\r\na\r\n0\r\n\r\n"),
    "ok", false },
  { "a chunk extension", post(CHUNKED, "5;name=\"v\"\r\nhello\r\n0;x\r\n\r\n"), "ok", false },
  { "BWS before a chunk extension", post(CHUNKED, "5 ;x=1\r\nhello\r\n0\r\n\r\n"), "ok", false },
  { "a trailer field", post(CHUNKED, "5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n"), "ok", false },
  { "a trailer field ended by a bare LF", post(CHUNKED, "5\r\nhello\r\n0\r\nX-T: 1\n\r\n"),
    "ok", false },
  { "1,000 one-byte chunks (framing larger than the read buffer)",
    "POST /thousand HTTP/1.1\r\nHost: t\r\n" .. CHUNKED .. "\r\n" .. ("1\r\na\r\n"):rep(1000)
      .. "0\r\n\r\n", "ok", false, routes = "/thousand", body = ("a"):rep(1000) },
  { "upper-case hex chunk sizes", post(CHUNKED, "A\r\n0123456789\r\n0\r\n\r\n"), "ok", false },
  { "two pipelined GETs", get("/a") .. get("/b"), "ok", false, n = 2 },
  { "a CRLF before the request line", "\r\n" .. get("/"), "ok", false },
  { "bare LF line ends in the head", "GET / HTTP/1.1\nHost: t\n\n", "ok", false },
  { "obs-text in a header value", get("/", "X-A: caf\xe9\r\n"), "ok", false },
  { "a tab inside a header value", get("/", "X-A: a\tb\r\n"), "ok", false },
  { "an absolute-form target", "GET http://t/absolute HTTP/1.1\r\nHost: t\r\n\r\n", "ok", false,
    routes = "/absolute" },
  { "an https absolute-form target with a query",
    "GET HTTPS://t:8443/absolute2?x=1 HTTP/1.1\r\nHost: t\r\n\r\n", "ok", false,
    routes = "/absolute2" },
  { "an absolute-form target without a path", "GET http://t HTTP/1.1\r\nHost: t\r\n\r\n", "ok",
    false },
  { "OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n", "ok", false ,
    nginx = { 400, true } },
  { "HTTP/1.2 (served as 1.1)", get("/", nil, "1.2"), "ok", false },
  { "Host with a port", "GET / HTTP/1.1\r\nHost: t:8080\r\n\r\n", "ok", false },
  { "Host as an IPv6 literal", "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", "ok", false },

  -- Content-Length and Transfer-Encoding: ambiguity is a 400 and a close, whatever the spelling
  { "Content-Length and Transfer-Encoding",
    post("Content-Length: 5\r\n" .. CHUNKED, "0\r\n\r\n" .. SMUGGLED), 400, true },
  { "Transfer-Encoding and Content-Length",
    post(CHUNKED .. "Content-Length: 40\r\n", "0\r\n\r\n" .. SMUGGLED), 400, true },
  { "two equal Content-Lengths", post("Content-Length: 5\r\nContent-Length: 5\r\n", "hello"),
    400, true },
  { "two different Content-Lengths",
    post("Content-Length: 3\r\nContent-Length: 40\r\n", "abc" .. SMUGGLED), 400, true },
  { "a Content-Length list", post("Content-Length: 5, 5\r\n", "hello"), 400, true },
  { "a Content-Length with a plus sign", post("Content-Length: +5\r\n", "hello"), 400, true },
  { "a negative Content-Length", post("Content-Length: -1\r\n"), 400, true },
  { "a space inside Content-Length", post("Content-Length: 1 0\r\n", "0123456789"), 400, true },
  { "a hex Content-Length", post("Content-Length: 0x5\r\n", "hello"), 400, true },
  { "an empty Content-Length", post("Content-Length:\r\n"), 400, true },
  { "a space before the colon of Content-Length",
    post("Content-Length : 3\r\n", "abc" .. SMUGGLED), 400, true },
  { "a Content-Length past 2^64", post("Content-Length: 99999999999999999999\r\n"), 413, true,
    nginx = { 400, true } },
  { "a folded Content-Length", post("Content-Length: 3\r\n 0\r\n", "abc"), 400, true },
  { "two Transfer-Encoding headers", post(CHUNKED .. CHUNKED, "0\r\n\r\n"), 400, true },
  { "chunked twice in one list", post("Transfer-Encoding: chunked, chunked\r\n", "0\r\n\r\n"),
    400, true ,
    nginx = { 501, true } },
  { "Transfer-Encoding: gzip, chunked", post("Transfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n"),
    501, true },
  { "Transfer-Encoding: gzip (chunked not final)", post("Transfer-Encoding: gzip\r\n"), 400, true,
    nginx = { 501, true } },
  { "Transfer-Encoding: chunked, gzip", post("Transfer-Encoding: chunked, gzip\r\n"), 400, true,
    nginx = { 501, true } },
  { "Transfer-Encoding: identity", post("Transfer-Encoding: identity\r\n", "0\r\n\r\n"), 400,
    true, nginx = { 501, true } },
  { "Transfer-Encoding: xchunked", post("Transfer-Encoding: xchunked\r\n", "0\r\n\r\n"), 400,
    true, nginx = { 501, true } },
  { "an empty Transfer-Encoding", post("Transfer-Encoding:\r\n", "0\r\n\r\n"), 400, true,
    nginx = { 501, true } },
  { "a space before the colon of Transfer-Encoding",
    post("Transfer-Encoding : chunked\r\n", "0\r\n\r\n" .. SMUGGLED), 400, true },
  { "Transfer-Encoding : gzip, chunked (the issue's case)",
    post("Transfer-Encoding : gzip, chunked\r\n", "3\r\nabc\r\n0\r\n\r\n" .. SMUGGLED), 400, true },
  { "an obs-folded Transfer-Encoding",
    post("Transfer-Encoding:\r\n chunked\r\n", "0\r\n\r\n" .. SMUGGLED), 400, true },
  -- RFC 9110 lets OWS be a tab, but nginx (and other front ends) do not see chunked in
  -- "\tchunked": a back end that does is the other half of a desync. Refused, as nginx does.
  { "a tab before chunked", post("Transfer-Encoding:\tchunked\r\n", "1\r\na\r\n0\r\n\r\n"),
    400, true, nginx = { 501, true } },
  { "a tab after chunked", post("Transfer-Encoding: chunked\t\r\n", "1\r\na\r\n0\r\n\r\n"),
    400, true, nginx = { 501, true } },
  { "a vertical tab before chunked", post("Transfer-Encoding:\vchunked\r\n", "0\r\n\r\n"), 400,
    true ,
    nginx = { 501, true } },
  { "HTTP/1.0 with Transfer-Encoding",
    "POST /p HTTP/1.0\r\n" .. CHUNKED .. "\r\n0\r\n\r\n" .. SMUGGLED, 400, true },
  { "HTTP/1.0 with Transfer-Encoding and keep-alive",
    "POST /p HTTP/1.0\r\nConnection: keep-alive\r\n" .. CHUNKED .. "\r\n0\r\n\r\n" .. SMUGGLED,
    400, true },

  -- field lines: names are tokens, no folding, no control bytes
  { "a space inside a header name", get("/", "X A: b\r\n"), 400, true },
  { "a space before the colon of Host", "GET / HTTP/1.1\r\nHost : t\r\n\r\n", 400, true },
  { "a tab before a colon", get("/", "X-A\t: b\r\n"), 400, true },
  { "an empty header name", get("/", ": b\r\n"), 400, true },
  { "a header line without a colon", get("/", "X-A b\r\n"), 400, true },
  { "a non-token byte in a header name", get("/", "X@A: b\r\n"), 400, true ,
    nginx = { 200, false } },
  { "an obs-folded header", get("/", "X-A: a\r\n b\r\n"), 400, true },
  { "whitespace before the first header", "GET / HTTP/1.1\r\n Host: t\r\n\r\n", 400, true },
  { "a NUL byte in a header value", get("/", "X-A: a\0b\r\n"), 400, true },
  { "a bare CR in a header value", get("/", "X-A: a\rb\r\n"), 400, true },
  { "a DEL byte in a header value", get("/", "X-A: a\127b\r\n"), 400, true ,
    nginx = { 200, false } },
  { "a bare CR ending a header line", "GET / HTTP/1.1\r\nHost: t\rX-A: b\r\n\r\n", 400, true },

  -- Host: exactly one valid Host on HTTP/1.1
  { "HTTP/1.1 without Host", "GET / HTTP/1.1\r\n\r\n", 400, true },
  { "two Host headers", "GET / HTTP/1.1\r\nHost: t\r\nHost: u\r\n\r\n", 400, true },
  { "a second Host spelled 'Host :'", "GET / HTTP/1.1\r\nHost: t\r\nHost : y\r\n\r\n", 400, true },
  { "an invalid Host value", "GET / HTTP/1.1\r\nHost: a b@c/d\r\n\r\n", 400, true },
  { "an empty Host", "GET / HTTP/1.1\r\nHost:\r\n\r\n", 400, true },
  { "a Host with a path", "GET / HTTP/1.1\r\nHost: t/x\r\n\r\n", 400, true },
  { "a Host with a non-numeric port", "GET / HTTP/1.1\r\nHost: t:abc\r\n\r\n", 400, true ,
    nginx = { 200, false } },
  { "two Hosts on HTTP/1.0", "GET / HTTP/1.0\r\nHost: t\r\nHost: u\r\n\r\n", 400, true },
  { "absolute-form with userinfo", "GET http://u@t/x HTTP/1.1\r\nHost: t\r\n\r\n", 400, true },
  { "absolute-form with another scheme", "GET ftp://t/x HTTP/1.1\r\nHost: t\r\n\r\n", 400, true ,
    nginx = { 200, false } },
  { "absolute-form without Host", "GET http://t/x HTTP/1.1\r\n\r\n", 400, true },

  -- the request line
  { "an unknown method", "FOO / HTTP/1.1\r\nHost: t\r\n\r\n", 501, true ,
    nginx = { 200, false } },
  { "a lower-case method", "get / HTTP/1.1\r\nHost: t\r\n\r\n", 501, true ,
    nginx = { 400, true } },
  { "a method with a non-token byte", "G(T / HTTP/1.1\r\nHost: t\r\n\r\n", 400, true },
  { "two spaces after the method", "GET  / HTTP/1.1\r\nHost: t\r\n\r\n", 400, true ,
    nginx = { 200, false } },
  { "a tab between method and target", "GET\t/ HTTP/1.1\r\nHost: t\r\n\r\n", 400, true },
  { "a space after the version", "GET / HTTP/1.1 \r\nHost: t\r\n\r\n", 400, true ,
    nginx = { 200, false } },
  { "HTTP/2.0", get("/", nil, "2.0"), 505, true },
  { "a lower-case version", "GET / http/1.1\r\nHost: t\r\n\r\n", 400, true },
  { "a two-digit minor version", "GET / HTTP/1.10\r\nHost: t\r\n\r\n", 400, true ,
    nginx = { 200, false } },
  { "a malformed request line", "GARBAGE\r\n\r\n", 400, true },
  { "a control byte in the target", "GET /a\1b HTTP/1.1\r\nHost: t\r\n\r\n", 400, true },
  { "a target without a slash", "GET hello HTTP/1.1\r\nHost: t\r\n\r\n", 400, true },
  { "GET *", "GET * HTTP/1.1\r\nHost: t\r\n\r\n", 400, true },
  { "CONNECT", "CONNECT t:443 HTTP/1.1\r\nHost: t:443\r\n\r\n", 400, true },
  { "a bare CR ending the request line", "GET / HTTP/1.1\rHost: t\r\n\r\n", 400, true },

  -- chunked framing: exact
  { "two bytes that are not CRLF after chunk data",
    post(CHUNKED, "3\r\nabcXX" .. SMUGGLED .. "0\r\n\r\n"), 400, true },
  { "a bare LF after chunk data", post(CHUNKED, "3\r\nabc\n0\r\n\r\n"), 400, true ,
    nginx = { 200, false } },
  { "a bare CR after chunk data", post(CHUNKED, "3\r\nabc\r0\r\n\r\n"), 400, true },
  { "a chunk-size line ended by a bare LF", post(CHUNKED, "3\nabc\r\n0\r\n\r\n"), 400, true ,
    nginx = { 200, false } },
  { "a chunk extension ended by a bare LF", post(CHUNKED, "3;ext\nabc\r\n0\r\n\r\n"), 400, true ,
    nginx = { 200, false } },
  { "a last chunk ended by a bare LF", post(CHUNKED, "0\n\r\n"), 400, true ,
    nginx = { 200, false } },
  { "a space before a chunk size", post(CHUNKED, " 3\r\nabc\r\n0\r\n\r\n"), 400, true },
  { "a space after a chunk size", post(CHUNKED, "3 \r\nabc\r\n0\r\n\r\n"), 400, true ,
    nginx = { 200, false } },
  { "a chunk size that is not hex", post(CHUNKED, "g\r\nabc\r\n0\r\n\r\n"), 400, true },
  { "a negative chunk size", post(CHUNKED, "-3\r\nabc\r\n0\r\n\r\n"), 400, true },
  { "an empty chunk size", post(CHUNKED, "\r\nabc\r\n0\r\n\r\n"), 400, true },
  { "a chunk size past 2^64", post(CHUNKED, "ffffffffffffffffffff\r\nabc\r\n0\r\n\r\n"), 413, true,
    nginx = { 400, true } },
  { "a control byte in a chunk extension", post(CHUNKED, "3;a\1\r\nabc\r\n0\r\n\r\n"), 400, true ,
    nginx = { 200, false } },
  { "a chunk extension without a semicolon", post(CHUNKED, "3 x\r\nabc\r\n0\r\n\r\n"), 400, true ,
    nginx = { 200, false } },
  { "a 2,000-byte chunk extension",
    post(CHUNKED, "3;" .. ("x"):rep(2000) .. "\r\nabc\r\n0\r\n\r\n"), 400, true ,
    nginx = { 200, false } },
  { "an obs-folded trailer field", post(CHUNKED, "0\r\nX-T: 1\r\n 2\r\n\r\n"), 400, true ,
    nginx = { 200, false } },
  { "a space in a trailer field name", post(CHUNKED, "0\r\nX T: 1\r\n\r\n"), 400, true ,
    nginx = { 200, false } },
  { "chunk data longer than its size", post(CHUNKED, "2\r\nabc\r\n0\r\n\r\n" .. SMUGGLED), 400,
    true },

  -- limits
  { "a request line over max_header_bytes", get("/" .. ("a"):rep(9000)), 414, true },
  { "headers over max_header_bytes", get("/", "X-A: " .. ("a"):rep(9000) .. "\r\n"), 431, true,
    nginx = { 400, true } },
  { "a body over max_body_bytes", post("Content-Length: " .. (MAX_BODY + 1) .. "\r\n"), 413,
    true ,
    nginx = { 413, false } },
  { "a chunked body over max_body_bytes", post(CHUNKED, ("%x\r\n"):format(MAX_BODY + 1)), 413,
    true ,
    nginx = { 200, false } },
  { "an unknown expectation", get("/", "Expect: something\r\n"), 417, true ,
    nginx = { 200, false } },
}

local function hex(s)
  return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end))
end

-- Sends every row to port at once; returns { {statuses = {...}, close = bool}, ... } by row.
local function send_all(port)
  local cases = os.tmpname()
  local f = assert(io.open(cases, "w"))
  for _, row in ipairs(rows) do f:write(hex(row[2]), "\n") end
  f:close()
  local read = hs.python(function(out) return { CLIENT, cases, port, out } end)
  assert(run_until(read, 60), "the raw client did not finish")
  local content = read()
  os.remove(cases)
  local results = {}
  for line in content:gmatch("[^\n]+") do
    local statuses, state = line:match("^(%S+) (%a+)$")
    local list = {}
    for s in statuses:gmatch("[^,]+") do list[#list + 1] = tonumber(s) or s end
    results[#results + 1] = { statuses = list, close = state == "close" }
  end
  assert(#results == #rows, "one result per row")
  return results
end

local function want_status(row)
  return row[3] == "ok" and 200 or row[3]
end

describe("zever.http strict parsing", function()
  local srv, results
  local routed, bodies = {}, {}

  setup(function()
    srv = assert(http.listen({ port = 0, max_body_bytes = MAX_BODY, max_header_bytes = 8192 },
      function(req, _, path)
        routed[#routed + 1] = path
        bodies[path] = req:body()
        req:respond(200, "ok", { "Content-Type", "text/plain" })
      end))
    results = send_all(srv:port())
  end)

  teardown(function()
    if srv then srv:close() end
  end)

  it("has at least 60 rows", function()
    assert.is_true(#rows >= 60)
  end)

  for i, row in ipairs(rows) do
    it(("answers %s and %s for %s"):format(tostring(row[3]), row[4] and "closes" or "keeps open",
      row[1]), function()
      local r = results[i]
      local n = row.n or 1
      assert.are.equal(n, #r.statuses, "responses for " .. row[1])
      for k = 1, n do assert.are.equal(want_status(row), r.statuses[k]) end
      assert.are.equal(row[4], r.close, "close for " .. row[1])
    end)
  end

  it("never runs a smuggled request, routes absolute-form targets by path, decodes bodies",
    function()
    local seen = {}
    for _, p in ipairs(routed) do seen[p] = true end
    assert.is_nil(seen["/smuggled"])
    for _, row in ipairs(rows) do
      if row.routes then assert.is_true(seen[row.routes], row.routes .. " was routed") end
      if row.body then assert.are.equal(row.body, bodies[row.routes]) end
    end
  end)

  it("runs one request per expected 200, and no other", function()
    local ok = 0
    for _, row in ipairs(rows) do
      if row[3] == "ok" then ok = ok + (row.n or 1) end
    end
    assert.are.equal(ok, #routed)
  end)
end)

describe("nginx on the same rows", function()
  if not nginx_server.available() then
    pending("Debian's nginx is not installed (apt-get install nginx-light)")
    return
  end
  local ngx, results

  setup(function()
    ngx = assert(nginx_server.start({ max_body_bytes = MAX_BODY }))
    results = send_all(ngx.port)
  end)

  teardown(function()
    if ngx then ngx:stop() end
  end)

  it("answers as the table says (the RFC column, or the row's nginx column)", function()
    local wrong = {}
    for i, row in ipairs(rows) do
      local want = row.nginx or { want_status(row), row[4] }
      local r = results[i]
      if r.statuses[1] ~= want[1] or r.close ~= want[2] then
        wrong[#wrong + 1] = ("%s: nginx %s %s, table %s %s"):format(row[1],
          table.concat(r.statuses, ","), r.close and "close" or "open", tostring(want[1]),
          want[2] and "close" or "open")
      end
    end
    assert.are.same({}, wrong)
  end)
end)
