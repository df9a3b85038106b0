-- zever.middleware.security_headers: the response headers that harden a browser's handling of
-- an app (OWASP's secure headers project's recommendations).
--
--   app:use(security_headers())                                   -- the defaults below
--   app:use(security_headers{ hsts = { max_age = 31536000, preload = true },
--                             frame_options = "SAMEORIGIN",
--                             csp = "default-src 'self'" })       -- or fn(req, res) -> policy
--
-- Options (false turns one off):
--   hsts            { max_age = 15552000 (180 days), include_subdomains = true, preload = false }
--                   -> Strict-Transport-Security (browsers honour it on HTTPS only)
--   nosniff         true -> X-Content-Type-Options: nosniff
--   frame_options   "DENY" (default) or "SAMEORIGIN" -> X-Frame-Options
--   csp             a Content-Security-Policy string, or a hook fn(req, res) -> string | nil
--                   (per request: a nonce, a route's own policy); default none
--   referrer_policy "strict-origin-when-cross-origin" (default) -> Referrer-Policy
--
-- The headers are added after the chain ran, to every response (errors and 404s included),
-- unless the handler set the same header itself: a route may loosen or tighten its own. It
-- must not keep per-request state.

local type, error, tostring, pairs, format = type, error, tostring, pairs, string.format

local OPTS = { hsts = true, nosniff = true, frame_options = true, csp = true,
  referrer_policy = true }

local function hsts_value(h)
  if h == false then return nil end
  if h == nil or h == true then h = {} end
  if type(h) ~= "table" then error("security_headers: hsts must be a table or false", 3) end
  local max_age = h.max_age == nil and 15552000 or h.max_age
  if type(max_age) ~= "number" or max_age < 0 or max_age % 1 ~= 0 then
    error("security_headers: hsts.max_age must be a whole number of seconds >= 0", 3)
  end
  local v = format("max-age=%d", max_age)
  if h.include_subdomains ~= false then v = v .. "; includeSubDomains" end
  if h.preload then
    if max_age < 31536000 or h.include_subdomains == false then
      error("security_headers: hsts.preload needs max_age >= 31536000 and include_subdomains", 3)
    end
    v = v .. "; preload"
  end
  return v
end

local function header_string(name, v, default)
  if v == false then return nil end
  if v == nil then return default end
  if type(v) ~= "string" or v:find("[%c]") then
    error("security_headers: " .. name .. " must be a string without control characters", 3)
  end
  return v
end

return function(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("security_headers: expects an options table", 2) end
  for k in pairs(opts) do
    if not OPTS[k] then error("security_headers: unknown option '" .. tostring(k) .. "'", 2) end
  end
  local fixed = {}
  local function add(name, value) if value then fixed[#fixed + 1] = { name, value } end end
  add("Strict-Transport-Security", hsts_value(opts.hsts))
  if opts.nosniff ~= false then add("X-Content-Type-Options", "nosniff") end
  local fo = header_string("frame_options", opts.frame_options, "DENY")
  if fo and fo ~= "DENY" and fo ~= "SAMEORIGIN" then
    error('security_headers: frame_options must be "DENY", "SAMEORIGIN" or false', 2)
  end
  add("X-Frame-Options", fo)
  add("Referrer-Policy", header_string("referrer_policy", opts.referrer_policy,
    "strict-origin-when-cross-origin"))
  local csp, csp_fn = nil, nil
  if type(opts.csp) == "function" then csp_fn = opts.csp
  else csp = header_string("csp", opts.csp, nil) end
  add("Content-Security-Policy", csp)

  return function(req, res, nxt)
    nxt()
    for i = 1, #fixed do
      local h = fixed[i]
      if res:get_header(h[1]) == nil then res:header(h[1], h[2]) end
    end
    if csp_fn and res:get_header("Content-Security-Policy") == nil then
      local v = csp_fn(req, res)
      if v ~= nil then res:header("Content-Security-Policy", v) end
    end
    return res
  end
end
