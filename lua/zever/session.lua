-- zever.session: the session battery: server-side sessions (adapters memory, db, redis) or the
-- whole session in an encrypted cookie (adapter cookie), with idle and absolute expiry.
-- zever.middleware.session puts one on every request as req.session.
--
--   local sessions = session.new{ idle_timeout = 7200, absolute_timeout = 86400 }  -- memory
--   local s = sessions:create()                 -- { data = {}, created, seen }
--   s.data.user_id = 42
--   local token = sessions:save(s)              -- the cookie's value | nil, err
--   local s2 = sessions:load(token)             -- the session | nil (absent, expired, forged)
--   sessions:regenerate(s2)                     -- a new id for the same data (login)
--   sessions:destroy(s2)                        -- gone from the store
--   sessions.cookie                             -- the session cookie's settings (name, path,
--                                               -- domain, secure, same_site)
--
-- Expiry: a session unused for idle_timeout seconds, or older than absolute_timeout seconds, is
-- not found (and is deleted when seen). Time comes from opts.clock (a function returning Unix
-- seconds; specs inject one), default the wall clock, since sessions outlive a process. Stores
-- also get a TTL (the sooner of the two deadlines) so they drop sessions nobody comes back for.
--
-- A server-side session's token is its id: 32 bytes from the CSPRNG, base64url (256 bits: not
-- guessable; a token the store does not know is not found, and a new session never takes an id
-- the client offered, so an attacker cannot fix one). The stored record is JSON
-- {"c": created, "s": seen, "d": data} (times in Unix milliseconds); data must be JSON-encodable
-- (strings, numbers, booleans, tables). A cookie session's token is that record sealed by the
-- keyring.
--
-- Adapter contract (adapters.session.<name>): get(id) -> blob | nil, set(id, blob, ttl),
-- delete(id), close() (the cache adapters' own shape: the server-side adapters are cache
-- adapters under their own name), or, for the cookie adapter, cookie = true with seal(name,
-- blob) -> token | nil, err and open(name, token) -> blob | nil.

local battery = require "zever.battery"
local errors = require "zever.errors"
local json = require "zever.json"
local crypto = require "zever.crypto"
local sys = require "zever.sys"

local type, error, pcall, tostring, min, ceil, floor, format = type, error, pcall, tostring,
  math.min, math.ceil, math.floor, string.format
local encode, decode = json.encode, json.decode

local M = {}

local Sessions = battery.define("session", "the session store is closed")
M.error = Sessions.error
local CLOSED = Sessions.CLOSED

local function now(self)
  local c = self.clock
  if c then return c() end
  return sys.wall()
end

local function new_id()
  return crypto.token(32)
end

-- A server-side id is 43 characters; anything else is not looked up (the stores take any
-- bytes as a key, so a stranger token costs one lookup that finds nothing).
local function plausible_id(token)
  return #token == 43
end

function Sessions:create()
  if self.closed then return nil, CLOSED end
  local t = now(self)
  return { id = (not self.impl.cookie) and new_id() or nil, data = {}, created = t, seen = t,
    fresh = true }
end

-- The session of token, or nil when there is none (absent, expired, forged, unreadable). t, when
-- given, is the time now (a caller that already read the clock passes it).
function Sessions:load(token, t)
  battery.string(token, "session:load", "token")
  if self.closed then return nil, CLOSED end
  local impl = self.impl
  local blob
  if impl.cookie then
    blob = impl:open(self.cookie.name, token)
  elseif plausible_id(token) then
    local v, err = impl:get(token)
    if v == nil and err then return nil, errors.adopt("session", err) end
    blob = v
  end
  if type(blob) ~= "string" then return nil end
  local rec = decode(blob)
  if type(rec) ~= "table" or type(rec.c) ~= "number" or type(rec.s) ~= "number" or
     type(rec.d) ~= "table" then
    return nil
  end
  t = t or now(self)
  local created, seen = rec.c / 1000, rec.s / 1000
  if t - seen >= self.idle_timeout or t - created >= self.absolute_timeout then
    if not impl.cookie then impl:delete(token) end
    return nil
  end
  -- The decoded record becomes the session (one table less per request).
  rec.id, rec.data, rec.created, rec.seen = (not impl.cookie) and token or nil, rec.d, created, seen
  rec.c, rec.s, rec.d = nil, nil, nil
  return rec
end

