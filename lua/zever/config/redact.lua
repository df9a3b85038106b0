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
local type, pairs, ipairs, next, sort, tostring, require, format = type, pairs, ipairs, next,
  table.sort, tostring, require, string.format
local concat = table.concat
local tnew = require "table.new"

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
    -- A userinfo opening with "[" is the usage pattern "redis://[:password@]host" of a message
    -- ("[" cannot start a URL's userinfo, RFC 3986), not a secret. A "[" further in is hidden.
    -- (The userinfo string is made only then: not for a "://" without one.)
    if b == 64 and byte(s, start) ~= 91 then
      local info = sub(s, start, stop - 1)
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
-- TOP is copy's top level for a config, compiled from the schema on first use (below): it knows
-- each section, and in it each field, by a constant key.
local secret_fields, sections, TOP

-- How copy shows the value v of a key, hidden or not.
local copy
local function value(v, hide)
  if type(v) == "table" then return copy(v, hide) end
  if hide then return (v == "") and v or REDACTED end
  if type(v) == "string" then return redact_string(v) end
  return v
end

-- A deep copy of t, every value hidden when hidden, else decided by its key's name. out is made
-- at its size (its array part as t's): a table filled key by key grows and rehashes at 1, 2, 4,
-- 8 ... keys, which cost a table of ten keys more than copying them.
copy = function(t, hidden)
  local n, na = 0, #t
  for _ in next, t do n = n + 1 end
  local out = tnew(na, n > na and n - na or 0)
  for k, v in next, t do
    local hide = hidden or secret_key(k)
    if type(v) == "table" then
      out[k] = copy(v, hide)
    elseif hide then
      out[k] = (v == "") and v or REDACTED
    elseif type(v) == "string" then
      out[k] = redact_string(v)
    else
      out[k] = v
    end
  end
  return out
end

-- The copier of a schema section, compiled: the same decisions as copy's, made once per field.
-- Its table starts as the fields' defaults as shown (one constructor, config/template.lua);
-- each field is read by its constant key and compared with its default, so a field at its
-- default (most of a config) costs a read and a comparison. c counts the keys of t, n the
-- fields t holds; when t holds more keys than fields, the others are decided by their names, as
-- copy does:
--
--   local o = { listen = "127.0.0.1:8080", ... }
--   local c = 0; for _ in next, t do c = c + 1 end
--   local n, v = 0
--   v = t["listen"]
--   if v == "127.0.0.1:8080" then n = n + 1 elseif v == nil then o["listen"] = nil
--   else n = n + 1; o["listen"] = V(v, false) end
--   ...                                              (a field without a constant default:)
--   v = t["keys"]; if v ~= nil then n = n + 1; o["keys"] = V(v, true) end
--   if c ~= n then X(t, o) end
--   return o
local function section_copier(s, template)
  local literal = template.literal
  local hide_of, values = {}, { V = value, next = next }
  local function constant(v)                       -- v as source: a literal or E[i]
    local lit = literal(v)
    if lit then return lit end
    values[#values + 1] = v
    return format("E[%d]", #values)
  end
  local src = { "local E = ...\nlocal V, X, next = E.V, E.X, E.next\nreturn function(t)\nlocal o = {" }
  local body = {}
  for _, field in ipairs(s.fields) do
    local name, d = field.name, field.default
    local hide = field.secret == true or secret_key(name)
    hide_of[name] = hide
    local key, h = format("%q", name), tostring(hide)
    body[#body + 1] = format("v = t[%s]\n", key)
    if d ~= nil and type(d) ~= "table" then
      local shown_d
      if hide then shown_d = (d == "") and d or REDACTED else
        shown_d = type(d) == "string" and redact_string(d) or d
      end
      src[#src + 1] = format("[%s] = %s,", key, constant(shown_d))
      body[#body + 1] = format("if v == %s then n = n + 1 elseif v == nil then o[%s] = nil " ..
        "else n = n + 1; o[%s] = V(v, %s) end\n", constant(d), key, key, h)
    else
      body[#body + 1] = format("if v ~= nil then n = n + 1; o[%s] = V(v, %s) end\n", key, h)
    end
  end
  src[#src + 1] = "}\nlocal c = 0\nfor _ in next, t do c = c + 1 end\nlocal n, v = 0\n"
  for i = 1, #body do src[#src + 1] = body[i] end
  src[#src + 1] = "if c ~= n then X(t, o) end\nreturn o\nend\n"
  values.X = function(t, o)                          -- the keys the schema does not know here
    for k, v in next, t do
      if hide_of[k] == nil then o[k] = value(v, secret_key(k)) end
    end
  end
  return template.compile(src, values, "config.redact." .. s.name)
end

-- The top level of a config, compiled: each schema section by its constant key, a section's
-- table by its copier (a free section's by copy); a key that names a section is never secret.
-- Other keys are decided by their names, as copy does; a table with no section's key at all
-- is copied by copy (the same rule there, and a table of its own size rather than the
-- 39-section one: 64 slots). (The keys are counted after the
-- sections here, before the fields in a section: the order LuaJIT traced best, 1-2k
-- instructions of a redact, bench/config_callgrind.lua.)
local function top_copier(list, template)
  local values = { V = value, C = copy, next = next, type = type, F = {} }
  local src = { "local E = ...\nlocal V, C, X, F, next, type = E.V, E.C, E.X, E.F, E.next, E.type\n",
    "return function(t)\n", "", "local o = {" }
  local body, none = {}, {}
  for i, s in ipairs(list) do
    local key = format("%q", s.name)
    none[#none + 1] = format("t[%s] == nil", key)
    src[#src + 1] = format("[%s] = true,", key)
    local table_copy
    if s.free then
      table_copy = "C(v, false)"
    else
      values.F[i] = section_copier(s, template)
      table_copy = format("F[%d](v)", i)
    end
    body[#body + 1] = format("v = t[%s]\nif v == nil then o[%s] = nil else n = n + 1\n" ..
      "if type(v) == \"table\" then o[%s] = %s else o[%s] = V(v, false) end end\n",
      key, key, key, table_copy, key)
  end
  src[3] = "if " .. concat(none, " and ") .. " then return C(t, false) end\n"
  src[#src + 1] = "}\nlocal n, v = 0\n"
  for i = 1, #body do src[#src + 1] = body[i] end
  src[#src + 1] = "local c = 0\nfor _ in next, t do c = c + 1 end\nif c ~= n then X(t, o) end\n" ..
    "return o\nend\n"
  values.X = function(t, o)                          -- keys that name no section
    for k, v in next, t do
      if sections[k] == nil then o[k] = value(v, secret_key(k)) end
    end
  end
  return template.compile(src, values, "config.redact")
end

local function load_schema()
  local schema = require "zever.config.schema"
  secret_fields, sections = {}, schema.by_name
  for _, s in ipairs(schema.sections) do
    for _, field in ipairs(s.fields) do
      if field.secret then
        local t = secret_fields[s.name] or {}
        t[field.name] = true
        secret_fields[s.name] = t
      end
    end
  end
  TOP = top_copier(schema.sections, require "zever.config.template")
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

function M.copy(t)
  if type(t) ~= "table" then error("redact: expects a table, got " .. type(t), 2) end
  if not TOP then load_schema() end
  return TOP(t)
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
