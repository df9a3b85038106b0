-- zever.config.env: the environment layer. A variable <SECTION>_<FIELD> sets that field
-- (CACHE_ADAPTER=redis, DB_DSN=..., MAILER_SMTP_HOST=...); the match ignores case and "_", so
-- mailer_smtphost works too. Unknown variables are ignored, empty ones too (an empty value means
-- "not set", as in most shells' `VAR= cmd`). A value that does not parse for its field is an
-- error naming the variable, never echoing the value. It must not know about files.
--
-- Sources:
--   nil       the process environment, read once per load through LuaJIT's FFI (`environ`):
--             variables whose name (ignoring case and "_") does not begin with a section's
--             name are skipped without making a Lua string (100 unrelated ones: ~2 us).
--   table     { NAME = "value" } (specs, embedding); scanned with pairs, same matching.
--   function  a getenv-like function, called once per field with the canonical upper-case
--             name (HTTP_LISTEN, ...); only those exact names are seen.
--
-- LuaJIT has no environ listing of its own; reading /proc/self/environ costs three system
-- calls and misses setenv() made after start, which `environ` sees.

local ffi = require "ffi"
local bit = require "bit"
local schema = require "zever.config.schema"
local validate = require "zever.config.validate"

local bor = bit.bor
local find, sub, lower, gsub, byte = string.find, string.sub, string.lower, string.gsub,
  string.byte
local ffi_string = ffi.string
local type, pairs, ipairs = type, pairs, ipairs

local M = {}

local env_index = schema.env_index

-- PREFIX[c1 * 256 + c2]: the first two letters (lower case, "_" skipped) of a section name.
local PREFIX = {}
for _, s in ipairs(schema.sections) do
  local a, b = s.name:byte(1, 2)
  PREFIX[a * 256 + b] = true
end

-- SECTIONS2[c1 * 256 + c2]: the section names (lower case, "_" removed) that begin with those
-- two letters, for each_process's finer check.
local SECTIONS2 = {}
for _, s in ipairs(schema.sections) do
  local n = gsub(s.name, "_", "")
  local a, b = byte(n, 1, 2)
  local list = SECTIONS2[a * 256 + b] or {}
  list[#list + 1] = n
  SECTIONS2[a * 256 + b] = list
end

-- Whether the variable at p (a C string "NAME=value") may be ours: its name, lower-cased with
-- every "_" skipped, begins with a section's name. No Lua string is made: with the batteries'
-- 39 sections, two letters alone let through PATH (payment), TERM (tenant), PAGER, MAIL
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

-- Reading environ is what tells whether the FFI can see it.
require "zever.cdef.libc"
local environ = pcall(function() return ffi.C.environ end)

-- Calls fn(name, value) for each variable of the process environment that may be ours.
local function each_process(fn)
  local env = ffi.C.environ
  if env == nil then return end
  local i = 0
  while true do
    local p = env[i]
    if p == nil then break end
    if may_be_ours(p) then
      local s = ffi_string(p)
      local eq = find(s, "=", 1, true)
      if eq then fn(sub(s, 1, eq - 1), sub(s, eq + 1)) end
    end
    i = i + 1
  end
end

local function each_process_proc(fn)
  local f = io.open("/proc/self/environ", "rb")
  if not f then return end
  local data = f:read("*a")
  f:close()
  for name, value in data:gmatch("([^%z=]+)=([^%z]*)") do fn(name, value) end
end

local by_canonical = {}
for _, s in ipairs(schema.sections) do
  for _, field in ipairs(s.fields) do by_canonical[field.env] = field end
end

-- The field for a variable name, or nil. Canonical names (HTTP_LISTEN) are one lookup; others
-- are normalised only when their first two letters (ignoring "_") can begin a section.
local function field_of(name)
  local f = by_canonical[name]
  if f then return f end
  local c1 = byte(name, 1)
  if not c1 or c1 == 95 then return nil end
  local j = 2
  while byte(name, j) == 95 do j = j + 1 end
  if not PREFIX[bor(c1, 32) * 256 + bor(byte(name, j) or 0, 32)] then return nil end
  return env_index()[gsub(lower(name), "_", "")]
end
M.field_of = field_of

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

-- Applies source to cfg. state: { errors, origin, line, applied = { names } }.
function M.apply(cfg, source, state)
  local function set(name, value, field)
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
  local function consider(name, value)
    local field = field_of(name)
    if field then return set(name, value, field) end
    local section, key = free_of(name)
    if section then set_free(cfg, state, name, value, section, key) end
  end
  local t = type(source)
  if source == nil then
    if environ then each_process(consider) else each_process_proc(consider) end
  elseif t == "table" then
    for name, value in pairs(source) do
      if type(name) == "string" and type(value) == "string" then consider(name, value) end
    end
  elseif t == "function" then
    for _, s in ipairs(schema.sections) do
      for _, field in ipairs(s.fields) do
        local value = source(field.env)
        if type(value) == "string" then set(field.env, value, field) end
      end
    end
    -- A getenv cannot list its names: only the free keys the files declared are asked for.
    for _, fr in ipairs(FREE) do
      local keys = {}
      for key in pairs(cfg[fr.section]) do
        if type(key) == "string" then keys[#keys + 1] = key end
      end
      table.sort(keys)
      for _, key in ipairs(keys) do
        local name = fr.prefix .. key:upper()
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
