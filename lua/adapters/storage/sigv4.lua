-- adapters.storage.sigv4: AWS Signature Version 4 for S3 requests (the "Authorization" header
-- form), as AWS documents it and botocore computes it: the canonical request, the string to
-- sign, the derived signing key, the signature. Pure: no clock, no I/O (the caller passes the
-- time), so the spec compares it with botocore for the same inputs.
--
--   sigv4.sign{ method = "PUT", host = "s3.example:9000", path = "/bucket/a b.txt",
--               query = { ["uploads"] = "" } | nil, headers = { range = "bytes=0-9" } | nil,
--               payload = body string | nil (nil: UNSIGNED-PAYLOAD), time = unix seconds,
--               region = "us-east-1", access_key = "AKID", secret_key = "..." }
--     -> headers to send: authorization, x-amz-date, x-amz-content-sha256 (and the given ones)
--   sigv4.encode(s, keep_slash) -> s URI-encoded as S3 wants it (unreserved kept; "/" kept
--                                  when keep_slash)
--
-- It must not log or return the secret key or the signing key.

local crypto = require "zever.crypto"

local concat, sort, format, gsub, byte, lower, date = table.concat, table.sort, string.format,
  string.gsub, string.byte, string.lower, os.date

local M = {}

local function hex(s)
  return (gsub(s, ".", function(c) return format("%02x", byte(c)) end))
end

local function sha256_hex(s)
  return hex(crypto.digest("sha256", s))
end

local function hmac(key, msg)
  return crypto.hmac("sha256", key, msg)
end

function M.encode(s, keep_slash)
  return (gsub(s, "[^%w%-%._~/]", function(c) return format("%%%02X", byte(c)) end)
    :gsub("/", keep_slash and "/" or "%%2F"))
end

function M.sign(r)
  local amz_date = date("!%Y%m%dT%H%M%SZ", r.time)
  local day = amz_date:sub(1, 8)
  local payload_hash = r.payload and sha256_hex(r.payload) or "UNSIGNED-PAYLOAD"
  local headers = { host = r.host, ["x-amz-date"] = amz_date,
    ["x-amz-content-sha256"] = payload_hash }
  for k, v in pairs(r.headers or {}) do headers[lower(k)] = v end
  local names = {}
  for k in pairs(headers) do names[#names + 1] = k end
  sort(names)
  local canon_headers = {}
  for i, k in ipairs(names) do
    canon_headers[i] = k .. ":" .. (gsub(gsub(tostring(headers[k]), "^%s+", ""), "%s+$", "")) .. "\n"
  end
  local signed = concat(names, ";")
  local q = {}
  for k, v in pairs(r.query or {}) do q[#q + 1] = M.encode(k) .. "=" .. M.encode(v) end
  sort(q)
  local canonical = concat({ r.method, M.encode(r.path, true), concat(q, "&"),
    concat(canon_headers), signed, payload_hash }, "\n")
  local scope = day .. "/" .. r.region .. "/s3/aws4_request"
  local to_sign = concat({ "AWS4-HMAC-SHA256", amz_date, scope, sha256_hex(canonical) }, "\n")
  local key = hmac(hmac(hmac(hmac("AWS4" .. r.secret_key, day), r.region), "s3"), "aws4_request")
  headers.authorization = "AWS4-HMAC-SHA256 Credential=" .. r.access_key .. "/" .. scope ..
    ", SignedHeaders=" .. signed .. ", Signature=" .. hex(hmac(key, to_sign))
  headers.host = nil   -- the HTTP client sends Host from the URL
  return headers
end

return M
