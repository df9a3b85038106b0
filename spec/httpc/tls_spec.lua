-- zever.httpc over TLS (host/httpc_tls/, OpenSSL, loaded on the first https request): against
-- Python's http.server and zever's own TLS server, with certificates made at test time; bad
-- certificates (self-signed and untrusted, expired, another host's) are refused with a clear
-- "tls" error; and proxies (a forward proxy for http, CONNECT tunnels for https).
local httpc = require "zever.httpc"
local http = require "zever.http"
local certs = require "spec.support.tls_certs"
local process = require "spec.support.process"
local py = require "spec.httpc.pyserver"

describe("zever.httpc TLS", function()
  local c, good, expired, other, other_cert

  lazy_setup(function()
    c = certs.make()
    other_cert = c.dir .. "/other.pem"
    local r = process.run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1" ..
      " -nodes -days 2 -subj /CN=example.com -addext subjectAltName=DNS:example.com -keyout " ..
      process.quote(c.dir .. "/other.key") .. " -out " .. process.quote(other_cert))
    assert(r.code == 0, r.stderr)
    good = assert(py.start("tls", c.cert, c.key))
    expired = assert(py.start("tls", c.expired, c.key))
    other = assert(py.start("tls", other_cert, c.dir .. "/other.key"))
  end)

  lazy_teardown(function()
    httpc.close_idle()
    for _, s in ipairs{ good, expired, other } do if s then s:stop() end end
    certs.remove(c)
  end)

  before_each(function() httpc.close_idle() end)

  it("gets a page from Python's http.server, trusting the test CA, by IP and by name", function()
    local res = assert(httpc.get("https://127.0.0.1:" .. good.port .. "/hello",
      { tls = { ca_file = c.cert } }))
    assert.equals(200, res.status)
    assert.equals("hello over tls", res.body)
    res = assert(httpc.get("https://localhost:" .. good.port .. "/x", { tls = { ca_file = c.cert } }))
    assert.equals("/x", res.body)
  end)

  it("refuses a self-signed certificate the system store does not trust", function()
    local res, err = httpc.get("https://127.0.0.1:" .. good.port .. "/hello")
    assert.is_nil(res)
    assert.equals("tls", err.code)
    assert.matches("self.signed", tostring(err))
  end)

  it("refuses an expired certificate", function()
    local res, err = httpc.get("https://localhost:" .. expired.port .. "/hello",
      { tls = { ca_file = c.expired } })
    assert.is_nil(res)
    assert.equals("tls", err.code)
    assert.matches("expired", tostring(err))
  end)

  it("refuses a certificate made for another host", function()
    local res, err = httpc.get("https://127.0.0.1:" .. other.port .. "/hello",
      { tls = { ca_file = other_cert } })
    assert.is_nil(res)
    assert.equals("tls", err.code)
    assert.matches("mismatch", tostring(err))
  end)

  it("accepts any certificate with verify = false", function()
    local res = assert(httpc.get("https://127.0.0.1:" .. other.port .. "/hello",
      { tls = { verify = false } }))
    assert.equals("hello over tls", res.body)
  end)

  it("reuses one TLS connection against zever's own TLS server", function()
    local tls = require "zever.tls"
    local srv = assert(http.listen({ host = "127.0.0.1", port = 0, reuseport = false,
      tls = assert(tls.context{ cert = c.cert, key = c.key }) },
      function(req, _, path) req:respond(200, "zever tls " .. path, {}) end))
    local ok, err = pcall(function()
      local c0 = httpc.stats.connects
      for i = 1, 5 do
        local res = assert(httpc.get("https://localhost:" .. srv:port() .. "/" .. i,
          { tls = { ca_file = c.cert } }))
        assert.equals("zever tls /" .. i, res.body)
      end
      assert.equals(1, httpc.stats.connects - c0)
    end)
    httpc.close_idle()
    srv:close()
    assert(ok, err)
  end)

  describe("proxies", function()
    local proxy, plain

    lazy_setup(function()
      proxy = assert(py.start("proxy"))
      plain = assert(py.start("plain"))
    end)

    lazy_teardown(function()
      httpc.close_idle()
      if proxy then proxy:stop() end
      if plain then plain:stop() end
    end)

    it("sends an http request in absolute form through the proxy", function()
      local res = assert(httpc.get("http://127.0.0.1:" .. plain.port .. "/via",
        { proxy = "http://127.0.0.1:" .. proxy.port }))
      assert.equals("/via", res.body)
      assert.matches("seen: GET http://127.0.0.1:" .. plain.port .. "/via HTTP/1.1", proxy:log(),
        1, true)
    end)

    it("tunnels https through CONNECT and still verifies the server", function()
      local res = assert(httpc.get("https://127.0.0.1:" .. good.port .. "/hello",
        { proxy = "http://127.0.0.1:" .. proxy.port, tls = { ca_file = c.cert } }))
      assert.equals("hello over tls", res.body)
      assert.matches("seen: CONNECT 127.0.0.1:" .. good.port .. " HTTP/1.1", proxy:log(), 1, true)
      local r2, err = httpc.get("https://127.0.0.1:" .. good.port .. "/hello",
        { proxy = "http://127.0.0.1:" .. proxy.port })
      assert.is_nil(r2)
      assert.equals("tls", err.code)
    end)

    it("takes HTTP_PROXY from the environment and honours NO_PROXY", function()
      local script = os.tmpname()
      local f = assert(io.open(script, "w"))
      f:write('local res = assert(require("zever.httpc").get(arg[1])) print(res.body)\n')
      f:close()
      local url = "http://127.0.0.1:" .. plain.port .. "/env"
      local before = select(2, proxy:log():gsub("/env", ""))
      local r = process.run("HTTP_PROXY=http://127.0.0.1:" .. proxy.port .. " " ..
        process.quote(require("zever.sys").exe()) .. " run " .. process.quote(script) .. " " ..
        process.quote(url))
      assert.equals(0, r.code, r.stderr)
      assert.equals("/env", (r.stdout:gsub("%s+$", "")))
      assert.equals(before + 1, select(2, proxy:log():gsub("/env", "")))
      r = process.run("HTTP_PROXY=http://127.0.0.1:" .. proxy.port .. " NO_PROXY=localhost,127.0.0.1 " ..
        process.quote(require("zever.sys").exe()) .. " run " .. process.quote(script) .. " " ..
        process.quote(url))
      os.remove(script)
      assert.equals(0, r.code, r.stderr)
      assert.equals(before + 1, select(2, proxy:log():gsub("/env", "")))
    end)
  end)
end)
