-- zever.auth: the auth battery: issue, verify and revoke credentials, and find the principal of
-- a request. Adapters: jwt (adapters.auth.jwt: HS256/384/512, EdDSA, ES256; revocation on the
-- cache) and session (adapters.auth.session: opaque tokens on the session battery).
--
--   local token, claims = app.auth:issue("user:42", { role = "admin" }, 3600)
--   local claims, err = app.auth:verify(token)   -- err.code invalid | expired | revoked
--   app.auth:revoke(claims.jti)
--   local user, err = app.auth:authenticate(req) -- "Authorization: Bearer <token>", else the
--                                                -- token a login stored in req.session
--   app.auth:login(req, "user:42", claims)       -- issue + regenerate the session + keep it
--   app.auth:logout(req)                         -- revoke + destroy the session
--   routes.register(app, handlers, app.auth:rpc_options())   -- .zen `auth: required`
--
-- A subject is a non-empty string; claims a table of JSON values; ttl seconds (default the
-- configured ttl). verify's failures are expected (nil, err); misuse raises.

local battery = require "zever.battery"

local type, error, pairs, pcall, rawget, find, sub, lower = type, error, pairs, pcall, rawget,
  string.find, string.sub, string.lower

local M = {}

local Auth = battery.define("auth", "the auth battery is closed")
M.error = Auth.error
local CLOSED = Auth.CLOSED
local NO_TOKEN = Auth.error("unauthenticated", "no credentials")

function Auth:issue(subject, claims, ttl)
  if type(subject) ~= "string" or subject == "" then
    error("auth:issue: subject must be a non-empty string", 2)
  end
  battery.opt_table(claims, "auth:issue", "claims")
  ttl = battery.seconds(ttl, nil, "auth:issue", "ttl", true, true)
  if self.closed then return nil, CLOSED end
  return self.impl:issue(subject, claims, ttl)
end

function Auth:verify(token)
  battery.string(token, "auth:verify", "token")
  if self.closed then return nil, CLOSED end
  return self.impl:verify(token)
end

function Auth:revoke(id, ttl)
  battery.string(id, "auth:revoke", "id")
  ttl = battery.seconds(ttl, nil, "auth:revoke", "ttl", true, true)
  if self.closed then return nil, CLOSED end
  return self.impl:revoke(id, ttl)
end

-- The bearer token of a request: "Authorization: Bearer <t>" (RFC 6750 2.1), or nil.
local function bearer(req)
  local h = req:header("authorization")
  if not h or #h < 8 or lower(sub(h, 1, 7)) ~= "bearer " then return nil end
  local t = sub(h, 8):match("^%s*(%S+)%s*$")
  return t
end
M.bearer = bearer

local function session_of(req)
  local ok, s = pcall(function() return req.session end)
  return ok and s or nil
end

-- The principal (the verified claims) of req, or nil, err: code "unauthenticated" when it
-- carries no credentials, else verify's code (a token was presented and refused).
function Auth:authenticate(req)
  if type(req) ~= "table" then error("auth:authenticate: want a request", 2) end
  if self.closed then return nil, CLOSED end
  local token = bearer(req)
  if not token then
    local s = session_of(req)
    token = s and s.auth_token
    if type(token) ~= "string" then return nil, NO_TOKEN end
  end
  return self.impl:verify(token)
end

-- Logs a subject in on req's session (zever.middleware.session): a new credential, a new
-- session id (fixation), the credential kept in the session. Returns token, claims.
function Auth:login(req, subject, claims, ttl)
  local s = session_of(req)
  if not s then error("auth:login: needs zever.middleware.session on the route", 2) end
  local token, c = self:issue(subject, claims, ttl)
  if not token then return nil, c end
  s:regenerate()
  s.auth_token = token
  return token, c
end

function Auth:logout(req)
  local s = session_of(req)
  local token = (s and s.auth_token) or bearer(req)
  if token then
    local claims = self.impl:verify(token)
    if claims and claims.jti then self.impl:revoke(claims.jti) end
  end
  if s then s:destroy() end
  return true
end

-- What routes.register (the .zen routes backend, zever.rpc) takes: auth finds the principal
-- (req.user when zever.middleware.auth already ran), challenge is the WWW-Authenticate of its
-- 401s. extra's fields (authorize, page_size, ...) are copied in.
function Auth:rpc_options(extra)
  battery.opt_table(extra, "auth:rpc_options", "extra")
  local out = {}
  if extra then for k, v in pairs(extra) do out[k] = v end end
  local this = self
  out.auth = function(req)
    local user = rawget(req, "user")
    if user ~= nil then return user end
    user = this:authenticate(req)
    if user then req.user = user end
    return user
  end
  out.challenge = 'Bearer realm="' .. self.realm .. '"'
  return out
end

function M.wrap(impl, section)
  local a = battery.object(Auth, impl)
  a.realm = section and section.realm or "zever"
  if find(a.realm, '["\\%c]') then error("auth: realm must not contain quotes or controls", 2) end
  a.algorithm = impl.algorithm
  return a
end

-- new{ adapter = "jwt" (default) | "session", ... the adapter's options, realm }
function M.new(opts)
  battery.opt_table(opts, "auth.new", "opts")
  opts = opts or {}
  local module = opts.adapter == "session" and "adapters.auth.session" or "adapters.auth.jwt"
  if opts.adapter ~= nil and opts.adapter ~= "jwt" and opts.adapter ~= "session" then
    error('auth.new: adapter must be "jwt" or "session"', 2)
  end
  local ok, impl = pcall(require(module).new, opts)
  if not ok then error(impl, 2) end
  return M.wrap(impl, opts)
end

M.Auth = Auth
return M
