-- zever.tls (host/tls) with zever.http on the spec's own loop: contexts, errors, and TLS
-- connections from real clients (curl, python's ssl) in the background while the loop serves.

local tls = require "zever.tls"
local http = require "zever.http"
local errors = require "zever.errors"
local process = require "spec.support.process"
local certs = require "spec.support.tls_certs"
local hs = require "spec.support.http_script"

local q = process.quote

describe("zever.tls", function()
  local c
  local servers = hs.server_set()
  lazy_setup(function() c = certs.make() end)
  lazy_teardown(function() certs.remove(c) end)
  after_each(servers.close)

  it("makes a context from a certificate and key; info names the subject and expiry", function()
    local ctx = assert(tls.context({ cert = c.cert, key = c.key }))
    local subject, not_after = ctx:info()
    assert.are.equal("/CN=localhost", subject)
    assert.is_true(not_after > os.time() and not_after < os.time() + 3 * 86400)
    assert.matches("^OpenSSL 3", tls.version())
  end)

  it("returns nil and a tls error for every bad configuration", function()
    local cases = {
      { { cert = c.expired, key = c.key }, "has expired" },
      { { cert = c.cert, key = c.key2 }, "does not match" },
      { { cert = c.cert, key = c.enc_key }, "is encrypted" },
      { { cert = c.cert }, "a certificate and a key are both needed" },
      { { cert = c.cert, key = c.key, min_version = "1.1" }, 'min_version must be "1.2" or "1.3"' },
      { { cert = c.cert, key = c.key, ciphers = "NOPE" }, "no cipher matches" },
      { { cert = c.cert, key = c.key, alpn = "h2" }, '"h2" is not served' },
      { { cert = c.cert, key = c.key, alpn = "http/1.1,," }, "bad protocol list" },
    }
    for _, case in ipairs(cases) do
      local ctx, err = tls.context(case[1])
      assert.is_nil(ctx)
      assert.is_true(errors.is(err, "invalid"), tostring(err))
      assert.are.equal("tls", err.battery)
      assert.is_truthy(tostring(err):find(case[2], 1, true), tostring(err))
    end
    assert.has_error(function() tls.context("cert.pem") end, "tls.context: want a table of options")
    assert.has_error(function() tls.context({ cert = 1, key = c.key }) end,
      "tls.context: cert must be a string")
  end)

  it("is what http.listen takes as tls (and nothing else is)", function()
    assert.has_error(function() http.listen({ tls = "yes" }, function() end) end,
      "http.listen: tls must be a zever.tls context")
    assert.has_error(function() http.listen({ tls = io.stdout }, function() end) end,
      "http.listen: tls must be a zever.tls context")
  end)

  it("serves TLS on the loop; the server outlives the Lua context object", function()
    local ctx = assert(tls.context({ cert = c.cert, key = c.key }))
    local _, port = servers.serve({ tls = ctx }, function(req, method, path)
      req:respond(200, method .. " " .. path .. " " .. req:body(), { "Content-Type", "text/plain" })
    end)
    ctx = nil -- luacheck: ignore 311
    collectgarbage()
    collectgarbage()
    local out = hs.curl("--cacert " .. q(c.cert) .. " -d abc https://localhost:" .. port .. "/p")
    assert.are.equal("POST /p abc", out)
  end)

  it("streams a chunked response through TLS (write_head, write, finish)", function()
    local ctx = assert(tls.context({ cert = c.cert, key = c.key }))
    local _, port = servers.serve({ tls = ctx }, function(req)
      req:write_head(200, { "Content-Type", "text/plain" })
      for i = 1, 200 do req:write(string.rep(string.char(64 + i % 26), 1000)) end
      req:finish()
    end)
    local out = hs.curl("--cacert " .. q(c.cert) .. " -i https://localhost:" .. port .. "/")
    assert.is_truthy(out:find("Transfer-Encoding: chunked", 1, true), out:sub(1, 300))
    local body = out:match("\r\n\r\n(.*)$")
    assert.are.equal(200000, #body)
  end)

  it("serves many TLS connections at once, each with pipelined requests", function()
    local ctx = assert(tls.context({ cert = c.cert, key = c.key }))
    local _, port = servers.serve({ tls = ctx }, function(req, _, path)
      req:respond(200, path, { "Content-Type", "text/plain" })
    end)
    local script = [[
import socket, ssl, sys, threading
port = int(sys.argv[1])
ctx = ssl.create_default_context(cafile=sys.argv[2])
ok = []
def one(i):
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
    s.settimeout(20)
    s.sendall(b"".join(b"GET /c%d-%d HTTP/1.1\r\nHost: t\r\n\r\n" % (i, k) for k in range(5)))
    data = b""
    while data.count(b"HTTP/1.1 200") < 5 or not data.endswith(b"/c%d-4" % i):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    ok.append(all((b"/c%d-%d" % (i, k)) in data for k in range(5)))
    s.close()
ts = [threading.Thread(target=one, args=(i,)) for i in range(40)]
[t.start() for t in ts]
[t.join() for t in ts]
print(len(ok), all(ok))
]]
    local read = hs.spawn(function(out)
      return process.PYTHON .. " -c " .. q(script) .. " " .. port .. " " .. q(c.cert) .. " > " .. q(out) ..
        ".tmp; mv " .. q(out) .. ".tmp " .. q(out)
    end)
    assert(require("zever.testing").run_until(read, 25), "the client did not finish")
    assert.are.equal("40 True\n", read())
  end)
end)
