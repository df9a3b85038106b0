-- zever.middleware.auth: requires (or offers) an authenticated principal on a route or group.
--
--   app:use(zever.middleware.auth{ app = app })                  -- app.auth, 401 without one
--   r:use(zever.middleware.auth{ auth = a, optional = true })    -- req.user when there is one
--
-- It sets req.user to the verified claims (auth:authenticate: the bearer token, else the token
-- a login kept in req.session). Without a valid one it answers 401 {"error":"unauthenticated"}
-- with `WWW-Authenticate: Bearer realm="<realm>"` (RFC 6750 3), adding error="invalid_token"
-- when a token was presented and refused (expired, revoked, forged), and the rest of the chain
-- does not run; optional = true lets the request through without req.user instead. A store
-- that is down (code unavailable) answers 503, never a 401 that would log users out.

local type, error = type, error

return function(opts)
  if type(opts) ~= "table" then error("middleware.auth: expects an options table", 2) end
  local auth = opts.auth
  if auth == nil and opts.app then
    local app = opts.app
    auth = function() return app.auth end
  end
  if type(auth) ~= "table" and type(auth) ~= "function" then
    error("middleware.auth: give app = app, or auth = an auth battery (or a function)", 2)
  end
  local optional = opts.optional and true or false

  return function(req, res, nxt)
    if type(auth) == "function" then auth = auth() end
    local user, err = auth:authenticate(req)
    if user then
      req.user = user
      return nxt()
    end
    local code = err and err.code
    if code == "unavailable" then
      return res:status(503):json({ error = "unavailable" })
    end
    if optional then return nxt() end
    local challenge = 'Bearer realm="' .. auth.realm .. '"'
    if code ~= "unauthenticated" then challenge = challenge .. ', error="invalid_token"' end
    res:header("WWW-Authenticate", challenge)
    return res:status(401):json({ error = "unauthenticated" })
  end
end
