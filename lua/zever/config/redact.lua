-- zever.config.redact: hides secrets in a config (or any tree of tables) before it is shown,
-- and scrubs secret values out of error messages. It must not change the tree it is given.
--
--   redact.copy(t)          -> a deep copy with secrets replaced by "[REDACTED]"
--   redact.secret_key(k)    -> true when k names a secret
--   redact.secrets(t)       -> array of the secret strings in t (values of secret keys and the
--                              userinfo of URLs), longest first
--   redact.scrub(s, list)   -> s with every string of list replaced by "[REDACTED]"
--
-- A key is secret when, lower-cased, it contains password, secret, token, bearer or credential,
-- or it is (or ends in _ or - followed by) dsn, api_key, apikey, key, private_key,
-- client_secret, auth, session, cookie, passwd or pwd. "max_keys" and "monkey" are not secret.
-- A schema field marked secret = true (crypto.keys) is secret at its place in a config
-- (section.field) whatever its name says; a top-level key that names a schema section
-- (`session`) is a section, not a secret, whatever its name says.
-- Under a secret key every value is hidden except "" and an empty table, so one can still see
-- that a secret is unset. Elsewhere a string with URL userinfo ("redis://:pw@host",
-- "postgres://user:pw@host/db") keeps its user and loses the password; userinfo without a
-- colon is taken to be a token and hidden whole; "password=..." in a key=value DSN is hidden.

local find, lower, sub, gsub, match, byte = string.find, string.lower, string.sub, string.gsub,
  string.match, string.byte
local type, pairs, ipairs, sort, tostring, require = type, pairs, ipairs, table.sort, tostring,
  require

local M = {}

local REDACTED = "[REDACTED]"
M.REDACTED = REDACTED

local CONTAINS = { "password", "secret", "token", "bearer", "credential" }
local WORDS = { "dsn", "api_key", "apikey", "key", "private_key", "client_secret", "auth", "session",
  "cookie", "passwd", "pwd" }

local function classify(k)
  local l = lower(k)
  for i = 1, #CONTAINS do
    if find(l, CONTAINS[i], 1, true) then return true end
  end
  for i = 1, #WORDS do
    local w = WORDS[i]
    if l == w then return true end
    local n = #l - #w
    if n > 0 and sub(l, n + 1) == w then
      local c = sub(l, n, n)
      if c == "_" or c == "-" then return true end
    end
  end
  return false
end

-- Decisions are memoised: config keys are a small, fixed set.
local memo, nmemo = {}, 0

local function secret_key(k)
  if type(k) ~= "string" then return false end
  local v = memo[k]
  if v == nil then
    v = classify(k)
    if nmemo < 4096 then
      memo[k] = v
      nmemo = nmemo + 1
    end
  end
  return v
end
M.secret_key = secret_key