-- Stores s (now as its last use); returns the token for the cookie, or nil, err. data_json,
-- when given, is json.encode(s.data) already made by the caller (the middleware compares it);
-- t, when given, is the time now.
function Sessions:save(s, data_json, t)
  if type(s) ~= "table" or type(s.data) ~= "table" then
    error("session:save: want a session from create() or load()", 2)
  end
  if self.closed then return nil, CLOSED end
  t = t or now(self)
  local ttl = min(self.idle_timeout, s.created + self.absolute_timeout - t)
  if ttl <= 0 then return nil, Sessions.error("expired", "the session has expired") end
  if data_json == nil then
    local ok, v = pcall(encode, s.data)
    if not ok then
      return nil, Sessions.error("invalid", "the session data is not JSON-encodable: " ..
        tostring(v))
    end
    data_json = v
  end
  s.seen = t
  -- The record is written by hand around the data's JSON: two integers (milliseconds) need no
  -- encoder, and read back faster than fractions.
  local blob = format('{"c":%d,"s":%d,"d":%s}', floor(s.created * 1000), floor(t * 1000),
    data_json)
  local impl = self.impl
  if impl.cookie then return impl:seal(self.cookie.name, blob) end
  local r, err = impl:set(s.id, blob, ceil(ttl))
  if r == nil and err then return nil, errors.adopt("session", err) end
  s.fresh = nil
  return s.id
end

-- Gives s a new id (server-side); the old one is deleted. Call it on login and on any change
-- of privilege, so an id seen before cannot be used after (session fixation).
function Sessions:regenerate(s)
  if type(s) ~= "table" then error("session:regenerate: want a session", 2) end
  if self.closed then return nil, CLOSED end
  if not self.impl.cookie then
    local old = s.id
    s.id = new_id()
    if old and not s.fresh then self.impl:delete(old) end
  end
  return true
end

function Sessions:destroy(s)
  if type(s) ~= "table" then error("session:destroy: want a session", 2) end
  if self.closed then return nil, CLOSED end
  if s.id and not self.impl.cookie then self.impl:delete(s.id) end
  s.data = {}
  return true
end

-- The options of a session front-end, from the config section or new()'s table.
local function settings(opts, fname)
  local o = {}
  o.idle_timeout = battery.seconds(opts.idle_timeout, 7200, fname, "idle_timeout", true)
  o.absolute_timeout = battery.seconds(opts.absolute_timeout, 86400, fname, "absolute_timeout",
    true)
  if opts.clock ~= nil and type(opts.clock) ~= "function" then
    error(fname .. ": clock must be a function", 3)
  end
  o.clock = opts.clock
  local same_site = opts.same_site or "lax"
  o.cookie = { name = opts.cookie_name or "zever_session", path = opts.path or "/",
    domain = (opts.domain ~= "" and opts.domain) or nil, secure = opts.secure and true or false,
    same_site = same_site, http_only = true }
  if not require("zever.cookie").is_token(o.cookie.name) then
    error(fname .. ": cookie must be a valid cookie name", 3)
  end
  -- The cookie settings are checked once here, not on every response.
  require("zever.cookie").build(o.cookie.name, "x", { path = o.cookie.path,
    domain = o.cookie.domain, secure = o.cookie.secure, same_site = o.cookie.same_site,
    http_only = true }, 2)
  return o
end

function M.wrap(impl, opts)
  local o = settings(opts or {}, "session.wrap")
  return battery.object(Sessions, impl, o)
end

-- new{ adapter = "memory" (default) | "cookie", crypto = keyring (cookie), idle_timeout,
-- absolute_timeout, clock, cookie_name, path, domain, secure, same_site, name, max_bytes }
function M.new(opts)
  battery.opt_table(opts, "session.new", "opts")
  opts = opts or {}
  local impl
  if opts.adapter == "cookie" then
    impl = require("adapters.session.cookie").new{ crypto = opts.crypto or crypto.default(),
      max_bytes = opts.max_bytes }
  elseif opts.adapter == nil or opts.adapter == "memory" then
    impl = require("adapters.session.memory").new{ name = opts.name, max_bytes = opts.max_bytes }
  else
    error("session.new: adapter must be \"memory\" or \"cookie\" (others come from config)", 2)
  end
  local o = settings(opts, "session.new")
  return battery.object(Sessions, impl, o)
end

M.Sessions = Sessions
return M
