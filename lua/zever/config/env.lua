-- zever.config.env: the environment layer. A variable <SECTION>_<FIELD> sets that field
-- (CACHE_ADAPTER=redis, DB_DSN=..., MAILER_SMTP_HOST=...); the match ignores case and "_", so
-- mailer_smtphost works too. Unknown variables are ignored, empty ones too (an empty value means
-- "not set", as in most shells' `VAR= cmd`). A value that does not parse for its field is an
-- error naming the variable, never echoing the value. It must not know about files.
--
-- Sources:
--   nil       the process environment, read once per load through LuaJIT's FFI (`environ`):
--             variables whose name (ignoring case and "_") does not begin with a section's
--             name are skipped without making a Lua string (100 unrelated ones: ~1 us).
--   table     { NAME = "value" } (specs, embedding); scanned with pairs, same matching.
--   os.getenv the process environment too, but only the canonical names (HTTP_LISTEN, ...)
--             count, exactly as if it were called once per field: `environ` is what getenv
--             reads, so listing it once replaces 235 calls that each scan it.
--   function  any other getenv-like function, called once per field with the canonical
--             upper-case name; only those exact names are seen.
--
-- LuaJIT has no environ listing of its own; reading /proc/self/environ costs three system
-- calls and misses setenv() made after start, which `environ` sees.

local ffi = require "ffi"
local bit = require "bit"
local schema = require "zever.config.schema"
local validate = require "zever.config.validate"

local bor = bit.bor
local find, sub, lower, upper, gsub, byte = string.find, string.sub, string.lower, string.upper,
  string.gsub, string.byte
local ffi_string, cast = ffi.string, ffi.cast
local type, pairs, ipairs, sort, getenv = type, pairs, ipairs, table.sort, os.getenv

local M = {}

local env_index = schema.env_index

-- SECTIONS2[c1 * 256 + c2]: the section names (lower case, "_" removed) that begin with those
-- two letters.
local SECTIONS2 = {}
for _, s in ipairs(schema.sections) do
  local n = gsub(s.name, "_", "")
  local a, b = byte(n, 1, 2)
  local list = SECTIONS2[a * 256 + b] or {}
  list[#list + 1] = n
  SECTIONS2[a * 256 + b] = list
end

-- The one prefilter: whether the name at p may be ours, i.e. lower-cased with every "_"
-- skipped, it begins with a section's name. p is a C string, either "NAME=value" from environ
-- or a Lua string cast to a pointer (LuaJIT's strings end in a NUL), so neither source makes a
-- Lua string for a name that cannot be ours. A whole section name, not two letters: with the
-- batteries' 39 sections, two letters let through PATH (payment), TERM (tenant), PAGER, MAIL
-- (mailer) and NODE_ENV (notification), each then copied and normalised for nothing.
local function may_be_ours(p)
  local c1 = p[0]
  if c1 == 0 or c1 == 95 then return false end
  local j = 1
  while p[j] == 95 do j = j + 1 end
  local list = SECTIONS2[bor(c1, 32) * 256 + bor(p[j], 32)]
  if not list then return false end
  for i = 1, #list do
    local n, k, ok = list[i], j + 1, true
    for m = 3, #n do
      while p[k] == 95 do k = k + 1 end
      if bor(p[k], 32) ~= byte(n, m) then
        ok = false
        break
      end
      k = k + 1
    end
    if ok then return true end
  end
  return false
end

local cstr = ffi.typeof("const char *")

-- Reading environ is what tells whether the FFI can see it.
require "zever.cdef.libc"
local environ = pcall(function() return ffi.C.environ end)

-- The variables of the process environment that may be ours, as a stateless iterator (no
-- closure made per load):  for _, name, value in process_vars() do ... end
local function process_step(env, i)
  while true do
    local p = env[i]
    if p == nil then return nil end
    i = i + 1
    if may_be_ours(p) then
      local s = ffi_string(p)
      local eq = find(s, "=", 1, true)
      if eq then return i, sub(s, 1, eq - 1), sub(s, eq + 1) end
    end
  end
end
local function none() end

local function process_vars()
  local env = ffi.C.environ
  if env == nil then return none end
  return process_step, env, 0
end

-- Calls fn(cfg, state, name, value) for each variable of /proc/self/environ.
local function each_process_proc(fn, cfg, state)
  local f = io.open("/proc/self/environ", "rb")
  if not f then return end
  local data = f:read("*a")
  f:close()
  for name, value in data:gmatch("([^%z=]+)=([^%z]*)") do fn(cfg, state, name, value) end
end

-- by_canonical[HTTP_LISTEN] = field; ORDER[field] = its place in the schema.
local by_canonical, ORDER, nfields = {}, {}, 0
for _, s in ipairs(schema.sections) do
  for _, field in ipairs(s.fields) do
    by_canonical[field.env] = field
    nfields = nfields + 1
    ORDER[field] = nfields
  end
end

-- lookup(name) -> the field for a variable name; false when the prefilter rules the name out
-- (then it is not an APP_ key either); nil otherwise. Canonical names (HTTP_LISTEN) are one
-- lookup; others are normalised only when the prefilter lets them through.
local function lookup(name)
  local f = by_canonical[name]
  if f then return f end
  if not may_be_ours(cast(cstr, name)) then return false end
  return env_index()[gsub(lower(name), "_", "")]
end

function M.field_of(name)
  return lookup(name) or nil
end

-- Free-form sections (app): APP_<KEY> sets app.<key> (the key lower-cased). A key the files
-- gave a number or a boolean keeps that type (the value must parse as one); a key holding a
-- mapping or a list cannot be set from the environment; anything else is a string.
local FREE = {}
for _, s in ipairs(schema.sections) do
  if s.free then FREE[#FREE + 1] = { prefix = s.name:upper() .. "_", section = s.name } end
end

local function free_of(name)
  for i = 1, #FREE do
    local p = FREE[i].prefix
    if #name > #p and sub(name, 1, #p) == p then return FREE[i].section, lower(sub(name, #p + 1)) end
  end
end

local function set_free(cfg, state, name, value, section, key)
  if value == "" then return end
  local t = cfg[section]
  local old = t[key]
  local path = section .. "." .. key
  local v, reason = value, nil
  if type(old) == "number" then
    v = tonumber(value)
    if v == nil or v ~= v then reason = "expected a number (the file sets a number)" end
  elseif type(old) == "boolean" then
    v = validate.parse_env({ type = "boolean" }, value)
    if v == nil then reason = "expected a boolean (true/false, 1/0, yes/no, on/off)" end
  elseif type(old) == "table" then
    reason = "the file sets a mapping or a list here; the environment sets only scalar keys"
  end
  if reason then
    local errs = state.errors
    errs[#errs + 1] = { var = name, path = path, message = reason }
    return
  end
  t[key] = v
  state.origin[path] = "$" .. name
  local applied = state.applied
  applied[#applied + 1] = name
end

-- The string keys of a free section, sorted: the order a getenv function is asked for them.
local function free_keys(cfg, section)
  local keys = {}
  for key in pairs(cfg[section]) do
    if type(key) == "string" then keys[#keys + 1] = key end
  end
  sort(keys)
  return keys
end

-- Sets a field from the variable name (the parsed value; an error when it does not parse).
-- Module-level, as consider, so that a load makes no closures.
local function set(cfg, state, name, value, field)
  if value == "" then return end
  local v, reason = validate.parse_env(field, value)
  if v == nil then
    local errs = state.errors
    errs[#errs + 1] = { var = name, path = field.path, message = reason }
    return
  end
  cfg[field.section][field.name] = v
  state.origin[field.path] = "$" .. name
  local applied = state.applied
  applied[#applied + 1] = name
end

-- A variable of a listed source (the process environment, a table): a field, an APP_ key or
-- nothing.
local function consider(cfg, state, name, value)
  local field = lookup(name)
  if field then return set(cfg, state, name, value, field) end
  if field == false then return end
  local section, key = free_of(name)
  if section then set_free(cfg, state, name, value, section, key) end
end

local function by_order(a, b) return ORDER[a[1]] < ORDER[b[1]] end

-- os.getenv as the source: what calling it for every canonical name (and APP_<KEY> for every
-- declared key) would give, in the same order, from one pass over environ. getenv returns a
-- name's first occurrence, so a name seen again is skipped.
local function apply_getenv(cfg, state)
  local seen, hits, frees                           -- made for the first candidate
  for _, name, value in process_vars() do
    if not seen then seen, hits, frees = {}, {}, {} end
    if not seen[name] then
      seen[name] = true
      local field = by_canonical[name]
      if field then
        hits[#hits + 1] = { field, name, value }
      else
        for i = 1, #FREE do
          local p = FREE[i].prefix
          if #name > #p and sub(name, 1, #p) == p then frees[#frees + 1] = { FREE[i], name, value } end
        end
      end
    end
  end
  if not seen then return end
  if #hits > 1 then sort(hits, by_order) end
  for i = 1, #hits do
    local h = hits[i]
    set(cfg, state, h[2], h[3], h[1])
  end
  if #frees == 0 then return end
  for _, fr in ipairs(FREE) do
    local asked = {}                                  -- APP_FOO -> value, for this section
    for i = 1, #frees do
      if frees[i][1] == fr then asked[frees[i][2]] = frees[i][3] end
    end
    for _, key in ipairs(free_keys(cfg, fr.section)) do
      local name = fr.prefix .. upper(key)
      local value = asked[name]
      if value then set_free(cfg, state, name, value, fr.section, key) end
    end
  end
end

-- Applies source to cfg. state: { errors, origin, line, applied = { names } }.
function M.apply(cfg, source, state)
  local t = type(source)
  if source == nil then
    if environ then
      for _, name, value in process_vars() do consider(cfg, state, name, value) end
    else
      each_process_proc(consider, cfg, state)
    end
  elseif t == "table" then
    for name, value in pairs(source) do
      if type(name) == "string" and type(value) == "string" then consider(cfg, state, name, value) end
    end
  elseif source == getenv and environ then
    apply_getenv(cfg, state)
  elseif t == "function" then
    for _, s in ipairs(schema.sections) do
      for _, field in ipairs(s.fields) do
        local value = source(field.env)
        if type(value) == "string" then set(cfg, state, field.env, value, field) end
      end
    end
    -- A getenv cannot list its names: only the free keys the files declared are asked for.
    for _, fr in ipairs(FREE) do
      for _, key in ipairs(free_keys(cfg, fr.section)) do
        local name = fr.prefix .. upper(key)
        local value = source(name)
        if type(value) == "string" then set_free(cfg, state, name, value, fr.section, key) end
      end
    end
  else
    error("config.load: env must be nil, a table or a getenv-like function, not " .. t, 3)
  end
end

-- The value of one variable from source (for ZEVER_ENV), or nil.
function M.get(source, name)
  local t = type(source)
  if t == "table" then return source[name] end
  if t == "function" then return source(name) end
  return os.getenv(name)
end

return M