-- The userinfo of each URL in s hidden: "scheme://user:pw@" -> "scheme://user:[REDACTED]@";
-- userinfo without ":" (a token) is hidden whole. Plain finds, no patterns: it runs on every
-- string of a config.
local function redact_userinfo(s)
  local out, from = nil, 1
  local at = find(s, "://", 1, true)
  while at do
    local start = at + 3
    local stop = start
    local b = byte(s, stop)
    -- userinfo ends at "@"; "/", whitespace or the end mean there is none
    while b and b ~= 64 and b ~= 47 and b > 32 do
      stop = stop + 1
      b = byte(s, stop)
    end
    local info = sub(s, start, stop - 1)
    -- A userinfo opening with "[" is the usage pattern "redis://[:password@]host" of a message
    -- ("[" cannot start a URL's userinfo, RFC 3986), not a secret. A "[" further in is hidden.
    if b == 64 and byte(info, 1) ~= 91 then
      local colon = find(info, ":", 1, true)
      local keep = colon and sub(info, 1, colon) or ""
      out = (out or "") .. sub(s, from, start - 1) .. keep .. REDACTED
      from = stop
    end
    at = find(s, "://", stop, true)
  end
  if not out then return s end
  return out .. sub(s, from)
end

-- A string with its embedded secrets hidden (URL userinfo, key=value passwords).
local function redact_string(s)
  if find(s, "@", 1, true) and find(s, "://", 1, true) then s = redact_userinfo(s) end
  if find(s, "=", 1, true) and (find(s, "assword", 1, true) or find(s, "ASSWORD", 1, true)) then
    s = gsub(s, "(%f[%w][Pp][Aa][Ss][Ss][Ww][Oo][Rr][Dd]%s*=%s*)('[^']*'?)", "%1" .. REDACTED)
    s = gsub(s, "(%f[%w][Pp][Aa][Ss][Ss][Ww][Oo][Rr][Dd]%s*=%s*)([^%s']+)", "%1" .. REDACTED)
  end
  return s
end
M.redact_string = redact_string

-- secret_fields[section][field] = true for the schema's fields marked secret, and the schema's
-- sections by name (both read on first use: the schema is not loaded for a bare redact). Nested
-- tables, so that a lookup makes no "section.field" string per key.
--
-- PLAN[section] is what copy needs to know of a schema section's fields, decided once:
--   plan.hide[field]     true when the field is secret (by its name or by secret = true)
--   plan.default[field]  its default (not a table)
--   plan.make()          a new table of every such field's default as copy shows it, made by
--                        one compiled constructor (config/template.lua): a field still at its
--                        default (most of a config) then costs one comparison and no store
--   plan.names           the fields make() holds, to take out those the config lacks
local secret_fields, sections, PLAN

-- How copy shows the value v of a key, hidden or not (not for tables).
local function shown(v, hide)
  if hide then return (v == "") and v or REDACTED end
  if type(v) == "string" then return redact_string(v) end
  return v
end

local function load_schema()
  local schema = require "zever.config.schema"
  local template = require "zever.config.template"
  secret_fields, sections, PLAN = {}, schema.by_name, {}
  for _, s in ipairs(schema.sections) do
    local plan = { hide = {}, default = {}, names = {} }
    for _, field in ipairs(s.fields) do
      local name, d = field.name, field.default
      if field.secret then
        local t = secret_fields[s.name] or {}
        t[name] = true
        secret_fields[s.name] = t
      end
      plan.hide[name] = field.secret == true or secret_key(name)
      if d ~= nil and type(d) ~= "table" then
        plan.default[name] = d
        plan.names[#plan.names + 1] = name
      end
    end
    plan.make = template.section(s.fields, function(field)
      local d = plan.default[field.name]
      if d ~= nil then return shown(d, plan.hide[field.name]) end
    end)
    if not s.free then PLAN[s.name] = plan end
  end
end

local function secret_field(section, k)
  if not section then return false end
  if not secret_fields then load_schema() end
  local t = secret_fields[section]
  return t ~= nil and t[k] == true
end

-- True when k, at the top of a config, names a section of the schema.
local function is_section(section, k)
  if section ~= nil then return false end
  if not sections then load_schema() end
  return sections[k] ~= nil
end

-- The section a child of node k is in: k itself at the top (section == nil), else none.
local function child_section(section, k)
  if section == nil and type(k) == "string" then return k end
  return false
end

local copy

-- A schema section's table: the same decisions as copy's, read from the plan. A key the schema
-- does not know (a config not from load) is decided by its name, as copy does.
local function copy_section(t, plan)
  local out = plan.make()
  local hide_of, default = plan.hide, plan.default
  local held = 0                                   -- keys of t that make() already holds
  for k, v in pairs(t) do
    local d = default[k]
    if d ~= nil then held = held + 1 end
    if d == nil or v ~= d then
      local hide = hide_of[k]
      if hide == nil then hide = secret_key(k) end
      if type(v) == "table" then
        out[k] = copy(v, hide, false)
      else
        out[k] = shown(v, hide)
      end
    end
  end
  local names = plan.names
  if held < #names then                             -- t lacks some fields: take them out
    for i = 1, #names do
      if t[names[i]] == nil then out[names[i]] = nil end
    end
  end
  return out
end

-- section: nil at the top, a section's name in a section's table, false deeper. The rule of
-- is_section / secret_field, read inline (this runs for every key).
copy = function(t, hidden, section)
  if not sections then load_schema() end
  local out = {}
  local marked = section and secret_fields[section]   -- the fields marked secret = true here
  for k, v in pairs(t) do
    local hide = hidden
    if not hide then
      if section == nil then
        hide = sections[k] == nil and secret_key(k)
      else
        hide = secret_key(k) or (marked and marked[k] == true)
      end
    end
    local tv = type(v)
    if tv == "table" then
      local plan = section == nil and not hide and PLAN[k]
      if plan then
        out[k] = copy_section(v, plan)
      else
        out[k] = copy(v, hide, child_section(section, k))
      end
    elseif hide then
      out[k] = (v == "") and v or REDACTED
    elseif tv == "string" then
      out[k] = redact_string(v)
    else
      out[k] = v
    end
  end
  return out
end

function M.copy(t)
  if type(t) ~= "table" then error("redact: expects a table, got " .. type(t), 2) end
  return copy(t, false, nil)
end

-- Secret strings of t: what scrub must remove from messages.
function M.secrets(t)
  local list, seen = {}, {}
  local function add(s)
    if s ~= "" and not seen[s] then
      seen[s] = true
      list[#list + 1] = s
    end
  end
  local function walk(node, hidden, section)
    for k, v in pairs(node) do
      local hide = hidden or (not is_section(section, k) and secret_key(k)) or
        secret_field(section, k)
      if type(v) == "table" then
        walk(v, hide, child_section(section, k))
      elseif type(v) == "string" then
        if hide then add(v) end
        for userinfo in v:gmatch("%a[%w+.-]*://([^/@%s]*)@") do
          local pw = match(userinfo, "^[^:]*:(.*)$")
          add(pw or userinfo)
        end
        for pw in v:gmatch("%f[%w][Pp][Aa][Ss][Ss][Ww][Oo][Rr][Dd]%s*=%s*'?([^%s']+)") do add(pw) end
      end
    end
  end
  walk(t, false, nil)
  sort(list, function(a, b) return #a > #b end)
  return list
end

-- s with every secret of list replaced; plain matching, no patterns.
function M.scrub(s, list)
  s = tostring(s)
  for i = 1, #list do
    local secret = list[i]
    local at = find(s, secret, 1, true)
    while at do
      s = sub(s, 1, at - 1) .. REDACTED .. sub(s, at + #secret)
      at = find(s, secret, at + #REDACTED, true)
    end
  end
  return s
end

return M
