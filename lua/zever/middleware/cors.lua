-- zever.middleware.cors: Cross-Origin Resource Sharing (the Fetch standard's CORS protocol).
--
--   app:use(cors{ origins = { "https://app.example.com" }, credentials = true,
--                 methods = { "GET", "POST" }, headers = { "Content-Type", "Authorization" },
--                 max_age = 600, expose = { "X-Total-Count" } })
--
-- Options:
--   origins      a list of exact origins ("https://a.example:8443"), "*" (any origin, no
--                credentials), or fn(origin, req) -> boolean. Required.
--   credentials  send Access-Control-Allow-Credentials: true (not with "*": raises)
--   methods      allowed in preflights (default GET HEAD PUT PATCH POST DELETE)
--   headers      request headers allowed in preflights; default: whatever the preflight asks
--                for (each checked to be a header name)
--   max_age      seconds a browser may cache the preflight (default 600; 0: none)
--   expose       response headers scripts may read (Access-Control-Expose-Headers)
--
-- A preflight (OPTIONS with Access-Control-Request-Method) from an allowed origin for an
-- allowed method is answered 204 here, without running the rest of the chain; a preflight that
-- is not allowed is answered 204 without any Access-Control-Allow-* header, so the browser
-- refuses the real request. Other requests run the chain; an allowed origin then gets
-- Access-Control-Allow-Origin (the origin itself, or "*"), credentials and exposed headers.
-- Every answer whose headers depend on the Origin carries Vary: Origin (a preflight also
-- varies on the two request headers), so caches keep one copy per origin. It must not keep
-- per-request state.

local type, error, ipairs, tostring, concat = type, error, ipairs, tostring, table.concat
local upper, lower, find, gmatch, select = string.upper, string.lower, string.find, string.gmatch,
  select

local DEFAULT_METHODS = { "GET", "HEAD", "PUT", "PATCH", "POST", "DELETE" }

-- Adds tokens to the response's Vary header, keeping what is there.
local function vary(res, ...)
  local cur = res:get_header("Vary")
  if cur == "*" then return end
  local have, list = {}, {}
  if cur then
    for tok in gmatch(cur, "[^,%s]+") do
      have[lower(tok)] = true
      list[#list + 1] = tok
    end
  end
  for i = 1, select("#", ...) do
    local tok = select(i, ...)
    if not have[lower(tok)] then list[#list + 1] = tok end
  end
  res:header("Vary", concat(list, ", "))
end

local function list_opt(name, v, default)
  if v == nil then return default end
  if type(v) ~= "table" then error("cors: " .. name .. " must be a list of strings", 3) end
  for _, s in ipairs(v) do
    if type(s) ~= "string" or s == "" or find(s, "[^%w!#$%%&'*+%-.^_`|~]") then
      error("cors: " .. name .. " holds an invalid name: " .. tostring(s), 3)
    end
  end
  return v
end

return function(opts)
  if type(opts) ~= "table" then error("cors: expects an options table", 2) end
  local origins = opts.origins
  local any, allowed, check = false, {}, nil
  if origins == "*" then
    any = true
  elseif type(origins) == "function" then
    check = origins
  elseif type(origins) == "table" then
    for _, o in ipairs(origins) do
      if type(o) ~= "string" or o == "*" or find(o, "/$") or find(o, "[%s,]") then
        error("cors: origins holds an invalid origin: " .. tostring(o), 2)
      end
      allowed[lower(o)] = true
    end
  else
    error('cors: origins must be a list of origins, "*" or a function', 2)
  end
  local credentials = opts.credentials and true or false
  if any and credentials then
    error('cors: credentials cannot be used with origins = "*" (browsers refuse it)', 2)
  end
  local methods = list_opt("methods", opts.methods, DEFAULT_METHODS)
  local method_ok = {}
  for i, m in ipairs(methods) do
    methods[i] = upper(m)
    method_ok[upper(m)] = true
  end
  local allow_methods = concat(methods, ", ")
  local fixed_headers = opts.headers and concat(list_opt("headers", opts.headers), ", ")
  local expose = opts.expose and concat(list_opt("expose", opts.expose), ", ")
  local max_age = opts.max_age == nil and 600 or opts.max_age
  if type(max_age) ~= "number" or max_age < 0 or max_age % 1 ~= 0 then
    error("cors: max_age must be a whole number of seconds >= 0", 2)
  end
  max_age = max_age > 0 and tostring(max_age) or nil

  local function origin_ok(origin, req)
    if any then return true end
    if check then return check(origin, req) and true or false end
    return allowed[lower(origin)] == true
  end

  return function(req, res, nxt)
    local origin = req:header("origin")
    local preflight = req.method == "OPTIONS" and req:header("access-control-request-method")
    if not origin then return nxt() end
    local ok = origin_ok(origin, req)
    local allow_origin = any and "*" or origin
    if preflight then
      res:status(204):send("")
      vary(res, "Origin", "Access-Control-Request-Method", "Access-Control-Request-Headers")
      if not ok or not method_ok[upper(preflight)] then return res end
      local asked = req:header("access-control-request-headers")
      local allow_headers = fixed_headers
      if not allow_headers and asked then
        -- Reflect the request's list when each entry is a header name.
        if not find(asked, "[^%w!#$%%&'*+%-.^_`|~,%s]") then allow_headers = asked end
      end
      res:header("Access-Control-Allow-Origin", allow_origin)
      res:header("Access-Control-Allow-Methods", allow_methods)
      if allow_headers and allow_headers ~= "" then
        res:header("Access-Control-Allow-Headers", allow_headers)
      end
      if credentials then res:header("Access-Control-Allow-Credentials", "true") end
      if max_age then res:header("Access-Control-Max-Age", max_age) end
      return res
    end
    nxt()
    if not any then vary(res, "Origin") end
    if ok then
      res:header("Access-Control-Allow-Origin", allow_origin)
      if credentials then res:header("Access-Control-Allow-Credentials", "true") end
      if expose then res:header("Access-Control-Expose-Headers", expose) end
    end
    return res
  end
end
