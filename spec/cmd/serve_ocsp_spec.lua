-- zever serve --tls-ocsp: OCSP stapling, checked with `openssl s_client -status` against
-- responses made at test time by `openssl ocsp` (spec/support/tls_certs.lua), and the responses
-- the start refuses (revoked, about another certificate, not an OCSP response, no issuer in
-- the certificate file).

local process = require "spec.support.process"
local serve = require "spec.support.serve"
local certs = require "spec.support.tls_certs"

local quote = process.quote

local APP = [[
local app = require("zever").app()
app:get("/hello", function() return "hello world" end)
return app
]]

local function status(port)
  return process.output("timeout 10 openssl s_client -connect 127.0.0.1:" .. port ..
    " -servername localhost -status </dev/null")
end

describe("zever serve --tls-ocsp", function()
  local o, dir
  lazy_setup(function()
    o = certs.make_ocsp()
    dir = serve.temp_app(APP)
  end)
  lazy_teardown(function()
    certs.remove(o)
    serve.remove(dir)
  end)

  it("staples the response for a client that asks, and nothing without one", function()
    local srv = assert(serve.start(dir, { "--listen", "127.0.0.1:0", "--workers", "1",
      "--tls-cert", o.chain, "--tls-key", o.key, "--tls-ocsp", o.good }))
    local out = status(srv.port)
    srv:kill()
    assert.is_truthy(out:find("OCSP Response Status: successful", 1, true), out)
    assert.is_truthy(out:find("Cert Status: good", 1, true), out)

    local plain = assert(serve.start(dir, { "--listen", "127.0.0.1:0", "--workers", "1",
      "--tls-cert", o.chain, "--tls-key", o.key }))
    out = status(plain.port)
    plain:kill()
    assert.is_truthy(out:find("OCSP response: no response sent", 1, true), out)
  end)

  -- zever serve with these TLS flags must exit 2 at once with a message holding want.
  local function refused(ocsp, want, cert)
    local r = process.run("timeout 20 " .. quote(require("zever.sys").exe()) .. " serve " ..
      quote(dir) .. " --listen 127.0.0.1:0 --workers 1 --tls-cert " .. quote(cert or o.chain) ..
      " --tls-key " .. quote(o.key) .. " --tls-ocsp " .. quote(ocsp) .. " </dev/null")
    local out = r.stdout .. r.stderr
    assert.are.equal(2, r.code, out)
    assert.is_truthy(out:find(want, 1, true), out)
  end

  it("refuses a response that does not vouch for the certificate", function()
    refused(o.revoked, "it says the certificate is revoked")
    refused(o.other, "it is not about this certificate")
    refused(o.chain, "not a DER-encoded OCSP response")
    refused(o.good, "the certificate's issuer is not in the certificate file", o.cert_only)
    refused(o.dir .. "/missing.der", "No such file or directory")
  end)
end)
