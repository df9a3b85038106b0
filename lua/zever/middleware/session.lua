-- zever.middleware.session: a session on every request, as req.session.
--
--   app:use(zever.middleware.session{ app = app })        -- the app's session battery (config)
--   app:use(zever.middleware.session())                   -- its own memory store, defaults
--   app:use(zever.middleware.session{ store = sessions }) -- a zever.session, or fn -> one
--
--   req.session.user_id = 42          -- write (any JSON-encodable value)
--   local id = req.session.user_id    -- read (nil when unset)
--   req.session:regenerate()          -- a new id, same data: call it on login (fixation)
--   req.session:destroy()             -- forget it all and clear the cookie (logout)
--   req.session:data()                -- the data table itself (for pairs, bulk changes)
--   req.session:id()                  -- the server-side id (nil for a cookie session); a new
--                                     -- session's id is the one it will be saved under
--
-- The session loads on first use: a request that never touches req.session costs one table
-- and reads no cookie. After the handler, a session that was used is saved when its data
-- changed (nested tables included: the data is compared as JSON), when it was regenerated, or
-- when its last save is older than touch_interval (default min(60 s, idle_timeout / 2)), which
-- keeps a reader's session from going idle; a Set-Cookie is sent when the token changed. An
-- empty new session is never stored and sends no cookie. A handler that raises saves nothing.
--
-- Method names (regenerate, destroy, data, id) are reserved: they cannot be data keys.
-- Options: app or store (see above), touch_interval, and for the default store the options of
-- zever.session.new (idle_timeout, absolute_timeout, clock, cookie_name, secure, ...).

local session_mod = require "zever.session"

local type, error, setmetatable, rawget, pairs, next, tostring, min, floor = type, error,
  setmetatable, rawget, pairs, next, tostring, math.min, math.floor
local encode_data = session_mod.encode_data
-- sys.wall through the FFI: the classic binding's C call would stop the request's trace.
require "zever.cdef.sys"
local wall = require("ffi").C.zv_sys_wall

-- A proxy keeps its request's session state under a key no data key can equal (a table), so
-- that __index and __newindex still see every string and number key. (A weak side table would
-- cost the collector a traversal per request.)
local STATE = {}

local METHODS = {}

local function load(st)
  local s = st.s
  if s then return s end
  local store = st.store
  local clock = store.clock
  st.t = clock and clock() or wall()     -- the one clock read of the request
  local token = st.req:cookie(store.cookie.name)
  if token then
    local err
    s, err = store:load(token, st.t)
    if s == nil and err then error(tostring(err), 0) end
  end
  if s then
    st.token = token
  else
    s = store:create()
  end
  st.s = s
  return s
end

function METHODS.regenerate(p)
  local st = rawget(p, STATE)
  st.store:regenerate(load(st))
  if st.renewed ~= "destroyed" then st.renewed = "regenerated" end
end

function METHODS.destroy(p)
  local st = rawget(p, STATE)
  local s = load(st)
  st.store:destroy(s)
  st.store:regenerate(s)   -- data set after a logout goes under a new id
  st.renewed = "destroyed"
end

-- Before a table inside the data reaches the handler (which may change it in place), the data
-- is encoded once, so commit can tell whether it changed. Plain values need no copy: a change
-- to them goes through __newindex.
local function snapshot(st, data)
  if not st.before then st.before = encode_data(data) end
end

function METHODS.data(p)
  local st = rawget(p, STATE)
  local data = load(st).data
  snapshot(st, data)
  return data
end

function METHODS.id(p)
  return load(rawget(p, STATE)).id
end

local Proxy = {}

function Proxy.__index(p, k)
  local m = METHODS[k]
  if m then return m end
  local st = rawget(p, STATE)
  local data = load(st).data
  local v = data[k]
  if type(v) == "table" then snapshot(st, data) end
  return v
end

function Proxy.__newindex(p, k, v)
  if METHODS[k] then error("req.session: " .. tostring(k) .. " is a method, not a data key", 2) end
  local st = rawget(p, STATE)
  local s = load(st)
  s.data[k] = v
  st.dirty = true
  if st.renewed == "destroyed" then st.renewed = "regenerated" end
end

local function cookie_opts(c, max_age)
  return { path = c.path, domain = c.domain, secure = c.secure, same_site = c.same_site,
    http_only = true, max_age = max_age }
end

-- After the handler: save what needs saving, set or clear the cookie.
local function commit(st, res, touch)
  local s = st.s
  if not s then return end
  local store = st.store
  local c = store.cookie
  if st.renewed == "destroyed" and next(s.data) == nil then
    if st.token then res:clear_cookie(c.name, { path = c.path, domain = c.domain }) end
    return
  end
  if s.fresh and next(s.data) == nil then return end
  local data_json, kv
  local changed = st.dirty
  if changed or st.before then
    data_json, kv = encode_data(s.data)
    changed = changed or data_json ~= st.before
  end
  local t = st.t
  if not changed and not st.renewed and t - s.seen < touch then return end
  local token, err = store:save(s, data_json, t, kv)
  if not token then error(tostring(err), 0) end
  if token ~= st.token or store.impl.cookie then
    local left = s.created + store.absolute_timeout - t
    res:cookie(c.name, token, cookie_opts(c, left > 1 and floor(left) or 1))
  end
end

return function(opts)
  if opts ~= nil and type(opts) ~= "table" then
    error("middleware.session: expects an options table", 2)
  end
  opts = opts or {}
  local store = opts.store
  if store == nil and opts.app then
    local app = opts.app
    store = function() return app.session end
  end
  if store == nil then
    local o = {}
    for k, v in pairs(opts) do
      if k ~= "touch_interval" then o[k] = v end
    end
    store = session_mod.new(o)
  elseif type(store) ~= "table" and type(store) ~= "function" then
    error("middleware.session: store must be a session store or a function returning one", 2)
  end
  local touch = opts.touch_interval
  if touch ~= nil and (type(touch) ~= "number" or touch < 0) then
    error("middleware.session: touch_interval must be a number of seconds >= 0", 2)
  end

  return function(req, res, nxt)
    if type(store) == "function" then store = store() end
    -- Every field the request may set is in the constructor with a constant value (the only
    -- keys `luajit -b` keeps in a template, see request.new): the table is duplicated at its
    -- final size (8 keys: 8 slots) and never rehashed as fields arrive. renewed is false,
    -- "regenerated" (a new id, to be saved) or "destroyed" (logged out: nothing to save unless
    -- data is set again).
    local st = { req = false, store = false, s = false, t = false, token = false, dirty = false,
      before = false, renewed = false }
    st.req, st.store = req, store
    local p = setmetatable({ [STATE] = st }, Proxy)
    req.session = p
    local a, b, c = nxt()
    if st.s then
      commit(st, res, touch or min(60, store.idle_timeout / 2))
    end
    return a, b, c
  end
end
