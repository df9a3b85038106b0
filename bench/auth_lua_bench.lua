-- auth_lua_bench.lua: JWT verification through the auth front-end (adapters.auth.jwt), what a
-- request with a bearer token pays before its handler runs:
--
--   BenchmarkJWTVerifyHS256            split, header check, HMAC-SHA256 (a keyed context),
--                                      base64url + JSON decode of the claims, exp/nbf/iat/iss
--   BenchmarkJWTVerifyHS256Revocation  the same plus the revocation lookup (memory cache)
--   BenchmarkJWTVerifyEdDSA            Ed25519 signature check instead of HMAC
--   BenchmarkJWTIssueHS256             a new token (random jti, JSON encode, HMAC)
--
-- Run: bin/zever run bench/auth_lua_bench.lua [filter]   (target: VerifyHS256 <= 3 us/op)

local bench = require("bench.harness").new(arg and arg[1], { seconds = 0.2 }).loop

local auth = require "zever.auth"
local cache = require "zever.cache"
local core = require "zever.crypto_core"

local SECRET = string.rep("k", 32)
local hs = auth.new{ secret = SECRET, issuer = "app", audience = "api" }
local token = assert(hs:issue("user:42", { role = "admin" }, 3600))

bench("JWTVerifyHS256", function(n)
  local sink = 0
  for _ = 1, n do
    local c = hs:verify(token)
    if c then sink = sink + 1 end
  end
  assert(sink == n)
end)

local revoked = cache.new{ name = "bench:auth:revoked" }
local hsr = auth.new{ secret = SECRET, issuer = "app", audience = "api", revoked = revoked }
bench("JWTVerifyHS256Revocation", function(n)
  local sink = 0
  for _ = 1, n do
    local c = hsr:verify(token)
    if c then sink = sink + 1 end
  end
  assert(sink == n)
end)

local d = core.unb64url("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
local der = "\48\46\2\1\0\48\5\6\3\43\101\112\4\34\4\32" .. d
local b = core.b64url(der):gsub("-", "+"):gsub("_", "/")
local pem = "-----BEGIN PRIVATE KEY-----\n" .. b .. "\n-----END PRIVATE KEY-----\n"
local ed = auth.new{ algorithm = "EdDSA", private_key = pem }
local ed_token = assert(ed:issue("user:42", nil, 3600))
bench("JWTVerifyEdDSA", function(n)
  for _ = 1, n do assert(ed:verify(ed_token)) end
end)

bench("JWTIssueHS256", function(n)
  for _ = 1, n do hs:issue("user:42", nil, 3600) end
end)

-- The machine may be shared: the harness's wall-clock medians then include time other
-- processes ran. The CPU time of this process (os.clock), best of 7 runs, is printed too.
if not arg or not arg[1] or ("JWTVerifyHS256"):find(arg[1], 1, true) then
  local best = math.huge
  for _ = 1, 7 do
    local n, c = 100000, os.clock()
    for _ = 1, n do hs:verify(token) end
    best = math.min(best, (os.clock() - c) / n * 1e9)
  end
  print(("CPU JWTVerifyHS256 %.0f ns/op (os.clock, best of 7 x 100000)"):format(best))
end
