-- zever.cli.pretty: values as text for `zever console`: strings quoted, tables as Lua
-- constructors (keys sorted, arrays first, nested tables indented, cycles and depth cut), and a
-- list of flat rows (a query result) as a grid. It must not call metamethods of what it prints
-- (rawget, rawlen-like walking), so printing a battery or an app has no side effect.
--
--   pretty.render(value[, { depth = 4, width = 100 }]) -> text

local format, concat, sort, rep = string.format, table.concat, table.sort, string.rep
local type, tostring, next, rawget = type, tostring, next, rawget

local M = {}

local null = require("zever.json").null

local function scalar(v)
  local t = type(v)
  if v == null then return "null" end
  if t == "string" then return format("%q", v):gsub("\\\n", "\\n") end
  if t == "number" then
    if v == math.floor(v) and v > -2^53 and v < 2^53 then return format("%d", v) end
    return format("%.17g", v)
  end
  if t == "function" then
    local info = debug.getinfo(v, "S")
    return format("<function %s:%d>", info.short_src, info.linedefined)
  end
  if t == "table" or t == "userdata" or t == "cdata" or t == "thread" then return nil end
  return tostring(v)
end

local function is_ident(k)
  return type(k) == "string" and k:match("^[%a_][%w_]*$") ~= nil
end

local function keys_of(t)
  local n = 0
  while rawget(t, n + 1) ~= nil do n = n + 1 end
  local rest = {}
  for k in next, t do
    if not (type(k) == "number" and k >= 1 and k <= n and k % 1 == 0) then rest[#rest + 1] = k end
  end
  sort(rest, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta < tb end
    if ta == "string" or ta == "number" then return a < b end
    return tostring(a) < tostring(b)
  end)
  return n, rest
end

-- A list of at least one flat row with the same keys: the rows' columns, or nil.
local function grid_columns(t)
  local n, rest = keys_of(t)
  if n == 0 or #rest > 0 then return nil end
  local cols, seen = {}, {}
  for i = 1, n do
    local row = rawget(t, i)
    if type(row) ~= "table" then return nil end
    local rn, rk = keys_of(row)
    if rn > 0 then return nil end
    for _, k in ipairs(rk) do
      if type(k) ~= "string" or scalar(row[k]) == nil then return nil end
      if not seen[k] then
        seen[k] = true
        cols[#cols + 1] = k
      end
    end
  end
  if #cols == 0 then return nil end
  return cols, n
end

local function grid(t, cols, n)
  local width, cells = {}, {}
  for j, c in ipairs(cols) do width[j] = #c end
  for i = 1, n do
    local row, line = rawget(t, i), {}
    for j, c in ipairs(cols) do
      local v = rawget(row, c)
      local s = v == nil and "" or (type(v) == "string" and v or scalar(v))
      s = s:gsub("\n", "\\n")
      line[j] = s
      if #s > width[j] then width[j] = #s end
    end
    cells[i] = line
  end
  local function fmt(line)
    local parts = {}
    for j = 1, #cols do parts[j] = line[j] .. rep(" ", width[j] - #line[j]) end
    return (concat(parts, " | "):gsub("%s+$", ""))
  end
  local sep = {}
  for j = 1, #cols do sep[j] = rep("-", width[j]) end
  local out = { fmt(cols), concat(sep, "-+-") }
  for i = 1, n do out[#out + 1] = fmt(cells[i]) end
  out[#out + 1] = format("(%d row%s)", n, n == 1 and "" or "s")
  return concat(out, "\n")
end

local function render(v, depth, indent, seen)
  local s = scalar(v)
  if s then return s end
  if type(v) ~= "table" then return "<" .. tostring(v) .. ">" end
  if seen[v] then return "<cycle>" end
  local mt = getmetatable(v)
  if mt and mt.__tostring then return "<" .. tostring(v) .. ">" end
  if next(v) == nil then return "{}" end
  if depth <= 0 then return "{...}" end
  seen[v] = true
  local n, rest = keys_of(v)
  local parts = {}
  for i = 1, n do parts[#parts + 1] = render(rawget(v, i), depth - 1, indent .. "  ", seen) end
  for _, k in ipairs(rest) do
    local key = is_ident(k) and k or "[" .. (scalar(k) or "<" .. tostring(k) .. ">") .. "]"
    parts[#parts + 1] = key .. " = " .. render(rawget(v, k), depth - 1, indent .. "  ", seen)
  end
  seen[v] = nil
  local one = "{ " .. concat(parts, ", ") .. " }"
  if #one + #indent <= 100 and not one:find("\n", 1, true) then return one end
  return "{\n" .. indent .. "  " .. concat(parts, ",\n" .. indent .. "  ") .. "\n" .. indent .. "}"
end

function M.render(v, opts)
  local mt = type(v) == "table" and getmetatable(v)
  if type(v) == "table" and not (mt and mt.__tostring) then
    local cols, n = grid_columns(v)
    if cols then return grid(v, cols, n) end
  end
  return render(v, opts and opts.depth or 4, "", {})
end


return M
