-- zever serve over TLS (host/tls, docs/tls.md), end to end: the real binary and worker threads,
-- certificates made at test time (spec/support/tls_certs.lua), real clients: curl,
-- openssl s_client and python's ssl module.

local process = require "spec.support.process"
local serve = require "spec.support.serve"
local certs = require "spec.support.tls_certs"

local quote = process.quote

local APP = [[
local zever = require "zever"
local app = zever.app()
app:get("/hello", function() return "hello world" end)
app:post("/echo", function(req) return req.body end)
app:get("/slow", function()
  local f = io.open(os.getenv("SLOW_MARK"), "w") f:write("in") f:close()
  zever.sleep(0.8)
  return "finished"
end)
local big = string.rep("0123456789abcdef", 5 * 65536)
app:get("/big", function() return big end)
app:static("/files", "public")
return app
]]

local function app_dir(yaml)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. quote(dir .. "/public")) == 0)
  local f = assert(io.open(dir .. "/app.lua", "w"))
  f:write(APP)
  f:close()
  if yaml then
    f = assert(io.open(dir .. "/zever.yaml", "w"))
    f:write(yaml)
    f:close()
  end
  return dir
end

local function curl(srv, c, path, extra)
  return process.run("curl -s -S --max-time 10 --cacert " .. quote(c.cert) .. " " ..
    (extra or "") .. " " .. quote("https://localhost:" .. srv.port .. path))
end

-- s_client with a request on stdin; returns its whole output.
local function s_client(port, extra)
  return process.output("printf 'GET /hello HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n'" ..
    " | timeout 10 openssl s_client -connect 127.0.0.1:" .. port .. " -ign_eof " .. extra ..
    " </dev/stdin")
end

