-- zever.middleware.compress: gzip or brotli response bodies, chosen by Accept-Encoding.
--
--   app:use(compress())                                     -- threshold 1024, gzip 6, brotli 4
--   app:use(compress{ threshold = 256, level = 9, brotli_quality = 5, brotli = false })
--
-- Options: threshold (bytes; smaller bodies go out as they are, default 1024), level (gzip
-- 1..9, default 6), brotli_quality (0..11, default 4: brotli's quick settings, close to gzip 6
-- in speed with smaller output), brotli (false: gzip only), gzip (false: brotli only).
--
-- After the chain ran, a response is compressed when all hold: its status has a body (not 1xx,
-- 204, 206, 304) and the method is not HEAD; its body is at least threshold bytes; its type is
-- one that compresses (text/*, JSON, XML, JavaScript, SVG, wasm, ... and their +json/+xml
-- kinds: an allowlist, so images, fonts, archives and unknown binaries never are); it has no
-- Content-Encoding yet and no Cache-Control: no-transform; and the client accepts br or gzip
-- (req:accepts_encoding: q-values, "*", identity;q=0). The coding with the higher q wins, the
-- header's order breaks a tie. A result that is not smaller than the body is dropped. Such an
-- eligible response always gets Vary: Accept-Encoding (compressed or not), and a strong ETag
-- becomes weak ("W/...") when the body is compressed: the bytes differ from the identity
-- representation's. zlib (zlib1g) and brotli (libbrotli) do the work in C (zever.compress).

local zcompress = require "zever.compress"

local type, error, tostring, lower, find, sub, gmatch, concat, pairs = type, error, tostring,
  string.lower, string.find, string.sub, string.gmatch, table.concat, pairs

local OPTS = { threshold = true, level = true, brotli_quality = true, brotli = true, gzip = true }

local COMPRESSIBLE = {
  ["application/json"] = true, ["application/javascript"] = true, ["application/xml"] = true,
  ["application/xhtml+xml"] = true, ["application/rss+xml"] = true, ["application/atom+xml"] = true,
  ["application/wasm"] = true, ["application/x-ndjson"] = true, ["application/ld+json"] = true,
  ["application/manifest+json"] = true, ["application/x-www-form-urlencoded"] = true,
  ["image/svg+xml"] = true, ["image/x-icon"] = true, ["application/vnd.api+json"] = true,
}

local function compressible(ctype)
  if not ctype then return false end
  local t = lower(ctype:match("^%s*([^;%s]+)") or "")
  if sub(t, 1, 5) == "text/" then return true end
  if COMPRESSIBLE[t] then return true end
  return find(t, "%+json$") ~= nil or find(t, "%+xml$") ~= nil
end

local function add_vary(res, token)
  local cur = res:get_header("Vary")
  if cur == "*" then return end
  local list = {}
  if cur then
    for tok in gmatch(cur, "[^,%s]+") do
      if lower(tok) == lower(token) then return end
      list[#list + 1] = tok
    end
  end
  list[#list + 1] = token
  res:header("Vary", concat(list, ", "))
end

local function int_opt(opts, name, lo, hi, default)
  local v = opts[name]
  if v == nil then return default end
  if type(v) ~= "number" or v % 1 ~= 0 or v < lo or v > hi then
    error(("compress: %s must be a whole number within %d..%d"):format(name, lo, hi), 3)
  end
  return v
end

return function(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("compress: expects an options table", 2) end
  for k in pairs(opts) do
    if not OPTS[k] then error("compress: unknown option '" .. tostring(k) .. "'", 2) end
  end
  local threshold = int_opt(opts, "threshold", 0, 2 ^ 40, 1024)
  local level = int_opt(opts, "level", 1, 9, 6)
  local quality = int_opt(opts, "brotli_quality", 0, 11, 4)
  local offers = {}
  if opts.brotli ~= false then offers[#offers + 1] = "br" end
  if opts.gzip ~= false then offers[#offers + 1] = "gzip" end
  if #offers == 0 then error("compress: brotli and gzip are both off", 2) end
  offers[#offers + 1] = "identity"

  return function(req, res, nxt)
    nxt()
    local body, code = res.body, res.code
    if type(body) ~= "string" or #body < threshold or req.method == "HEAD" then return res end
    if code < 200 or code == 204 or code == 206 or code == 304 then return res end
    if not compressible(res.ctype or res:get_header("Content-Type")) then return res end
    if res:get_header("Content-Encoding") then return res end
    local cc = res:get_header("Cache-Control")
    if cc and find(lower(cc), "no-transform", 1, true) then return res end
    add_vary(res, "Accept-Encoding")
    local coding = req:accepts_encoding(offers)
    if coding ~= "br" and coding ~= "gzip" then return res end
    local out = coding == "br" and zcompress.brotli(body, quality) or zcompress.gzip(body, level)
    if #out >= #body then return res end
    res.body = out
    res:header("Content-Encoding", coding)
    local etag = res:get_header("ETag")
    if etag and sub(etag, 1, 2) ~= "W/" then res:header("ETag", "W/" .. etag) end
    return res
  end
end
