-- zever.http against real sockets: the server runs on this state's loop, and a scripted raw
-- client (spec/support/http_client.py) or curl runs in the background while loop.run() serves.

local loop = require "zever.loop"
local http = require "zever.http"
local process = require "spec.support.process"

local hs = require "spec.support.http_script"
local client, curl, get = hs.client, hs.curl, hs.get
local q = process.quote

local run_until = require("zever.testing").run_until

local servers = hs.server_set()
local serve = servers.serve

local function echo(req, method, path, query)
  req:respond(200, method .. " " .. path .. " " .. tostring(query) .. " " .. req:body(),
    { "Content-Type", "text/plain" })
end

describe("zever.http", function()
  after_each(servers.close)

  describe("listen", function()
    it("picks a free port when port is 0", function()
      local srv = serve({}, echo)
      assert.is_true(srv:port() > 0)
    end)

    it("returns nil and a message when the port is taken without reuseport", function()
      local _, port = serve({ reuseport = false }, echo)
      local srv, err = http.listen({ port = port, reuseport = false }, echo)
      assert.is_nil(srv)
      assert.matches("address already in use", err)
    end)

    it("lets two servers bind the same port with reuseport", function()
      local _, port = serve({}, echo)
      local srv2 = assert(http.listen({ port = port }, echo))
      assert.are.equal(port, srv2:port())
      srv2:close()
    end)

    it("raises on an unknown option", function()
      assert.has_error(function() http.listen({ prot = 1 }, echo) end,
        "http.listen: unknown option 'prot'")
    end)
  end)

  describe("requests", function()
    it("answers a simple GET with Content-Length, Date and Server", function()
      local _, port = serve({}, echo)
      local out = curl("-i " .. q("http://127.0.0.1:" .. port .. "/hello?x=1"))
      assert.matches("^HTTP/1.1 200 OK\r\n", out)
      assert.matches("\r\nContent%-Length: 15\r\n", out)
      assert.matches("\r\nDate: %a%a%a, %d%d %a%a%a %d%d%d%d %d%d:%d%d:%d%d GMT\r\n", out)
      assert.matches("\r\nServer: zever\r\n", out)
      assert.matches("\r\n\r\nGET /hello x=1 $", out)
    end)

    it("passes nil as the query when the URL has none, and the raw path", function()
      local _, port = serve({}, echo)
      local out = curl(q("http://127.0.0.1:" .. port .. "/a%20b/c"))
      assert.are.equal("GET /a%20b/c nil ", out)
    end)

    -- The target is scanned 8 bytes at a time (parse.c's target_end): the first "?" and the
    -- byte that ends the target land at every place in a word, and in the byte loop after it.
    it("splits the target at its first ? wherever it falls in an 8-byte word", function()
      local _, port = serve({}, echo)
      local steps, want = {}, {}
      local letters = "abcdefghijklmnopqrstu"
      for k = 0, 18 do
        local path = "/" .. letters:sub(1, k)
        for _, query in ipairs({ false, "", "x=1", "a?b", letters:sub(1, 9) }) do
          local target = query and path .. "?" .. query or path
          steps[#steps + 1] = "send:GET " .. target .. " HTTP/1.1\\r\\nHost: t\\r\\n\\r\\n"
          steps[#steps + 1] = "resp:5"
          want[#want + 1] = "GET " .. path .. " " .. (query and query or "nil") .. " "
        end
      end
      local out = client(port, steps)
      local got = {}
      for resp in out:gmatch("%[resp%]([^%[]*)") do got[#got + 1] = resp:match("\r\n\r\n(.*)$") end
      assert.are.equal(#want, #got)
      assert.same(want, got)
    end)

    it("refuses a control byte or DEL at any place of the target, and takes obs-text", function()
      local _, port = serve({}, echo)
      for _, k in ipairs({ 0, 1, 5, 6, 7, 8, 9, 14, 15, 16, 17 }) do
        local path = "/" .. ("p"):rep(k)
        for _, bad in ipairs({ "\\x7f", "\\x01", "\\t" }) do
          local out = client(port, { "send:GET " .. path .. bad .. "z?q HTTP/1.1\\r\\nHost: t\\r\\n\\r\\n",
            "read:5" })
          assert.matches("^HTTP/1.1 400 ", (out:gsub("^%[%a+%]", "")))
        end
        local out = client(port, { "send:GET " .. path .. "\\xe9z?q HTTP/1.1\\r\\nHost: t\\r\\n\\r\\n",
          "resp:5" })
        assert.matches("\r\n\r\nGET " .. path .. "\xe9z q $", (out:gsub("^%[%a+%]", "")))
      end
    end)

    it("reads headers case-insensitively and joins repeated ones", function()
      local seen
      local _, port = serve({}, function(req)
        seen = { req:header("x-a"), req:header("X-B"), req:header("missing"), req:headers() }
        req:respond(204)
      end)
      client(port, { get("/", "X-A: 1\\r\\nx-a: 2\\r\\nX-B:  spaced  \\r\\n"), "resp:2" })
      assert.are.equal("1, 2", seen[1])
      assert.are.equal("spaced", seen[2])
      assert.is_nil(seen[3])
      assert.are.equal("1, 2", seen[4]["x-a"])
      assert.are.equal("t", seen[4].host)
    end)

    it("gives the body of a POST", function()
      local _, port = serve({}, echo)
      assert.are.equal("POST /p nil hello", curl("-d hello " .. q("http://127.0.0.1:" .. port .. "/p")))
    end)

    it("decodes a chunked request body", function()
      local _, port = serve({}, echo)
      local out = client(port, {
        "send:POST /c HTTP/1.1\\r\\nHost: t\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n"
          .. "5\\r\\nhello\\r\\n6;ext=1\\r\\n world\\r\\n",
        "sleep:0.05",
        "send:1\\r\\n!\\r\\n0\\r\\n\\r\\n",
        "resp:2",
      })
      assert.matches("\r\n\r\nPOST /c nil hello world!$", out)
    end)

    it("tells version, remote address and answered state", function()
      local seen
      local _, port = serve({}, function(req)
        local ip, rport = req:remote_addr()
        seen = { req:version(), ip, rport, req:answered() }
        req:respond(200, "ok")
        seen[5] = req:answered()
      end)
      client(port, { "send:GET / HTTP/1.0\\r\\n\\r\\n", "read:2" })
      assert.same({ "1.0", "127.0.0.1", seen[3], false, true }, seen)
      assert.is_true(seen[3] > 0)
    end)

    it("answers a HEAD request with the Content-Length of the body and no body", function()
      local _, port = serve({}, function(req) req:respond(200, "hello") end)
      local out = client(port, { get("/", "Connection: close\\r\\n"), "read:2" })
      assert.matches("^%[eof%]HTTP/1.1 200 OK\r\n", out:gsub("^%[eof%]GET", "[eof]"))
      out = client(port, { "send:HEAD / HTTP/1.1\\r\\nHost: t\\r\\nConnection: close\\r\\n\\r\\n", "read:2" })
      assert.matches("Content%-Length: 5\r\n", out)
      assert.matches("\r\n\r\n$", out)
    end)

    it("sends a response given later from a timer", function()
      local _, port = serve({}, function(req)
        loop.after(0.05, function() req:respond(200, "later") end)
      end)
      assert.are.equal("later", curl(q("http://127.0.0.1:" .. port .. "/")))
    end)

    it("streams a chunked response with write_head, write and finish", function()
      local _, port = serve({}, function(req)
        req:write_head(200, { "Content-Type", "text/plain" })
        req:write("hello")
        loop.after(0.02, function()
          req:write(", world")
          req:finish()
        end)
      end)
      local out = client(port, { get("/", "Connection: close\\r\\n"), "read:2" })
      assert.matches("Transfer%-Encoding: chunked\r\n", out)
      assert.matches("\r\n\r\n5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n$", out)
      assert.are.equal("hello, world", curl(q("http://127.0.0.1:" .. port .. "/")))
    end)

    it("closes after a response whose headers say Connection: close, and keeps given Date/Server", function()
      local _, port = serve({}, function(req)
        req:respond(200, "bye", { "Connection", "close", "Server", "mine", "Date", "today" })
      end)
      local out = client(port, { get("/"), "read:2" })
      assert.matches("^%[eof%]HTTP/1.1 200 OK\r\n", out)
      assert.matches("\r\nConnection: close\r\n", out)
      assert.matches("\r\nServer: mine\r\n", out)
      assert.matches("\r\nDate: today\r\n", out)
      assert.is_nil(out:find("zever", 1, true))
      local _, n = out:gsub("Connection:", "")
      assert.are.equal(1, n)
    end)

    it("answers 500 with a JSON body when the handler raises", function()
      local _, port = serve({}, function() error("boom") end)
      local out = curl("-i " .. q("http://127.0.0.1:" .. port .. "/"))
      assert.matches("^HTTP/1.1 500 Internal Server Error\r\n", out)
      assert.matches('\r\n\r\n{"error":"internal"}$', out)
    end)

    it("raises when a request is answered twice", function()
      local err
      local _, port = serve({}, function(req)
        req:respond(200, "one")
        err = select(2, pcall(req.respond, req, 200, "two"))
      end)
      assert.are.equal("one", curl(q("http://127.0.0.1:" .. port .. "/")))
      assert.matches("request already answered", err)
    end)

    it("raises on a response header with a line break, sending nothing", function()
      local err
      local _, port = serve({}, function(req)
        err = select(2, pcall(req.respond, req, 200, "x", { "X-Evil", "a\r\nSet-Cookie: b" }))
        req:respond(200, "safe")
      end)
      assert.are.equal("safe", curl(q("http://127.0.0.1:" .. port .. "/")))
      assert.matches("invalid response header", err)
    end)

    it("returns nil, 'closed' when the client went away before the response", function()
      local result
      local _, port = serve({}, function(req)
        loop.after(0.2, function() result = { req:respond(200, "late") } end)
      end)
      client(port, { get("/"), "close" })
      assert.is_true(run_until(function() return result ~= nil end, 5))
      assert.same({ nil, "closed" }, result)
    end)
  end)

  describe("connections", function()
    it("keeps an HTTP/1.1 connection open for a second request", function()
      local ports = {}
      local _, port = serve({}, function(req)
        ports[#ports + 1] = select(2, req:remote_addr())
        req:respond(200, "r" .. #ports)
      end)
      local out = client(port, { get("/1"), "resp:2", get("/2"), "resp:2" })
      assert.matches("r1%[resp%]HTTP/1.1 200 OK.*r2$", out)
      assert.are.equal(2, #ports)
      assert.are.equal(ports[1], ports[2])
    end)

    -- A response like the connection's previous one reuses that head's status line and headers
    -- (stream_write.c, zv__http_build_head): each answer must still say what its own call asked.
    it("builds each keep-alive response's head from its own status, headers and length", function()
      local answers = {
        ["/a"] = { 200, "one", { "Content-Type", "text/plain" } },
        ["/b"] = { 200, "two!", { "Content-Type", "text/html!" } },   -- same lengths, other bytes
        ["/c"] = { 200, "3", { "Content-Type", "text/html!", "X-A", "1" } },
        ["/d"] = { 201, "four", { "Content-Type", "text/html!", "X-A", "1" } },
        ["/e"] = { 201, "", { "Content-Type", "text/html!", "X-A", "2" } },
        ["/f"] = { 201, "six", { "Content-Type", "text/html!", "Server", "mine" } },
        ["/g"] = { 201, "seven", { "Content-Type", "text/html!", "Server", "mine" } },
        ["/h"] = { 201, "eight", { "Content-Type", "text/html!" } },
      }
      local errs = {}
      local _, port = serve({}, function(req, _, path)
        if path == "/bad" then
          -- Same lengths as a head sent just before, one byte a line break: still refused.
          req:respond(200, "ok", { "X-Evil", "abcdefghijklmno" })
          errs[#errs + 1] = "sent"
          return
        elseif path == "/bad2" then
          local ok, err = pcall(req.respond, req, 200, "x", { "X-Evil", "a\r\nSet-Cookie:b" })
          errs[#errs + 1] = ok and "accepted" or err
          req:respond(200, "safe", { "X-Evil", "abcdefghijklmno" })
          return
        end
        local a = answers[path]
        req:respond(a[1], a[2], a[3])
      end)
      local steps = {}
      for _, p in ipairs({ "/a", "/a", "/b", "/c", "/d", "/e", "/f", "/g", "/h", "/bad", "/bad2" }) do
        steps[#steps + 1] = get(p)
        steps[#steps + 1] = "resp:2"
      end
      local out = client(port, steps)
      local heads = {}
      for part in out:gmatch("HTTP/1%.1 .-\r\n\r\n[^%[]*") do heads[#heads + 1] = part end
      assert.are.equal(11, #heads, out)
      local function has(i, pattern) assert.matches(pattern, heads[i]) end
      local function lacks(i, text) assert.is_nil(heads[i]:find(text, 1, true), heads[i]) end
      for i = 1, 2 do
        has(i, "^HTTP/1%.1 200 OK\r\nContent%-Type: text/plain\r\nContent%-Length: 3\r\n")
        has(i, "\r\nServer: zever\r\n\r\none$")
      end
      has(3, "^HTTP/1%.1 200 OK\r\nContent%-Type: text/html!\r\nContent%-Length: 4\r\n.*\r\n\r\ntwo!$")
      has(4, "^HTTP/1%.1 200 OK\r\nContent%-Type: text/html!\r\nX%-A: 1\r\nContent%-Length: 1\r\n")
      has(5, "^HTTP/1%.1 201 Created\r\nContent%-Type: text/html!\r\nX%-A: 1\r\nContent%-Length: 4\r\n")
      has(6, "^HTTP/1%.1 201 Created\r\nContent%-Type: text/html!\r\nX%-A: 2\r\nContent%-Length: 0\r\n")
      for i = 7, 8 do
        has(i, "^HTTP/1%.1 201 Created\r\nContent%-Type: text/html!\r\nServer: mine\r\n")
        lacks(i, "zever")
      end
      has(8, "\r\n\r\nseven$")
      has(9, "^HTTP/1%.1 201 Created\r\nContent%-Type: text/html!\r\nContent%-Length: 5\r\n")
      has(9, "\r\nServer: zever\r\n\r\neight$")
      has(10, "\r\nX%-Evil: abcdefghijklmno\r\n")
      has(11, "\r\nX%-Evil: abcdefghijklmno\r\n.*\r\n\r\nsafe$")
      lacks(11, "Set-Cookie")
      assert.are.equal("sent", errs[1])
      assert.matches("invalid response header", errs[2])
    end)

    it("answers pipelined requests in order, even when the first answers later", function()
      local _, port = serve({}, function(req, _, path)
        if path == "/slow" then
          loop.after(0.05, function() req:respond(200, "slow") end)
        else
          req:respond(200, "fast")
        end
      end)
      local out = client(port, {
        "send:GET /slow HTTP/1.1\\r\\nHost: t\\r\\n\\r\\nGET /fast HTTP/1.1\\r\\nHost: t\\r\\n\\r\\n",
        "read:0.5",
      })
      assert.matches("\r\n\r\nslowHTTP/1.1 200 OK\r\n.*\r\n\r\nfast$", out)
    end)

    it("closes an HTTP/1.0 connection after the response unless asked to keep it", function()
      local _, port = serve({}, echo)
      local out = client(port, { "send:GET / HTTP/1.0\\r\\n\\r\\n", "read:2" })
      assert.matches("^%[eof%]HTTP/1.1 200 OK\r\n.*Connection: close\r\n", out)
      out = client(port, { "send:GET / HTTP/1.0\\r\\nConnection: keep-alive\\r\\n\\r\\n", "read:0.3" })
      assert.matches("^%[timeout%]HTTP/1.1 200 OK\r\n", out)
      assert.is_nil(out:find("Connection: close", 1, true))
    end)

    it("sends 100 Continue before reading the body of an Expect request", function()
      local _, port = serve({}, echo)
      local out = client(port, {
        "send:POST /e HTTP/1.1\\r\\nHost: t\\r\\nContent-Length: 5\\r\\nExpect: 100-continue\\r\\n\\r\\n",
        "read:0.3",
        "send:hello",
        "read:0.3",
      })
      assert.matches("^%[timeout%]HTTP/1.1 100 Continue\r\n\r\n%[timeout%]HTTP/1.1 200 OK\r\n", out)
      assert.matches("POST /e nil hello$", out)
    end)

    it("answers 413 instead of 100 Continue when the declared body is too large", function()
      local _, port = serve({ max_body_bytes = 4 }, echo)
      local out = client(port, {
        "send:POST / HTTP/1.1\\r\\nHost: t\\r\\nContent-Length: 5\\r\\nExpect: 100-continue\\r\\n\\r\\n",
        "read:2",
      })
      assert.matches("^%[eof%]HTTP/1.1 413 Content Too Large\r\n", out)
    end)

    it("closes an idle keep-alive connection quietly after keepalive_timeout", function()
      local _, port = serve({ keepalive_timeout = 0.1 }, echo)
      local out = client(port, { get("/"), "read:3" })
      assert.matches("^%[eof%]HTTP/1.1 200 OK\r\n", out)
      assert.matches("GET / nil $", out)
    end)
  end)

  describe("limits", function()
    local function expect_status(opts, steps, status)
      local _, port = serve(opts, echo)
      local out = client(port, steps)
      assert.matches("^%[eof%]HTTP/1.1 " .. status .. " ", out)
      assert.matches("Connection: close\r\n", out)
      return out
    end

    it("answers 431 when the headers exceed max_header_bytes", function()
      expect_status({ max_header_bytes = 1024 },
        { get("/", "X-Big: " .. ("a"):rep(2000) .. "\\r\\n"), "read:2" }, 431)
    end)

    it("answers 431 when there are more than 100 header lines", function()
      expect_status({}, { get("/", ("X: y\\r\\n"):rep(101)), "read:2" }, 431)
    end)

    it("answers 414 when the request line alone exceeds max_header_bytes", function()
      expect_status({ max_header_bytes = 1024 }, { get("/" .. ("a"):rep(2000)), "read:2" }, 414)
    end)

    it("answers 414 for a long URI sent slowly", function()
      expect_status({ max_header_bytes = 512 },
        { "send:GET /" .. ("a"):rep(300), "sleep:0.05", "send:" .. ("b"):rep(300), "read:2" }, 414)
    end)

    it("answers 413 when Content-Length exceeds max_body_bytes", function()
      local out = expect_status({ max_body_bytes = 10 },
        { "send:POST / HTTP/1.1\\r\\nHost: t\\r\\nContent-Length: 11\\r\\n\\r\\n", "read:2" }, 413)
      assert.matches('{"error":"content_too_large"}$', out)
    end)

    it("answers 413 when a chunked body grows over max_body_bytes", function()
      expect_status({ max_body_bytes = 10 }, {
        "send:POST / HTTP/1.1\\r\\nHost: t\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n",
        "send:8\\r\\n12345678\\r\\n8\\r\\n12345678\\r\\n", "read:2",
      }, 413)
    end)

    it("accepts a body of exactly max_body_bytes", function()
      local _, port = serve({ max_body_bytes = 5 }, echo)
      local out = client(port, {
        "send:POST / HTTP/1.1\\r\\nHost: t\\r\\nContent-Length: 5\\r\\nConnection: close\\r\\n\\r\\nhello",
        "read:2",
      })
      assert.matches("POST / nil hello$", out)
    end)

    it("answers 408 when the headers do not arrive within header_timeout", function()
      expect_status({ header_timeout = 0.1 }, { "send:GET / HTTP/1.1\\r\\nHost: t\\r\\n", "read:3" }, 408)
    end)

    it("answers 408 when the body does not arrive within body_timeout", function()
      expect_status({ body_timeout = 0.1 }, {
        "send:POST / HTTP/1.1\\r\\nHost: t\\r\\nContent-Length: 10\\r\\n\\r\\nabc", "read:3",
      }, 408)
    end)

    it("closes a connection that sends nothing within header_timeout, without a response", function()
      local _, port = serve({ header_timeout = 0.1 }, echo)
      assert.are.equal("[eof]", client(port, { "read:3" }))
    end)
  end)

  describe("malformed and smuggling requests", function()
    local rows = {
      { "Content-Length together with Transfer-Encoding",
        "POST / HTTP/1.1\\r\\nHost: t\\r\\nContent-Length: 5\\r\\n"
          .. "Transfer-Encoding: chunked\\r\\n\\r\\n0\\r\\n\\r\\n" },
      { "two different Content-Lengths",
        "POST / HTTP/1.1\\r\\nHost: t\\r\\nContent-Length: 5\\r\\nContent-Length: 6\\r\\n\\r\\nhello!" },
      { "two equal Content-Lengths",
        "POST / HTTP/1.1\\r\\nHost: t\\r\\nContent-Length: 5\\r\\nContent-Length: 5\\r\\n\\r\\nhello" },
      { "Transfer-Encoding: gzip",
        "POST / HTTP/1.1\\r\\nHost: t\\r\\nTransfer-Encoding: gzip\\r\\n\\r\\n" },
      { "a malformed request line", "GARBAGE\\r\\n\\r\\n" },
      { "a bad HTTP version", "GET / HTTP/a.1\\r\\nHost: t\\r\\n\\r\\n" },
      { "an HTTP/1.1 request without Host", "GET / HTTP/1.1\\r\\n\\r\\n" },
      { "a negative Content-Length", "POST / HTTP/1.1\\r\\nHost: t\\r\\nContent-Length: -1\\r\\n\\r\\n" },
      { "a space before the header colon", "GET / HTTP/1.1\\r\\nHost : t\\r\\n\\r\\n" },
      { "a NUL byte in a header value", "GET / HTTP/1.1\\r\\nHost: t\\r\\nX: a\\x00b\\r\\n\\r\\n" },
    }
    for _, row in ipairs(rows) do
      it("answers 400 and closes for " .. row[1], function()
        local called = false
        local _, port = serve({}, function(req) called = true; req:respond(200, "no") end)
        local out = client(port, { "send:" .. row[2], "read:2" })
        assert.matches("^%[eof%]HTTP/1.1 400 Bad Request\r\n", out)
        assert.matches("Connection: close\r\n", out)
        assert.is_false(called)
      end)
    end
  end)

  describe("drain", function()
    it("lets an in-flight request finish, closes its connection, then calls on_done", function()
      local srv, done, answered
      srv = serve({}, function(req)
        srv:drain(5, function() done = loop.now() end)
        loop.after(0.1, function()
          req:respond(200, "finished")
          answered = loop.now()
        end)
      end)
      local out = client(srv:port(), { get("/"), "read:3" })
      assert.matches("^%[eof%]HTTP/1.1 200 OK\r\n", out)
      assert.matches("Connection: close\r\n", out)
      assert.matches("finished$", out)
      assert.is_true(run_until(function() return done ~= nil end, 5))
      assert.is_true(done >= answered)
      assert.are.equal(0, srv:stats().connections)
    end)

    it("closes idle keep-alive connections at once", function()
      local srv, done
      srv = serve({}, function(req)
        req:respond(200, "ok")
        loop.after(0.3, function() srv:drain(5, function() done = true end) end)
      end)
      local out = client(srv:port(), { get("/"), "read:0.1", "read:3" })
      assert.matches("^%[timeout%]HTTP/1.1 200 OK\r\n.-ok%[eof%]$", out)
      assert.is_true(run_until(function() return done end, 5))
    end)

    it("force-closes what remains at the deadline", function()
      local srv, done
      srv = serve({}, function()
        srv:drain(0.1, function() done = true end)
      end)
      local out = client(srv:port(), { get("/"), "read:3" })
      assert.is_truthy(out == "[eof]" or out == "[reset]", out)
      assert.is_true(run_until(function() return done end, 5))
    end)

    it("calls on_done when there is nothing to wait for", function()
      local srv = serve({}, echo)
      local done
      srv:drain(1, function() done = true end)
      assert.is_true(run_until(function() return done end, 5))
    end)
  end)

  describe("stats", function()
    it("counts open connections and requests", function()
      local srv, seen
      srv = serve({}, function(req)
        seen = srv:stats()
        req:respond(200, "x")
      end)
      client(srv:port(), { get("/"), "resp:2", get("/"), "resp:2" })
      assert.are.equal(1, seen.connections)
      assert.are.equal(2, srv:stats().requests)
    end)
  end)

  describe("teardown", function()
    it("ends the state cleanly when a closed server still has a live client", function()
      local r = process.zever("run", "spec/fixtures/http_close_live.lua")
      assert.are.equal("closed\n", r.stdout)
      assert.are.equal(0, r.code, r.stderr)
    end)
  end)
end)
