-- zever.db.expr: expression nodes of the query builder: columns, values, arithmetic, function
-- calls, window functions, aliases, raw fragments, ROLLUP/CUBE. A node is an array whose slot 1
-- is an opcode from zever.sql (l_sql.c documents the layout); this file builds nodes and never
-- renders them.
--
--   db.col("attempt") + 1            -> ("attempt" + ?)        (+ - * / % and unary minus)
--   db.fn.lower(db.col("email"))     -> lower("email")         (strings in arguments are values)
--   db.fn.count()                    -> count(*)
--   db.fn.row_number():over{ partition_by = "team", order_by = {"score", "desc"} }
--   db.fn.count():as("n")            -> count(*) AS "n"
--   db.raw("CURRENT_TIMESTAMP"), db.raw("? + 1", 5)   (? are placeholders, values are bound)
--   db.excluded("name")              -> excluded."name"        (inside on_conflict():do_update)
--   db.rollup("a", "b"), db.cube(...)                            (inside group_by)
--   db.array{1, 2, 3}                -> ?  bound as '{1,2,3}'       (postgres arrays; 1-D)
--   db.col("data"):get("a")          -> ("data" -> CAST(? AS TEXT))     (json: a member, or an
--   db.col("data"):get_text(1)       -> ("data" ->> CAST(? AS INTEGER))  array index; ->> text)

local sql = require "zever.sql"

local OP = sql.op
local NULL = sql.null
local setmetatable, getmetatable, type, select, error = setmetatable, getmetatable, type, select, error
local lower = string.lower
local tostring = tostring

local M = { OP = OP, null = NULL }

local Expr = {}
Expr.__index = Expr
M.Expr = Expr

local function node(t)
  return setmetatable(t, Expr)
end

local function bin(op)
  return function(a, b) return node { OP.BIN, op, a, b } end
end
Expr.__add, Expr.__sub, Expr.__mul = bin "+", bin "-", bin "*"
Expr.__div, Expr.__mod = bin "/", bin "%"
Expr.__unm = function(a) return node { OP.NEG, a } end

-- Concatenation as SQL's ||: a .. b would be Lua's; use expr:concat(b).
function Expr:concat(other)
  return node { OP.BIN, "||", self, other }
end

function Expr:as(name)
  if type(name) ~= "string" or name == "" then error("as: the alias must be a non-empty string", 2) end
  return node { OP.ALIAS, self, name }
end

