-- zever.config.validate: merges a file's tree into the config by the schema (strictly: unknown
-- sections and fields, and values of the wrong type, are errors), converts environment strings,
-- and runs the checks that span fields once every layer is in. It must not read files or the
-- environment, and no message it builds may contain a configured value: values can be secrets.
-- (Adapter names are the exception: they are enum words, never secrets.)
--
-- Errors are collected in state.errors as { file, line, path, var, message } items; config.lua
-- turns them into one error object. state.origin[path] remembers which layer set a field last
-- (a file name, or "$VAR"), and state.line[path] the line in that file, so a cross-field check
-- can point at the layer that made the value.

local schema = require "zever.config.schema"
local read = require "zever.config.read"
local text = require "zever.text"

local next, type, pairs, ipairs, tostring, format, concat, sort, floor, find, match, lower, tonumber =
  next, type, pairs, ipairs, tostring, string.format, table.concat, table.sort, math.floor, string.find,
  string.match, string.lower, tonumber

local NULL = read.NULL
-- zever.duration loads on the first duration written as text (most configurations have none).
local function parse_duration(v)
  return require("zever.duration").parse(v)
end

local M = {}

local merge_free

local DURATION_WANT = 'a duration like "30s", "1h30m", "PT30S", "P1D" or integer nanoseconds'

local function did_you_mean(word, names, what)
  local best = text.closest(word, names)
  if best then return format('; did you mean "%s"?', best) end
  return format(" (known %s: %s)", what, concat(names, ", "))
end
M.did_you_mean = did_you_mean

-- Enum and adapter problems: name is shown (it is an enum word) unless hide is set.
local function enum_reason(field, name, hide)
  local what = field.type == "adapter" and "adapter" or "value"
  local best = text.closest(name, field.values)
  local known = concat(field.values, ", ")
  local head = hide and ("unknown " .. what) or format("unknown %s %q", what, name)
  if best then return format('%s; did you mean "%s"? (known: %s)', head, best, known) end
  return format("%s (known: %s)", head, known)
end

local function one_of(field, s)
  for _, v in ipairs(field.values) do
    if v == s then return true end
  end
  return false
end

-- A tree value for field -> value | nil, reason.
function M.convert(field, v)
  local t = field.type
  local vt = type(v)
  if t == "string" then
    if vt == "string" then return v end
    if vt == "number" or vt == "boolean" then
      return nil, "expected a string, got " .. read.kind(v) .. " (quote it)"
    end
    return nil, "expected a string, got " .. read.kind(v)
  elseif t == "integer" or t == "number" then
    if vt ~= "number" or v ~= v then
      return nil, "expected " .. (t == "integer" and "an integer" or "a number") .. ", got " .. read.kind(v)
    end
    if t == "integer" and (v ~= floor(v) or v == math.huge or v == -math.huge) then
      return nil, "expected an integer, got a number"
    end
    if field.min and v < field.min then return nil, format("must be at least %d", field.min) end
    return v
  elseif t == "boolean" then
    if vt == "boolean" then return v end
    return nil, "expected a boolean (true or false), got " .. read.kind(v)
  elseif t == "duration" then
    if vt ~= "string" and vt ~= "number" then
      return nil, "expected " .. DURATION_WANT .. ", got " .. read.kind(v)
    end
    local sec = parse_duration(v)
    if sec == nil then return nil, "expected " .. DURATION_WANT end
    if sec < 0 then return nil, "must not be negative" end
    return sec
  else -- enum, adapter
    if vt ~= "string" then return nil, "expected a string, got " .. read.kind(v) end
    if one_of(field, v) then return v end
    return nil, enum_reason(field, v)
  end
end

local TRUE = { ["true"] = true, ["1"] = true, yes = true, on = true }
local FALSE = { ["false"] = true, ["0"] = true, no = true, off = true }

-- An environment string for field -> value | nil, reason. The reason never repeats s.
function M.parse_env(field, s)
  local t = field.type
  if t == "string" then return s end
  if t == "integer" or t == "number" then
    local n = tonumber(s)
    if n == nil or n ~= n or (t == "integer" and (n ~= floor(n) or not find(s, "^%s*[-+]?%d+%s*$"))) then
      return nil, "expected " .. (t == "integer" and "an integer" or "a number")
    end
    if field.min and n < field.min then return nil, format("must be at least %d", field.min) end
    return n
  elseif t == "boolean" then
    local l = lower(s)
    if TRUE[l] then return true end
    if FALSE[l] then return false end
    return nil, "expected a boolean (true/false, 1/0, yes/no, on/off)"
  elseif t == "duration" then
    local v = s
    if find(s, "^%d+$") then v = tonumber(s) end   -- integer nanoseconds
    local sec = parse_duration(v)
    if sec == nil then return nil, "expected " .. DURATION_WANT end
    if sec < 0 then return nil, "must not be negative" end
    return sec
  else
    if one_of(field, s) then return s end
    local l = lower(s)
    if one_of(field, l) then return l end
    return nil, enum_reason(field, s, true)
  end
end

