-- spec.support.tls_certs: certificates and keys made at test time with the openssl command, for
-- the TLS specs (self-signed, CN=localhost, SAN localhost and 127.0.0.1, EC P-256).
--
--   local certs = require "spec.support.tls_certs"
--   local c = certs.make()      -- a fresh folder; c.dir, and paths:
--     c.cert, c.key             a valid pair
--     c.cert2, c.key2           another valid pair (another key, another serial)
--     c.expired                 c.key's certificate, valid 2020-01-01 to 2020-01-02 only
--     c.enc_key                 c.key encrypted with a passphrase (PEM, AES-256)
--   certs.fingerprint(pem)      -> the SHA-256 fingerprint of a certificate file
--   certs.remove(c)             deletes the folder

local process = require "spec.support.process"

local quote = process.quote

local M = {}

local function sh(cmd)
  local r = process.run(cmd)
  assert(r.code == 0, cmd .. "\n" .. r.stdout .. r.stderr)
  return r.stdout
end

local function pair(dir, name)
  local key, cert = dir .. "/" .. name .. ".key", dir .. "/" .. name .. ".pem"
  sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2" ..
    " -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1" ..
    " -keyout " .. quote(key) .. " -out " .. quote(cert))
  return cert, key
end

function M.make()
  local dir = os.tmpname()
  os.remove(dir)
  sh("mkdir -p " .. quote(dir .. "/ca"))
  local c = { dir = dir }
  c.cert, c.key = pair(dir, "a")
  c.cert2, c.key2 = pair(dir, "b")
  -- An expired certificate: `openssl ca` is the one command of OpenSSL 3.0 that sets the dates.
  local ca = dir .. "/ca"
  local f = assert(io.open(ca .. "/ca.cnf", "w"))
  f:write("[ca]\ndefault_ca = d\n[d]\ndatabase = ", ca, "/index.txt\nnew_certs_dir = ", ca,
    "\nserial = ", ca, "/serial\ndefault_md = sha256\npolicy = p\n[p]\ncommonName = supplied\n")
  f:close()
  sh(": > " .. quote(ca .. "/index.txt") .. "; echo 01 > " .. quote(ca .. "/serial"))
  sh("openssl req -new -key " .. quote(c.key) .. " -subj /CN=localhost -out " ..
    quote(ca .. "/csr.pem"))
  c.expired = dir .. "/expired.pem"
  sh("openssl ca -batch -config " .. quote(ca .. "/ca.cnf") .. " -selfsign -keyfile " ..
    quote(c.key) .. " -in " .. quote(ca .. "/csr.pem") ..
    " -startdate 20200101000000Z -enddate 20200102000000Z -out " .. quote(c.expired))
  c.enc_key = dir .. "/enc.key"
  sh("openssl pkey -in " .. quote(c.key) .. " -aes256 -passout pass:spec-passphrase -out " ..
    quote(c.enc_key))
  return c
end

-- A CA-signed pair and OCSP responses for it (made with `openssl ocsp` against an index file),
-- in a fresh folder: o.chain (the certificate then the CA's), o.key, o.good (status good,
-- valid a day), o.revoked (status revoked), o.other (good, but for another certificate).
function M.make_ocsp()
  local dir = os.tmpname()
  os.remove(dir)
  sh("mkdir -p " .. quote(dir))
  local function p(name) return quote(dir .. "/" .. name) end
  local ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
  sh("openssl req -x509" .. ec .. " -days 30 -subj /CN=spec-ca -keyout " .. p("ca.key") ..
    " -out " .. p("ca.pem"))
  local f = assert(io.open(dir .. "/ext.cnf", "w"))
  f:write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
  f:close()
  for _, s in ipairs({ { "srv", "1234" }, { "other", "5678" } }) do
    sh("openssl req" .. ec .. " -subj /CN=localhost -keyout " .. p(s[1] .. ".key") ..
      " -out " .. p(s[1] .. ".csr"))
    sh("openssl x509 -req -in " .. p(s[1] .. ".csr") .. " -CA " .. p("ca.pem") .. " -CAkey " ..
      p("ca.key") .. " -set_serial 0x" .. s[2] .. " -days 2 -extfile " .. p("ext.cnf") ..
      " -out " .. p(s[1] .. ".pem"))
  end
  sh("cat " .. p("srv.pem") .. " " .. p("ca.pem") .. " > " .. p("chain.pem"))
  local expiry = os.date("!%y%m%d%H%M%SZ", os.time() + 2 * 86400)
  local function respond(name, cert, status)
    local idx = assert(io.open(dir .. "/index-" .. name .. ".txt", "w"))
    idx:write(status == "revoked"
      and ("R\t" .. expiry .. "\t" .. os.date("!%y%m%d%H%M%SZ") .. "\t1234\tunknown\t/CN=localhost\n")
      or ("V\t" .. expiry .. "\t\t" .. (cert == "other" and "5678" or "1234") ..
        "\tunknown\t/CN=localhost\n"))
    idx:close()
    sh("openssl ocsp -index " .. p("index-" .. name .. ".txt") .. " -rsigner " .. p("ca.pem") ..
      " -rkey " .. p("ca.key") .. " -CA " .. p("ca.pem") .. " -issuer " .. p("ca.pem") ..
      " -cert " .. p(cert .. ".pem") .. " -respout " .. p(name .. ".der") .. " -ndays 1")
    return dir .. "/" .. name .. ".der"
  end
  return { dir = dir, chain = dir .. "/chain.pem", key = dir .. "/srv.key",
    cert_only = dir .. "/srv.pem", good = respond("good", "srv", "good"),
    revoked = respond("revoked", "srv", "revoked"), other = respond("other", "other", "good") }
end

function M.fingerprint(pem)
  return (sh("openssl x509 -noout -fingerprint -sha256 -in " .. quote(pem))
    :match("=(%S+)"))
end

function M.remove(c)
  if c and c.dir then os.execute("rm -rf " .. quote(c.dir)) end
end

return M
