-- zever.config.read: turns the text of a config file into a tree of Lua tables, with the line of
-- every key. It knows YAML and JSON syntax, not the schema (validate.lua checks the tree), and it
-- must not read the environment or open files.
--
--   read.yaml(src, file)       -> tree, lines | nil, err    (err: { file, line, message })
--   read.yaml_full(src, file)  -> the same, always through libyaml (for specs and fallback)
--   read.json(src, file)       -> tree, lines | nil, err
--   read.NULL                  the value of a YAML null (~, null, or nothing after "key:")
--
-- lines[t][key] is the 1-based line of key in mapping t (absent for JSON).
--
-- YAML takes two roads. Config files are nearly always a block mapping of plain or simply quoted
-- scalars, one per line; a line-by-line reader handles exactly that subset in a few
-- microseconds. The first line outside the subset (a sequence, a flow collection, an anchor, a
-- block or multi-line scalar, a tab, an escape...) sends the whole file to libyaml through
-- Debian's lua-yaml (`yaml.parser`), whose per-event tables cost about 2 us an event: 300 us for
-- a 60-line file. Both roads resolve plain scalars with the same YAML 1.2 core-schema rules
-- (resolve below), so they build the same tree; spec/zever/config_spec.lua checks that on every
-- fixture. Both reject duplicate keys, which YAML forbids and libyaml lets through.

local find, match, sub, byte, lower, format = string.find, string.match, string.sub, string.byte,
  string.lower, string.format
local tonumber, type, pcall, tostring = tonumber, type, pcall, tostring

local M = {}

local NULL = setmetatable({}, { __tostring = function() return "null" end })
M.NULL = NULL

local CONST = {
  [""] = NULL, ["~"] = NULL, null = NULL, Null = NULL, NULL = NULL,
  ["true"] = true, True = true, TRUE = true,
  ["false"] = false, False = false, FALSE = false,
  [".inf"] = math.huge, [".Inf"] = math.huge, [".INF"] = math.huge, ["+.inf"] = math.huge,
  ["-.inf"] = -math.huge, ["-.Inf"] = -math.huge, ["-.INF"] = -math.huge,
}

-- The value of a plain (unquoted) scalar, by the YAML 1.2 core schema: null, true/false,
-- decimal, 0x hex and 0o octal integers, floats, .inf; everything else is a string. Unlike
-- YAML 1.1 (lyaml's default), "yes", "on", "010" and "1:30" stay what they look like (010 is
-- ten). Byte loops, not patterns: LuaJIT runs string.match in the interpreter at ~0.5-1 us.
local function resolve(s)
  local c = CONST[s]
  if c ~= nil then return c end
  local b = byte(s, 1)
  -- digits, "+", "-", "."
  if (b >= 48 and b <= 57) or b == 43 or b == 45 or b == 46 then
    local n = #s
    if n > 2 and b == 48 then
      local x = byte(s, 2)
      if x == 120 then return tonumber(sub(s, 3), 16) or s end          -- 0x
      if x == 111 then                                                  -- 0o
        for i = 3, n do
          local d = byte(s, i)
          if d < 48 or d > 55 then return s end
        end
        return tonumber(sub(s, 3), 8)
      end
    end
    for i = 1, n do
      local d = byte(s, i)
      -- 0-9 . + - e E
      if not ((d >= 48 and d <= 57) or d == 46 or d == 43 or d == 45 or d == 101 or d == 69) then
        if s == ".nan" or s == ".NaN" or s == ".NAN" then return 0 / 0 end
        return s
      end
    end
    return tonumber(s) or s
  end
  return s
end
M.resolve = resolve

local function fail(file, line, message)
  return nil, { file = file, line = line, message = message }
end

local function duplicate(file, line, key)
  return fail(file, line, format("duplicate key %q", key))
end

-- --- the full road: libyaml events ---------------------------------------------------------