local function push(state, item)
  local errs = state.errors
  errs[#errs + 1] = item
end

-- Sorts the errors from index first on by line, then path: reading order, whatever the order
-- of pairs() was. Only runs when there are errors, so a good file pays nothing for it.
local function sort_from(errs, first)
  if #errs < first + 1 then return end
  local slice = {}
  for i = first, #errs do slice[#slice + 1] = errs[i] end
  sort(slice, function(a, b)
    local la, lb = a.line or 0, b.line or 0
    if la ~= lb then return la < lb end
    return (a.path or "") < (b.path or "")
  end)
  for i, e in ipairs(slice) do errs[first + i - 1] = e end
end

-- A free-form section (app): mappings merge key by key, down to any depth, so an overlay file
-- changes one nested key without repeating its siblings; lists and scalars replace. Null
-- values leave what was there.
local function copy_tree(v)
  if type(v) ~= "table" or v == NULL then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = copy_tree(x) end
  return out
end

local function is_mapping(v)
  return type(v) == "table" and v ~= NULL and v[1] == nil and next(v) ~= nil
end

merge_free = function(dst, src, path, file, state)
  for k, v in pairs(src) do
    if v ~= NULL then
      local p = path .. "." .. tostring(k)
      if is_mapping(v) and is_mapping(dst[k]) then
        merge_free(dst[k], v, p, file, state)
      else
        dst[k] = copy_tree(v)
      end
      state.origin[p] = file
    end
  end
end

-- Merges tree (from file) into cfg. Null values leave the field as it was.
function M.merge(cfg, tree, lines, file, state)
  local top_lines = lines[tree]
  local first = #state.errors + 1
  for name, value in pairs(tree) do
    local section = schema.by_name[name]
    local line = top_lines and top_lines[name]
    if section == nil then
      push(state, { file = file, line = line, path = tostring(name),
        message = "unknown section" .. did_you_mean(tostring(name), schema.names, "sections") })
    elseif value == NULL then
      local _ = value                                          -- "db:" with nothing: defaults
    elseif type(value) ~= "table" or (value[1] ~= nil) then
      push(state, { file = file, line = line, path = name,
        message = "expected a mapping of " .. (section.free and "keys" or "fields") .. ", got "
          .. read.kind(value) })
    elseif section.free then
      merge_free(cfg[name], value, name, file, state)
    else
      local flines = lines[value]
      local dst = cfg[name]
      for key, v in pairs(value) do
        local field = section.by_name[key]
        local fline = flines and flines[key] or line
        if field == nil then
          push(state, { file = file, line = fline, path = name .. "." .. tostring(key),
            message = "unknown field" .. did_you_mean(tostring(key), section.field_names, "fields") })
        elseif v ~= NULL then
          local path = field.path                      -- made once by the schema, not per key
          local cv, reason = M.convert(field, v)
          if cv == nil then
            push(state, { file = file, line = fline, path = path, message = reason })
          else
            dst[key] = cv
            state.origin[path], state.line[path] = file, fline
          end
        end
      end
    end
  end
  sort_from(state.errors, first)
end

-- --- checks across fields, after every layer -------------------------------------------------

local function check_error(state, path, message)
  local origin = state.origin[path]
  local item = { path = path, message = message }
  if origin and origin:sub(1, 1) == "$" then
    item.var = origin:sub(2)
  elseif origin then
    item.file, item.line = origin, state.line[path]
  end
  push(state, item)
end

-- redis://[:password@]host:port/db (rediss:// for TLS); port and db optional.
local function valid_redis_url(url)
  local rest = match(url, "^rediss?://(.*)$")
  if not rest then return false end
  local userinfo, hostpart = match(rest, "^(.*)@([^@]*)$")
  if not userinfo then hostpart = rest end
  local host, port, db = match(hostpart, "^([^:/]+):?(%d*)/?(%d*)$")
  if not host then
    host, port, db = match(hostpart, "^(%[[%x:]+%]):?(%d*)/?(%d*)$")
  end
  if not host then return false end
  if port ~= "" and (tonumber(port) < 1 or tonumber(port) > 65535) then return false end
  return true, db
end
M.valid_redis_url = valid_redis_url

local DSN_SCHEMES = { sqlite = { "sqlite" }, postgres = { "postgres", "postgresql" } }

function M.check(cfg, state)
  -- db: the DSN's scheme must belong to the adapter.
  local db = cfg.db
  local scheme = match(db.dsn, "^([%a][%w+.-]*):")
  -- The DSN alone picks the adapter (DB_DSN=postgres://... with no DB_ADAPTER): the scheme
  -- decides unless a layer set db.adapter itself.
  if state.origin["db.adapter"] == nil then
    for adapter, schemes in pairs(DSN_SCHEMES) do
      for _, s in ipairs(schemes) do
        if s == scheme then db.adapter = adapter end
      end
    end
  end
  local ok = false
  for _, s in ipairs(DSN_SCHEMES[db.adapter] or {}) do
    if s == scheme then ok = true end
  end
  if not ok then
    check_error(state, "db.dsn", format('the DSN does not belong to db.adapter "%s" (want %s)',
      db.adapter, db.adapter == "sqlite" and "sqlite:<path> or sqlite::memory:" or "postgres://..."))
  elseif db.adapter == "sqlite" and db.dsn == "sqlite:" then
    check_error(state, "db.dsn", "the DSN names no database file")
  end
  -- http.listen: host:port
  local port = match(cfg.http.listen, "^[^%s]*:(%d+)$")
  if not port or tonumber(port) > 65535 then
    check_error(state, "http.listen", "expected host:port, like 127.0.0.1:8080 or 0.0.0.0:80")
  end
  -- Redis URLs: the shared one, and every battery's own.
  if not valid_redis_url(cfg.redis.url) then
    check_error(state, "redis.url", "expected redis://[:password@]host:port/db")
  end
  for _, name in ipairs(schema.batteries) do
    local s = cfg[name]
    if s.url and s.url ~= "" and s.adapter == "redis" and not valid_redis_url(s.url) then
      check_error(state, name .. ".url", "expected redis://[:password@]host:port/db")
    end
  end
  if cfg.jobs.backoff_cap < cfg.jobs.backoff_base then
    check_error(state, "jobs.backoff_cap", "must not be shorter than jobs.backoff_base")
  end
end

return M