describe("zever serve --tls-cert/--tls-key", function()
  local c, dir, srv
  lazy_setup(function()
    c = certs.make()
    dir = app_dir()
    srv = assert(serve.start(dir, { "--listen", "127.0.0.1:0", "--workers", "2",
      "--tls-cert", c.cert, "--tls-key", c.key }))
  end)
  lazy_teardown(function()
    if srv then srv:kill() end
    certs.remove(c)
    os.execute("rm -rf " .. quote(dir))
  end)

  it("says https in its serving line", function()
    assert.is_truthy(srv:log():find("on https://127.0.0.1:" .. srv.port, 1, true), srv:log())
  end)

  it("completes handshakes curl verifies, with TLS 1.2 and 1.3, and ALPN http/1.1", function()
    local r = curl(srv, c, "/hello", "-v")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("hello world", r.stdout)
    assert.is_truthy(r.stderr:find("SSL connection using TLSv1.3", 1, true), r.stderr)
    assert.is_truthy(r.stderr:find("ALPN: server accepted http/1.1", 1, true), r.stderr)
    r = curl(srv, c, "/hello", "-v --tlsv1.2 --tls-max 1.2")
    assert.are.equal("hello world", r.stdout, r.stderr)
    assert.is_truthy(r.stderr:find("SSL connection using TLSv1.2", 1, true), r.stderr)
  end)

  it("keeps the connection alive across requests, and carries bodies both ways", function()
    local r = curl(srv, c, "/hello", "-v -o /dev/null https://localhost:" .. srv.port .. "/hello")
    assert.are.equal(0, r.code, r.stderr)
    assert.is_truthy(r.stderr:find("Re%-using existing connection"), r.stderr)
    local body = string.rep("x", 300000)
    local tmp = os.tmpname()
    local f = assert(io.open(tmp, "wb"))
    f:write(body)
    f:close()
    r = curl(srv, c, "/echo", "--data-binary @" .. quote(tmp))
    os.remove(tmp)
    assert.are.equal(#body, #r.stdout)
    assert.are.equal(body, r.stdout)
    r = curl(srv, c, "/big")
    assert.are.equal(5 * 1024 * 1024, #r.stdout, r.stderr)
    assert.are.equal(string.rep("0123456789abcdef", 5 * 65536), r.stdout)
  end)

  it("serves static files through TLS (no sendfile), small and large", function()
    local big = {}
    for i = 1, 200000 do big[i] = tostring(i) end
    big = table.concat(big, ",") -- ~1.2 MB
    local f = assert(io.open(dir .. "/public/big.txt", "wb"))
    f:write(big)
    f:close()
    f = assert(io.open(dir .. "/public/small.txt", "wb"))
    f:write("small file\n")
    f:close()
    local r = curl(srv, c, "/files/small.txt")
    assert.are.equal("small file\n", r.stdout, r.stderr)
    r = curl(srv, c, "/files/big.txt")
    assert.are.equal(#big, #r.stdout, r.stderr)
    assert.are.equal(big, r.stdout)
    -- A slow reader: the file goes out as the socket drains (curl limits its rate).
    r = curl(srv, c, "/files/big.txt", "--limit-rate 2M")
    assert.are.equal(big, r.stdout)
  end)

  it("resumes sessions from tickets (s_client -sess_out / -sess_in), on any worker", function()
    for _, v in ipairs({ "-tls1_2", "-tls1_3" }) do
      local sess = os.tmpname()
      local out = s_client(srv.port, v .. " -sess_out " .. quote(sess))
      assert.is_truthy(out:find("New, TLSv1", 1, true), out)
      assert.is_truthy(out:find("hello world", 1, true), out)
      -- Two workers share the ticket keys: every resumption works, whichever takes it.
      for _ = 1, 4 do
        out = s_client(srv.port, v .. " -sess_in " .. quote(sess))
        assert.is_truthy(out:find("Reused, TLSv1", 1, true), out)
        assert.is_truthy(out:find("hello world", 1, true), out)
      end
      os.remove(sess)
    end
  end)

  it("closes a plain HTTP request to the TLS port cleanly, and goes on serving", function()
    local r = process.run("curl -s -S --max-time 10 http://127.0.0.1:" .. srv.port .. "/hello")
    assert.are.equal(52, r.code, r.stderr) -- "Empty reply from server"
    -- A FIN, no reset and no bytes: python sees an orderly end of stream.
    r = process.run(process.PYTHON .. " -c " .. quote([[
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
s.settimeout(10)
print(repr(s.recv(100)))
]]) .. " " .. srv.port)
    assert.are.equal("b''\n", r.stdout, r.stderr)
    -- Noise and a truncated handshake do not hurt the worker either.
    r = process.run(process.PYTHON .. " -c " .. quote([[
import os, socket, sys
for junk in (os.urandom(3000), b"\x16\x03\x01\x00", b"\x16\x03\x01\x02\x00\x01" + os.urandom(500)):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.settimeout(10)
    try:
        s.sendall(junk)
        s.shutdown(socket.SHUT_WR)
        while s.recv(4096):
            pass
    except OSError:
        pass
    s.close()
print("done")
]]) .. " " .. srv.port)
    assert.are.equal("done\n", r.stdout, r.stderr)
    assert.are.equal("hello world", curl(srv, c, "/hello").stdout)
    assert.is_true(srv:alive())
  end)

  it("refuses TLS versions under its minimum with an alert, not a crash", function()
    local out = process.output("echo | timeout 10 openssl s_client -connect 127.0.0.1:" ..
      srv.port .. " -tls1_1 2>&1")
    assert.is_falsy(out:find("New, TLSv1.1", 1, true), out)
    assert.are.equal("hello world", curl(srv, c, "/hello").stdout)
  end)
end)

describe("zever serve TLS from zever.yaml, with the plain-HTTP redirect", function()
  local c, dir, srv, rport
  lazy_setup(function()
    c = certs.make()
    rport = serve.free_port()
    dir = app_dir(table.concat({
      "http:",
      "  tls_cert: " .. c.cert,
      "  tls_key: " .. c.key,
      "  tls_min_version: \"1.3\"",
      "  tls_redirect: 127.0.0.1:" .. rport,
    }, "\n") .. "\n")
    srv = assert(serve.start(dir, { "--listen", "127.0.0.1:0", "--workers", "1" }))
  end)
  lazy_teardown(function()
    if srv then srv:kill() end
    certs.remove(c)
    os.execute("rm -rf " .. quote(dir))
  end)

  it("serves TLS 1.3 only (tls_min_version)", function()
    assert.are.equal("hello world", curl(srv, c, "/hello").stdout)
    local r = curl(srv, c, "/hello", "--tlsv1.2 --tls-max 1.2")
    assert.are_not.equal(0, r.code)
  end)

  it("redirects plain HTTP to HTTPS: 301 for GET, 308 for POST, path and query kept", function()
    local r = process.run("curl -s -S -i --max-time 10 'http://localhost:" .. rport ..
      "/hello?a=1&b=2'")
    assert.is_truthy(r.stdout:find("^HTTP/1.1 301"), r.stdout)
    assert.is_truthy(r.stdout:find("\r\nLocation: https://localhost:" .. srv.port ..
      "/hello?a=1&b=2\r\n", 1, true), r.stdout)
    r = process.run("curl -s -S -i --max-time 10 -d x http://127.0.0.1:" .. rport .. "/echo")
    assert.is_truthy(r.stdout:find("^HTTP/1.1 308"), r.stdout)
    -- Followed, it lands on the TLS server.
    r = process.run("curl -s -S -L --max-time 10 --cacert " .. quote(c.cert) ..
      " http://localhost:" .. rport .. "/hello")
    assert.are.equal("hello world", r.stdout, r.stderr)
  end)
end)

describe("zever serve TLS configuration refused at start", function()
  local c, dir
  lazy_setup(function()
    c = certs.make()
    dir = app_dir()
  end)
  lazy_teardown(function()
    certs.remove(c)
    os.execute("rm -rf " .. quote(dir))
  end)

  -- Runs zever serve with args; it must exit 2 at once with a message matching want.
  local function refused(args, want)
    local cmd = { quote(require("zever.sys").exe()), "serve", quote(dir), "--listen",
      "127.0.0.1:0", "--workers", "1" }
    for _, a in ipairs(args) do cmd[#cmd + 1] = quote(a) end
    local r = process.run("timeout 20 " .. table.concat(cmd, " ") .. " </dev/null")
    local out = r.stdout .. r.stderr
    assert.are.equal(2, r.code, out)
    assert.is_truthy(out:find(want, 1, true), out)
    -- Never any key material in what it prints.
    assert.is_falsy(out:find("PRIVATE KEY", 1, true), out)
    for _, key in ipairs({ c.key, c.key2, c.enc_key }) do
      for line in io.lines(key) do
        if not line:find("^%-%-%-%-%-") and #line > 16 then
          assert.is_falsy(out:find(line, 1, true), out)
        end
      end
    end
    return out
  end

  it("an expired certificate", function()
    refused({ "--tls-cert", c.expired, "--tls-key", c.key }, "has expired")
  end)

  it("a key that does not match the certificate", function()
    refused({ "--tls-cert", c.cert, "--tls-key", c.key2 }, "does not match the certificate")
  end)

  it("an encrypted key (no prompt: the key must be unencrypted)", function()
    refused({ "--tls-cert", c.cert, "--tls-key", c.enc_key }, "unencrypted PEM")
  end)

  it("a missing file, a key given as the certificate, one half of the pair", function()
    refused({ "--tls-cert", c.dir .. "/nope.pem", "--tls-key", c.key },
      "cannot read the certificate " .. c.dir .. "/nope.pem: No such file or directory")
    refused({ "--tls-cert", c.key, "--tls-key", c.key }, "invalid TLS configuration")
    refused({ "--tls-cert", c.cert }, "needs both a certificate and a key")
    refused({ "--tls-redirect", "127.0.0.1:1" }, "--tls-redirect needs")
  end)

  it("bad ciphers, min_version or ALPN from the configuration", function()
    local function yaml(extra)
      local f = assert(io.open(dir .. "/zever.yaml", "w"))
      f:write("http:\n  tls_cert: " .. c.cert .. "\n  tls_key: " .. c.key .. "\n" .. extra)
      f:close()
    end
    yaml("  tls_ciphers: NOT-A-CIPHER\n")
    refused({}, "no cipher matches")
    yaml("  tls_alpn: spdy/3\n")
    refused({}, "spdy/3")
    yaml("  tls_min_version: \"1.0\"\n")
    local r = process.zever("serve", dir, "--listen", "127.0.0.1:0")
    assert.are.equal(2, r.code)
    assert.is_truthy((r.stdout .. r.stderr):find("tls_min_version", 1, true))
    os.remove(dir .. "/zever.yaml")
  end)
end)

describe("zever serve TLS SIGHUP", function()
  local c, dir, srv
  after_each(function()
    if srv then srv:kill() end
    srv = nil
    certs.remove(c)
    if dir then os.execute("rm -rf " .. quote(dir)) end
  end)

  it("reloads the certificate and key; a connection in flight keeps going", function()
    c = certs.make()
    dir = app_dir()
    local cert, key = dir .. "/cert.pem", dir .. "/key.pem"
    os.execute("cp " .. quote(c.cert) .. " " .. quote(cert) .. "; cp " .. quote(c.key) .. " " ..
      quote(key))
    local mark = os.tmpname()
    os.remove(mark)
    srv = assert(serve.start(dir, { "--listen", "127.0.0.1:0", "--workers", "1",
      "--tls-cert", cert, "--tls-key", key }, { SLOW_MARK = mark }))
    -- A client holds a connection: its request is in the handler when the reload comes.
    local out = os.tmpname()
    os.execute("curl -s --max-time 10 --cacert " .. quote(c.cert) .. " https://localhost:" ..
      srv.port .. "/slow > " .. out .. ".tmp; mv " .. out .. ".tmp " .. out .. " &")
    assert.is_truthy(serve.wait_for(function() return serve.slurp(mark) == "in" end, 10))
    os.execute("cp " .. quote(c.cert2) .. " " .. quote(cert) .. "; cp " .. quote(c.key2) ..
      " " .. quote(key))
    srv:signal("HUP")
    assert.is_truthy(serve.wait_for(function()
      return io.open(out) and serve.slurp(out) ~= ""
    end, 10))
    assert.are.equal("finished", serve.slurp(out))
    -- New connections get the new certificate.
    local want = certs.fingerprint(c.cert2)
    assert.is_truthy(serve.wait_for(function()
      local pem = process.output("echo | timeout 10 openssl s_client -connect 127.0.0.1:" ..
        srv.port .. " 2>/dev/null | openssl x509 -noout -fingerprint -sha256")
      return pem:match("=(%S+)") == want
    end, 10), srv:log())
    -- The old workers accept beside the new ones until they drain: once they finished, every
    -- new connection gets the new certificate.
    assert.is_truthy(serve.wait_for(function()
      return srv:log():find("reload done, the previous workers finished", 1, true)
    end, 10), srv:log())
    local r = process.run("curl -s -S --max-time 10 --cacert " .. quote(c.cert2) ..
      " https://localhost:" .. srv.port .. "/hello")
    assert.are.equal("hello world", r.stdout, r.stderr)
    -- A reload to a bad pair is refused and the current workers keep serving.
    os.execute("cp " .. quote(c.key) .. " " .. quote(key))
    srv:signal("HUP")
    assert.is_truthy(serve.wait_for(function()
      return srv:log():find("reload failed, the current workers keep serving", 1, true)
    end, 10), srv:log())
    r = process.run("curl -s -S --max-time 10 --cacert " .. quote(c.cert2) ..
      " https://localhost:" .. srv.port .. "/hello")
    assert.are.equal("hello world", r.stdout, r.stderr)
    os.remove(out)
    os.remove(mark)
  end)
end)