local function full(src, file)
  local ok, yaml = pcall(require, "yaml")
  if not ok then return fail(file, nil, "cannot read YAML: lua-yaml is not installed") end
  local root, lines = nil, {}
  local stack, top = {}, 0          -- open collections
  local keys = {}                   -- keys[t]: the pending key of mapping t (false: none)
  local anchors = {}
  local docs = 0

  local function add(value, ev)
    if top == 0 then
      root = value
      return true
    end
    local t = stack[top]
    local line = ev.start_mark.line + 1
    if keys[t] == nil then           -- a sequence
      t[#t + 1] = value
      return true
    end
    local key = keys[t]
    if key == false then
      if type(value) == "table" then return fail(file, line, "a mapping key must be a scalar") end
      if value == "<<" then return fail(file, line, "merge keys (<<) are not supported") end
      if t[value] ~= nil then return duplicate(file, line, value) end
      keys[t] = value
      lines[t][value] = line
      return true
    end
    t[key] = value
    keys[t] = false
    return true
  end

  local parser = yaml.parser(src)
  while true do
    local okp, ev = pcall(parser)
    if not okp then
      local msg = tostring(ev)
      local text, l, col = match(msg, "^(.-) at document: %d+, line: (%d+), column: (%d+)")
      if text then return fail(file, tonumber(l), text .. " (column " .. col .. ")") end
      return fail(file, nil, (match(msg, "^[^\n]*")))
    end
    if ev == nil then break end
    local kind = ev.type
    local line = ev.start_mark.line + 1
    if kind == "DOCUMENT_START" then
      docs = docs + 1
      if docs > 1 then return fail(file, line, "a config file holds one YAML document") end
    elseif kind == "MAPPING_START" or kind == "SEQUENCE_START" then
      if ev.tag then return fail(file, line, "YAML tags are not supported") end
      local t = {}
      if kind == "MAPPING_START" then
        keys[t] = false
        lines[t] = {}
      end
      if ev.anchor then anchors[ev.anchor] = t end
      local okk, err = add(t, ev)
      if not okk then return nil, err end
      top = top + 1
      stack[top] = t
    elseif kind == "MAPPING_END" or kind == "SEQUENCE_END" then
      stack[top] = nil
      top = top - 1
    elseif kind == "SCALAR" or kind == "ALIAS" then
      local value
      if kind == "ALIAS" then
        value = anchors[ev.anchor]
        if value == nil then return fail(file, line, "unknown alias") end
      else
        local tag = ev.tag
        if tag and tag ~= "tag:yaml.org,2002:str" then
          return fail(file, line, "YAML tags other than !!str are not supported")
        end
        local t = stack[top]
        if t and keys[t] == false then
          value = ev.value                            -- keys stay text
        elseif ev.style == "PLAIN" and not tag then
          value = resolve(ev.value)
        else
          value = ev.value
        end
        if ev.anchor then anchors[ev.anchor] = value end
      end
      local okk, err = add(value, ev)
      if not okk then return nil, err end
    end
  end
  if root == nil or root == NULL then return {}, lines end
  if type(root) ~= "table" or keys[root] == nil then
    return fail(file, 1, "the top level must be a mapping of sections")
  end
  return root, lines
end

M.yaml_full = full

-- --- the fast road: block mappings of one-line scalars --------------------------------------

-- Plain scalars may start with these bytes: letters, digits, and . / _ ~ + ( $ (and "-" before a
-- digit or "."). Anything else may be a YAML indicator; the full road decides.
-- (Byte ranges, not a pattern per byte: this runs wherever the configuration is read.)
local PLAIN_START, KEY = {}, {}
for b = 0, 255 do
  local w = (b >= 48 and b <= 57) or (b >= 65 and b <= 90) or (b >= 97 and b <= 122) -- %w
  PLAIN_START[b] = w or b == 46 or b == 47 or b == 95 or b == 126 or b == 43 or b == 40
    or b == 36                                                   -- . / _ ~ + ( $
  KEY[b] = w or b == 95 or b == 45 or b == 46                    -- _ - .
end

-- The value in src[i..j] (after "key: "), or nil when it is outside the subset.
-- Returns value, is_plain.
local function scalar(src, i, j)
  local b = byte(src, i)
  if b == 34 or b == 39 then                        -- "..." without escapes, '...' without ''
    local q = b == 34 and '"' or "'"
    local close = find(src, q, i + 1, true)
    if not close or close > j then return nil end
    local value = sub(src, i + 1, close - 1)
    if b == 34 and find(value, "\\", 1, true) then return nil end
    local k = close + 1
    while k <= j and byte(src, k) == 32 do k = k + 1 end
    if k <= j and (k == close + 1 or byte(src, k) ~= 35) then return nil end
    return value, false
  end
  if not PLAIN_START[b] then
    if b ~= 45 then return nil end
    local d = byte(src, i + 1)
    if not d or not ((d >= 48 and d <= 57) or d == 46) then return nil end
  end
  local text = sub(src, i, j)
  local cut = find(text, " #", 1, true)
  if cut then text = sub(text, 1, cut - 1) end
  local n = #text
  while byte(text, n) == 32 do n = n - 1 end
  if n < #text then text = sub(text, 1, n) end
  if byte(text, n) == 58 or find(text, ": ", 1, true) or find(text, "[", 1, true)
    or find(text, "]", 1, true) or find(text, "{", 1, true) or find(text, "}", 1, true) then
    return nil
  end
  return text, true
end

-- Returns tree, lines | nil, err | false (outside the subset: use the full road).
local function fast(src, file)
  if find(src, "\t", 1, true) or byte(src, 1) == 0xEF then return false end
  local root = {}
  local lines = { [root] = {} }
  local tables, indents, top = { root }, { -1 }, 1
  local pending = nil   -- a "key:" of tables[top] awaiting its nested mapping
  local n, pos, len = 0, 1, #src
  while pos <= len do
    local nl = find(src, "\n", pos, true) or len + 1
    local last = nl - 1
    if last >= pos and byte(src, last) == 13 then last = last - 1 end   -- CRLF
    n = n + 1
    local i = pos
    while i <= last and byte(src, i) == 32 do i = i + 1 end
    local b = byte(src, i)
    if i <= last and b ~= 35 then                   -- not blank, not a comment
      if not (KEY[b] and b ~= 45 and b ~= 46) then return false end
      local depth = i - pos
      local k0 = i
      repeat i = i + 1 until not KEY[byte(src, i) or 0]
      if i > last or byte(src, i) ~= 58 then return false end
      local key = sub(src, k0, i - 1)
      i = i + 1
      if top == 1 and indents[1] == -1 then indents[1] = depth end
      if pending then
        if depth > indents[top] then
          local t = {}
          tables[top][pending] = t
          lines[t] = {}
          top = top + 1
          tables[top], indents[top] = t, depth
        end
        pending = nil
      end
      while depth < indents[top] do
        tables[top] = nil
        top = top - 1
      end
      if depth ~= indents[top] then return false end
      local t = tables[top]
      if t[key] ~= nil then return duplicate(file, n, key) end
      lines[t][key] = n
      if i <= last and byte(src, i) ~= 32 then return false end
      while i <= last and byte(src, i) == 32 do i = i + 1 end
      if i > last or byte(src, i) == 35 then
        pending = key
        t[key] = NULL                 -- claims the key; replaced by a nested mapping
      else
        local value, plain = scalar(src, i, last)
        if value == nil then return false end
        if plain then value = resolve(value) end
        t[key] = value
      end
    end
    pos = nl + 1
  end
  return root, lines
end

function M.yaml(src, file)
  local tree, lines = fast(src, file)
  if tree == false then return full(src, file) end
  return tree, lines
end

-- --- JSON ----------------------------------------------------------------------------------

function M.json(src, file)
  local json = require "zever.json"
  local tree, err = json.decode(src)
  if tree == nil and err ~= nil then
    return fail(file, nil, "invalid JSON: " .. tostring(err))
  end
  if tree == json.null or tree == nil then return {}, {} end
  if type(tree) ~= "table" then return fail(file, nil, "the top level must be an object of sections") end
  local null = json.null
  local function nulls(t)
    for k, v in pairs(t) do
      if v == null then t[k] = NULL elseif type(v) == "table" then nulls(v) end
    end
  end
  nulls(tree)
  return tree, {}
end

-- For messages: the lower-case kind of a tree value.
function M.kind(v)
  if v == NULL then return "null" end
  local t = type(v)
  if t == "number" then return v == math.floor(v) and "an integer" or "a number" end
  if t == "table" then
    if next(v) == nil then return "an empty mapping" end
    return v[1] ~= nil and "a list" or "a mapping"
  end
  if t == "boolean" then return "a boolean" end
  if t == "string" then return "a string" end
  return lower(t)
end

return M