-- Appends e and its direction (0 asc, 1 desc) to the flat order list out; a bad direction
-- raises at level + 1 (relative to order_add's caller's caller).
local function order_add(out, e, dir, level)
  local desc = 0
  if dir ~= nil then
    local d = type(dir) == "string" and lower(dir)
    if d == "desc" then
      desc = 1
    elseif d ~= "asc" then
      error("order direction must be 'asc' or 'desc', got " .. tostring(dir), level + 1)
    end
  end
  out[#out + 1] = e
  out[#out + 1] = desc
end

M.order_add = order_add

local function is_dir(v)
  if type(v) ~= "string" then return false end
  local d = lower(v)
  return d == "asc" or d == "desc"
end

-- Turns an order spec into the flat {expr, desc, ...} list the renderer reads:
--   "score" | {"score", "desc"} | {{"a", "asc"}, {"b", "desc"}} | {"a", "b"}
-- (No closures here: creating one would stop LuaJIT from compiling the caller's loop.)
function M.order_list(spec, level, out)
  level = (level or 1) + 1
  out = out or {}
  if type(spec) ~= "table" or spec[1] == nil or getmetatable(spec) then
    order_add(out, spec, nil, level)
  elseif type(spec[1]) == "table" and not getmetatable(spec[1]) then
    for i = 1, #spec do order_add(out, spec[i][1], spec[i][2], level) end
  elseif #spec == 2 and is_dir(spec[2]) then
    order_add(out, spec[1], spec[2], level)
  else
    for i = 1, #spec do order_add(out, spec[i], nil, level) end
  end
  return out
end

local function as_list(v)
  if v == nil then return nil end
  if type(v) == "table" and not getmetatable(v) then return v end
  return { v }
end

-- fn:over{ partition_by = col | {cols}, order_by = spec }
function Expr:over(spec)
  spec = spec or {}
  if type(spec) ~= "table" then error("over: expects a table {partition_by=, order_by=}", 2) end
  local order = spec.order_by ~= nil and M.order_list(spec.order_by, 2) or nil
  return node { OP.OVER, self, as_list(spec.partition_by), order }
end

-- JSON navigation: a member (string key) or an array element (integer key); get_text gives
-- the value as text (->>), get as json (->). Keys are bound, never written into the SQL.
local function json_key(key, fname)
  if type(key) == "string" then return key end
  if type(key) == "number" and key % 1 == 0 then return key end
  error(fname .. ": the key must be a string or an integer", 3)
end

function Expr:get(key)
  return node { OP.JSON, self, json_key(key, "get"), false }
end

function Expr:get_text(key)
  return node { OP.JSON, self, json_key(key, "get_text"), true }
end

-- PostgreSQL's array literal for a Lua list of scalars: {1,2.5,"a \"b\"",NULL,true}. The
-- text is bound as one value; the server casts it to the array type the context wants.
local format, gsub, find = string.format, string.gsub, string.find

local function array_item(v, i)
  local t = type(v)
  if t == "number" then
    if v ~= v then return "NaN" end
    if v == math.huge then return "Infinity" end
    if v == -math.huge then return "-Infinity" end
    if v % 1 == 0 and v > -2 ^ 63 and v < 2 ^ 63 then return format("%d", v) end
    return format("%.17g", v)
  elseif t == "string" then
    if find(v, "\0", 1, true) then error("db.array: item " .. i .. " holds a zero byte", 3) end
    return '"' .. gsub(v, '[\\"]', "\\%0") .. '"'
  elseif t == "boolean" then
    return v and "true" or "false"
  elseif t == "cdata" then
    return (gsub(tostring(v), "U?LL$", ""))
  elseif v == NULL then
    return "NULL"
  end
  error("db.array: item " .. i .. " is a " .. t .. " (arrays hold scalars: 1-D only)", 3)
end

function M.array(list)
  if type(list) ~= "table" or getmetatable(list) == Expr then
    error("db.array: expects a list of values", 2)
  end
  local n = list.n or #list
  local parts = {}
  for i = 1, n do
    local v = list[i]
    if v == nil then v = NULL end
    parts[i] = array_item(v, i)
  end
  return node { OP.ARRAY, "{" .. table.concat(parts, ",") .. "}" }
end

function M.col(name)
  if type(name) ~= "string" then error("db.col: the column name must be a string", 2) end
  return node { OP.COL, name }
end

function M.val(v)
  if v == nil then v = NULL end
  return node { OP.VAL, v }
end

function M.excluded(name)
  if type(name) ~= "string" then error("db.excluded: the column name must be a string", 2) end
  return node { OP.EXCLUDED, name }
end

function M.raw(text, ...)
  if type(text) ~= "string" then error("db.raw: the SQL fragment must be a string", 2) end
  local n = select("#", ...)
  local binds = { ... }
  for i = 1, n do if binds[i] == nil then binds[i] = NULL end end
  return node { OP.RAW, text, binds, n }
end

local function terms(name, ...)
  local n = select("#", ...)
  if n == 0 then error(name .. ": needs at least one column", 3) end
  local list = { ... }
  for i = 1, n do
    if list[i] == nil then error(name .. ": column " .. i .. " is nil", 3) end
  end
  return list
end

function M.rollup(...)
  return node { OP.ROLLUP, terms("db.rollup", ...) }
end

function M.cube(...)
  return node { OP.CUBE, terms("db.cube", ...) }
end

function M.exists(q)
  if type(q) ~= "table" or q[1] ~= OP.SELECT then error("db.exists: expects a select query", 2) end
  return node { OP.EXISTS, q }
end

-- db.fn.<name>(args...): any plain SQL function name; arguments are values or nodes.
M.fn = setmetatable({}, {
  __index = function(t, name)
    if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
      error("db.fn: bad function name " .. tostring(name), 2)
    end
    local f = function(...)
      local n = select("#", ...)
      local args = { ... }
      for i = 1, n do if args[i] == nil then args[i] = NULL end end
      return node { OP.FN, name, args }
    end
    rawset(t, name, f)
    return f
  end,
})

-- True when v is a node (expression, condition or query) rather than a plain value or list.
-- Nodes carry a metatable (Expr or a builder class); plain lists of values do not.
function M.is_node(v)
  return type(v) == "table" and getmetatable(v) ~= nil and type(v[1]) == "number"
end

M.node = node

return M
