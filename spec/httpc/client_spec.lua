-- zever.httpc against zever's own HTTP server (zever.http.listen on the same loop, and
-- `zever serve` as a process), against nginx, and its failures: refused, DNS, timeouts, limits.
local httpc = require "zever.httpc"
local http = require "zever.http"
local sched = require "zever.sched"
local compress = require "zever.compress"
local errors = require "zever.errors"

-- Runs fn in a coroutine of the loop and pumps the loop until it returns (a request handler's
-- or a job's situation: the client yields).
local function in_coroutine(fn)
  local done, ok, err = false, nil, nil
  sched.spawn(function()
    ok, err = pcall(fn)
    done = true
  end)
  assert(sched.wait_until(function() return done end, 30), "the coroutine did not finish")
  assert(ok, err)
end

describe("zever.httpc", function()
  local srv, base, seen
  local big = string.rep("0123456789abcdef", 8192) -- 128 KiB

  lazy_setup(function()
    seen = {}
    srv = assert(http.listen({ host = "127.0.0.1", port = 0, reuseport = false },
      function(req, method, path, query)
        seen[#seen + 1] = { method = method, path = path, query = query, headers = req:headers(),
          body = req:body() }
        if path == "/hello" then
          req:respond(200, "hello " .. method, { "Content-Type", "text/plain" })
        elseif path == "/echo" then
          req:respond(200, req:body(), { "Content-Type", "application/octet-stream" })
        elseif path == "/redirect" then
          req:respond(302, "moved", { "Location", "/hello" })
        elseif path == "/see-other" then
          req:respond(303, "", { "Location", "hello" })
        elseif path == "/keep" then
          req:respond(307, "", { "Location", "/echo" })
        elseif path == "/loop" then
          req:respond(302, "", { "Location", "/loop" })
        elseif path == "/gzip" then
          req:respond(200, compress.gzip(big), { "Content-Encoding", "gzip" })
        elseif path == "/big" then
          req:respond(200, big, {})
        elseif path == "/chunked" then
          req:write_head(200, { "Content-Type", "text/plain" })
          for i = 1, 5 do req:write("piece" .. i .. ";") end
          req:finish()
        elseif path == "/slow" then
          sched.sleep(2)
          req:respond(200, "late", {})
        elseif path == "/status" then
          req:respond(tonumber(query:match("code=(%d+)")), "status", {})
        else
          req:respond(404, "no", {})
        end
      end))
    base = "http://127.0.0.1:" .. srv:port()
  end)

  lazy_teardown(function()
    httpc.close_idle()
    srv:close()
    require("zever.loop").run("nowait")
  end)

  before_each(function() httpc.close_idle() end)

  it("gets a page outside a coroutine (pumping the loop)", function()
    local res = assert(httpc.get(base .. "/hello"))
    assert.equals(200, res.status)
    assert.equals("hello GET", res.body)
    assert.equals("text/plain", res.headers["content-type"])
    assert.equals("text/plain", res:header("Content-Type"))
  end)

  it("gets a page inside a coroutine (yielding)", function()
    in_coroutine(function()
      local res = assert(httpc.get(base .. "/hello"))
      assert.equals("hello GET", res.body)
    end)
  end)

  it("runs many requests at once from concurrent coroutines", function()
    local bodies, n = {}, 20
    for i = 1, n do
      sched.spawn(function()
        local res = assert(httpc.post(base .. "/echo", "body " .. i))
        bodies[i] = res.body
      end)
    end
    assert.is_true(sched.wait_until(function()
      local c = 0
      for _ in pairs(bodies) do c = c + 1 end
      return c == n
    end, 30))
    for i = 1, n do assert.equals("body " .. i, bodies[i]) end
  end)

  it("reuses one keep-alive connection for sequential requests", function()
    local before = srv:stats().connections
    local c0 = httpc.stats.connects
    for _ = 1, 10 do assert.equals(200, assert(httpc.get(base .. "/hello")).status) end
    assert.equals(1, httpc.stats.connects - c0)
    assert.equals(1, httpc.idle_count())
    assert.is_true(srv:stats().connections - before <= 1)
  end)

  it("sends a body, headers and a query, and sends the default fields", function()
    local res = assert(httpc.request{ method = "PUT", url = base .. "/echo",
      headers = { ["X-Custom"] = "yes", ["X-List"] = { "a", "b" } }, body = "payload",
      query = { q = "a b", z = "1" } })
    assert.equals("payload", res.body)
    local s = seen[#seen]
    assert.equals("PUT", s.method)
    assert.equals("q=a%20b&z=1", s.query)
    assert.equals("yes", s.headers["x-custom"])
    assert.equals("a, b", s.headers["x-list"])
    assert.equals("7", s.headers["content-length"])
    assert.matches("^zever/", s.headers["user-agent"])
  end)

  it("streams a request body from an iterator (chunked)", function()
    local parts = { "one,", "two,", "three" }
    local i = 0
    local res = assert(httpc.request{ method = "POST", url = base .. "/echo",
      body = function() i = i + 1; return parts[i] end })
    assert.equals("one,two,three", res.body)
    assert.equals("chunked", seen[#seen].headers["transfer-encoding"])
  end)

  it("follows redirects: 302 and a relative 303 to GET, 307 keeping the method and body", function()
    local res = assert(httpc.get(base .. "/redirect"))
    assert.same({ 200, "hello GET", 1, base .. "/hello" }, { res.status, res.body, res.redirects, res.url })
    res = assert(httpc.post(base .. "/see-other", "data"))
    assert.same({ 200, "hello GET" }, { res.status, res.body })
    res = assert(httpc.post(base .. "/keep", "kept"))
    assert.same({ 200, "kept" }, { res.status, res.body })
  end)

  it("returns the 3xx itself with max_redirects = 0, and fails past the limit", function()
    local res = assert(httpc.get(base .. "/redirect", { max_redirects = 0 }))
    assert.equals(302, res.status)
    assert.equals("/hello", res.headers.location)
    local r2, err = httpc.get(base .. "/loop", { max_redirects = 3 })
    assert.is_nil(r2)
    assert.is_true(errors.is(err, "too_many_redirects"))
  end)

  it("decodes a gzip body and asks for gzip", function()
    local res = assert(httpc.get(base .. "/gzip"))
    assert.equals(#big, #res.body)
    assert.equals(big, res.body)
    assert.equals("gzip", seen[#seen].headers["accept-encoding"])
    res = assert(httpc.get(base .. "/gzip", { decompress = false }))
    assert.equals(compress.gzip(big), res.body)
  end)

  it("streams a response body piece by piece", function()
    local res = assert(httpc.get(base .. "/chunked", { stream = true }))
    assert.equals(200, res.status)
    assert.is_nil(res.body)
    local got = {}
    assert.is_true(res:each(function(p) got[#got + 1] = p end))
    assert.equals("piece1;piece2;piece3;piece4;piece5;", table.concat(got))
    -- the connection went back to the pool at the end of the body
    assert.equals(1, httpc.idle_count())
    res = assert(httpc.get(base .. "/big", { stream = true }))
    local n = 0
    while true do
      local piece, err = res:read()
      assert.is_nil(err)
      if not piece then break end
      n = n + #piece
    end
    assert.equals(#big, n)
  end)

  it("answers a status >= 400 as a response, not an error", function()
    local res = assert(httpc.get(base .. "/status?code=503"))
    assert.equals(503, res.status)
    assert.equals("status", res.body)
  end)

  it("does not read a body for HEAD", function()
    local res = assert(httpc.head(base .. "/big"))
    assert.equals(200, res.status)
    assert.equals("", res.body)
    assert.equals(200, assert(httpc.get(base .. "/hello")).status) -- the connection still works
  end)

  it("fails with too_large above max_body, plain and gzip-decoded", function()
    local res, err = httpc.get(base .. "/big", { max_body = 1000 })
    assert.is_nil(res)
    assert.equals("too_large", err.code)
    res, err = httpc.get(base .. "/gzip", { max_body = 4096 })
    assert.is_nil(res)
    assert.equals("too_large", err.code)
  end)

  it("calls the before_send hooks with the header table", function()
    httpc.before_send[#httpc.before_send + 1] = function(h)
      h.traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    end
    local ok, err = pcall(function() assert(httpc.get(base .. "/hello")) end)
    table.remove(httpc.before_send)
    assert(ok, err)
    assert.equals("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      seen[#seen].headers.traceparent)
  end)

  it("sends URL credentials as Basic auth and never shows them in an error", function()
    local port = srv:port()
    assert(httpc.get("http://alice:s3cret@127.0.0.1:" .. port .. "/hello"))
    assert.equals("Basic YWxpY2U6czNjcmV0",
      seen[#seen].headers.authorization)
    local res, err = httpc.get("http://alice:s3cret@127.0.0.1:1/x?token=abc")
    assert.is_nil(res)
    assert.equals("refused", err.code)
    assert.not_matches("s3cret", tostring(err))
    assert.not_matches("alice", tostring(err))
    assert.not_matches("token=abc", tostring(err))
    assert.matches("127.0.0.1:1/x", tostring(err))
  end)

  it("fails with refused, dns and invalid", function()
    local _, err = httpc.get("http://127.0.0.1:1/")
    assert.equals("refused", err.code)
    _, err = httpc.get("http://no-such-host.invalid/")
    assert.equals("dns", err.code)
    _, err = httpc.get("ftp://example.com/")
    assert.equals("invalid", err.code)
    assert.has_error(function() httpc.request{ url = 42 } end, "http.request: url must be a string")
    assert.has_error(function() httpc.request{ url = "http://h/", body = 1 } end)
  end)

  it("times out waiting for the first byte, and the connection is not reused", function()
    local res, err = httpc.get(base .. "/slow", { timeouts = { first_byte = 0.2 } })
    assert.is_nil(res)
    assert.equals("timeout", err.code)
    assert.equals("first_byte", err.phase)
    assert.equals(0, httpc.idle_count())
    res, err = httpc.get(base .. "/slow", { timeout = 0.2 })
    assert.is_nil(res)
    assert.equals("total", err.phase)
  end)

  it("retries once on a fresh connection when the server closed the pooled one", function()
    local py = assert(require("spec.httpc.pyserver").start("plain"))
    local url = "http://127.0.0.1:" .. py.port
    local ok, err = pcall(function()
      local c0 = httpc.stats.connects
      -- Python answers /close and closes without Connection: close: the client pools it.
      assert.equals("/close", assert(httpc.get(url .. "/close")).body)
      local res = assert(httpc.get(url .. "/hello"))
      assert.equals("hello over tls", res.body)
      assert.equals(2, httpc.stats.connects - c0)
    end)
    py:stop()
    assert(ok, err)
  end)

  it("times out in the TLS phase against a server that never speaks", function()
    local py = assert(require("spec.httpc.pyserver").start("silent"))
    local res, err = httpc.get("https://127.0.0.1:" .. py.port .. "/", { timeouts = { tls = 0.3 } })
    py:stop()
    assert.is_nil(res)
    assert.equals("timeout", err.code)
    assert.equals("tls", err.phase)
  end)
end)
