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
-- Recent records: each front-end keeps, per worker, the last record it read or wrote of up to
-- 2 x 512 server-side sessions (two generations: when the young one fills, it becomes the old one
-- and the old one is dropped), for records of at most 2 KiB whose data is flat (string keys;
-- string, number, boolean and json.null values). A load still asks the store; when the store's
-- record is byte for byte the one remembered, the data is copied from the remembered pairs
-- instead of decoded; any other record (another worker or process saved the session since) is
-- decoded. Only a pair that decoding its JSON gives back is remembered: strings must be
-- valid UTF-8 with nothing to escape (zv_json_clean_len), numbers integers below 1e14 in
-- magnitude (tostring and the C writer write the same digits); anything else takes the C codec
-- and is not remembered. Each load gets its own table: a handler's change never reaches the
-- remembered pairs or another request.
--
-- Adapter contract (adapters.session.<name>): get(id) -> blob | nil, set(id, blob, ttl),
-- delete(id), close() (the cache adapters' own shape: the server-side adapters are cache
-- adapters under their own name), optionally get_unless(id, known) -> true when the stored
-- blob is byte for byte known, else what get gives (the memory adapter's), or, for the cookie
-- adapter, cookie = true with seal(name, blob) -> token | nil, err and open(name, token) -> blob
-- | nil.

local battery = require "zever.battery"
local errors = require "zever.errors"
local json = require "zever.json"
local crypto = require "zever.crypto"

local ffi = require "ffi"
local buffer = require "string.buffer"
local new_tab = require "table.new"

local type, error, pcall, tostring, min, ceil, floor, next, getmetatable = type, error,
  pcall, tostring, math.min, math.ceil, math.floor, next, getmetatable
local encode, decode, null = json.encode, json.decode, json.null

require "zever.cdef.json"
require "zever.cdef.sys"
local clean_len = ffi.C.zv_json_clean_len
local wall = ffi.C.zv_sys_wall -- sys.wall through the FFI (a C API call stops a trace)

local M = {}

local Sessions = battery.define("session", "the session store is closed")
M.error = Sessions.error
local CLOSED = Sessions.CLOSED

local function now(self)
  local c = self.clock
  if c then return c() end
  return wall()
end

local function new_id()
  return crypto.token(32)
end

-- A server-side id is 43 characters; anything else is not looked up (the stores take any
-- bytes as a key, so a stranger token costs one lookup that finds nothing).
local function plausible_id(token)
  return #token == 43
end

-- --- the data's JSON, and the pairs of flat data -----------------------------------------------

local function clean(str)
  local n = #str
  return clean_len(str, n) == n
end

-- Keys repeat from request to request: those found clean are remembered (up to a cap), so the
-- common case skips the scan.
local MAX_CLEAN_KEYS = 4096
local clean_keys, nclean = {}, 0

local function clean_key(k)
  if clean_keys[k] then return true end
  if not clean(k) then return false end
  if nclean < MAX_CLEAN_KEYS then
    nclean = nclean + 1
    clean_keys[k] = true
  end
  return true
end

local out = buffer.new(256)

-- Appends the integer x (a time in milliseconds) as putf("%d", x) would. A 13-digit %d takes
-- LuaJIT's 64-bit formatter (~280 instructions); seconds (an int32 until 2038) and the
-- milliseconds (zero-padded to three digits by hand) take its int32 path. Anything else (below
-- one second, negative, past 2038) goes to putf as before.
local function put_ms(x)
  if x >= 1000 and x < 2147483648000 then
    local sec = floor(x / 1000)
    local ms = x - sec * 1000
    out:putf("%d", sec)
    if ms < 100 then out:put(ms < 10 and "00" or "0") end
    out:putf("%d", ms)
  else
    out:putf("%d", x)
  end
end

-- Appends the JSON of flat data to out (the bytes the C writer writes for the same table, in the
-- same next() order) and returns its pairs { k1, v1, k2, v2, ..., n = 2 * pairs }; or nil when
-- data holds anything else (a table, a fraction, a big integer, a string to escape, a metatable):
-- the caller then uses json.encode and remembers nothing (what was appended is left to reset).
-- A LuaJIT-compiled walk: the C writer is a classic C API call, which stops the request's trace.
-- Integers go through putf("%d") (the JIT writes an int32 directly; put(number) formats %.14g).
local function put_flat(data)
  if getmetatable(data) ~= nil then return nil end
  local kv, n = new_tab(8, 4), 0
  local k, v = next(data)
  if k == nil then
    kv.n = 0
    out:put("{}")
    return kv
  end
  out:put("{")
  repeat
    if type(k) ~= "string" or not clean_key(k) then return nil end
    if n > 0 then out:put(',"', k, '":') else out:put('"', k, '":') end
    local tv = type(v)
    if tv == "string" then
      if not clean(v) then return nil end
      out:put('"', v, '"')
    elseif tv == "number" then
      if v % 1 ~= 0 or v >= 1e14 or v <= -1e14 or (v == 0 and 1 / v < 0) then return nil end
      out:putf("%d", v)
    elseif tv == "boolean" then
      out:put(v and "true" or "false")
    elseif v == null then
      out:put("null")
    else
      return nil
    end
    kv[n + 1], kv[n + 2] = k, v
    n = n + 2
    k, v = next(data, k)
  until k == nil
  out:put("}")
  kv.n = n
  return kv
end

-- The JSON of a session's data (raises what json.encode raises) and, when the data is flat, its
-- pairs for Sessions:save (see put_flat).
function M.encode_data(data)
  out:reset()
  local kv = put_flat(data)
  if kv then return out:tostring(), kv end
  return encode(data)
end

-- --- recent records (see the header) -------------------------------------------------------------

local RECENT = 512         -- entries a generation
local RECENT_BYTES = 2048  -- the longest record remembered

local function recall(self, id)
  local e = self.young[id]
  if e == nil then e = self.old[id] end
  return e
end

local function remember(self, id, e)
  local young = self.young
  if young[id] == nil then
    local n = self.nyoung + 1
    if n > RECENT then
      self.old = young
      young = new_tab(0, RECENT)
      self.young = young
      n = 1
    end
    self.nyoung = n
  end
  young[id] = e
end

local function forget(self, id)
  self.young[id] = nil
  self.old[id] = nil
end

-- The pairs of decoded data when they are all plain values (see flat), else nil.
local function decoded_pairs(data)
  if getmetatable(data) ~= nil then return nil end
  local kv, n = new_tab(8, 4), 0
  for k, v in next, data do
    if type(v) == "table" then return nil end
    kv[n + 1], kv[n + 2] = k, v
    n = n + 2
  end
  kv.n = n
  return kv
end

-- A new data table from remembered pairs.
local function unpack_pairs(kv)
  local n = kv.n
  local data = new_tab(0, n / 2)
  for i = 1, n, 2 do data[kv[i]] = kv[i + 1] end
  return data
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
  local blob, e
  if impl.cookie then
    blob = impl:open(self.cookie.name, token)
  elseif plausible_id(token) then
    -- An adapter with get_unless compares the store's bytes with the remembered record's
    -- without making a string of them (true: the same bytes).
    e = recall(self, token)
    local v, err
    if e and impl.get_unless then
      v, err = impl:get_unless(token, e.blob)
      if v == true then v = e.blob end
    else
      v, err = impl:get(token)
    end
    if v == nil and err then return nil, errors.adopt("session", err) end
    blob = v
  end
  if type(blob) ~= "string" then return nil end
  local id = (not impl.cookie) and token or nil
  local cms, sms, data
  if e and e.blob == blob then
    cms, sms = e.c, e.s
  else
    local rec = decode(blob)
    if type(rec) ~= "table" or type(rec.c) ~= "number" or type(rec.s) ~= "number" or
       type(rec.d) ~= "table" then
      return nil
    end
    cms, sms, data = rec.c, rec.s, rec.d
    if id then
      local kv = #blob <= RECENT_BYTES and decoded_pairs(data)
      if kv then
        kv.blob, kv.c, kv.s = blob, cms, sms
        remember(self, id, kv)
      else
        forget(self, id)
      end
      e = nil
    end
  end
  t = t or now(self)
  local created, seen = cms / 1000, sms / 1000
  if t - seen >= self.idle_timeout or t - created >= self.absolute_timeout then
    if id then
      forget(self, id)
      impl:delete(token)
    end
    return nil
  end
  if e then data = unpack_pairs(e) end
  -- Constant values in the constructor, set after: see request.new (a template keeps no key
  -- whose value is a variable).
  local s = { id = false, data = false, created = false, seen = false }
  s.id, s.data, s.created, s.seen = id, data, created, seen
  return s
end

-- Stores s (now as its last use); returns the token for the cookie, or nil, err. data_json,
-- when given, is M.encode_data(s.data) already made by the caller (the middleware compares it)
-- and kv the pairs it gave with it (nil: the record is not remembered); t, when given, is the
-- time now.
function Sessions:save(s, data_json, t, kv)
  if type(s) ~= "table" or type(s.data) ~= "table" then
    error("session:save: want a session from create() or load()", 2)
  end
  if self.closed then return nil, CLOSED end
  t = t or now(self)
  local ttl = min(self.idle_timeout, s.created + self.absolute_timeout - t)
  if ttl <= 0 then return nil, Sessions.error("expired", "the session has expired") end
  -- The record is written by hand around the data's JSON: two integers (milliseconds) need no
  -- encoder, and read back faster than fractions. Flat data is written straight after them into
  -- the one buffer (one string a save).
  local cms, sms = floor(s.created * 1000), floor(t * 1000)
  local blob
  out:reset()
  out:put('{"c":')
  put_ms(cms)
  out:put(',"s":')
  put_ms(sms)
  out:put(',"d":')
  if data_json == nil then
    kv = put_flat(s.data)
    if kv then
      out:put("}")
      blob = out:tostring()
    else
      local ok, v = pcall(encode, s.data)
      if not ok then
        return nil, Sessions.error("invalid", "the session data is not JSON-encodable: " ..
          tostring(v))
      end
      data_json = v
      out:reset()   -- put_flat left part of the data behind
      out:put('{"c":')
      put_ms(cms)
      out:put(',"s":')
      put_ms(sms)
      out:put(',"d":')
    end
  end
  if blob == nil then
    out:put(data_json, "}")
    blob = out:tostring()
  end
  s.seen = t
  local impl = self.impl
  if impl.cookie then return impl:seal(self.cookie.name, blob) end
  local id = s.id
  local r, err = impl:set(id, blob, ceil(ttl))
  if r == nil and err then
    forget(self, id)
    return nil, errors.adopt("session", err)
  end
  if kv and #blob <= RECENT_BYTES then
    kv.blob, kv.c, kv.s = blob, cms, sms
    remember(self, id, kv)
  else
    forget(self, id)
  end
  s.fresh = nil
  return id
end

-- Gives s a new id (server-side); the old one is deleted. Call it on login and on any change
-- of privilege, so an id seen before cannot be used after (session fixation).
function Sessions:regenerate(s)
  if type(s) ~= "table" then error("session:regenerate: want a session", 2) end
  if self.closed then return nil, CLOSED end
  if not self.impl.cookie then
    local old = s.id
    s.id = new_id()
    if old then forget(self, old) end
    if old and not s.fresh then self.impl:delete(old) end
  end
  return true
end

function Sessions:destroy(s)
  if type(s) ~= "table" then error("session:destroy: want a session", 2) end
  if self.closed then return nil, CLOSED end
  if s.id and not self.impl.cookie then
    forget(self, s.id)
    self.impl:delete(s.id)
  end
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
  o.young, o.old, o.nyoung = new_tab(0, RECENT), {}, 0
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
