-- zever.db.query: the query builders (select, insert, update, delete). Each builder is the AST
-- itself: an array whose slots the C renderer (zever.sql, l_sql.c) reads, plus slot 0 (DB)
-- naming the database it runs on (slot 0 lives in LuaJIT's array part, which the renderer never
-- reads: a builder made with table.new(S_WAIT, 0) is then one allocation, where a `_db` field
-- needed a hash part of its own). Chain methods change the builder and return it; terminals
-- render it (to_sql) and run it through the database.
--
-- The phases live apart: this module builds; zever.db.render renders a builder (by shape);
-- zever.db.query_run holds the terminals (to_sql, all, first, each, count, exists, exec,
-- prepare, and preload's queries), installed on these classes below.
--
-- The common where(col, v) / where(col, op, v) on a query without conditions keeps the
-- comparison in the builder's own slots (w1col, w1op, w1val: lx_sql.h), not in a where list
-- holding a node: `db:from("t"):where("id", id):first()` then allocates one table, the builder,
-- which LuaJIT can sink (allocation sinking never sinks a table stored into another table: the
-- list and its node always cost two allocations and their collection, ~1,300 instructions a call
-- with the builder's own, callgrind). The renderer and the shape walk read the inline comparison
-- as the one-condition list it stands for; anything that adds a condition moves it into a list
-- first (cond_list), so the two forms are never both present.
--
-- It must not put values into SQL text (the renderer binds them) and must not know a dialect:
-- dialect differences, and errors for features a dialect lacks, live in the renderer.

local sql = require "zever.sql"
local expr = require "zever.db.expr"

local OP, NULL = sql.op, sql.null
local SELECT, CMP, IN = OP.SELECT, OP.CMP, OP.IN
local is_node, order_list, order_add = expr.is_node, expr.order_list, expr.order_add
local type, select, error, pairs = type, select, error, pairs
local setmetatable, getmetatable, tostring, rawget = setmetatable, getmetatable, tostring, rawget
local sort, lower = table.sort, string.lower
local tnew = require "table.new"

-- Slots of each node kind (lx_sql.h's ZV_SQL_*_SLOTS, exported as sql.SLOT). They are literals
-- so that LuaJIT folds them into the builder's traces (names loaded from sql.SLOT cost the
-- builder about 1% more instructions, callgrind), and they are checked against sql.SLOT below:
-- a drift from the C layout stops this module from loading.
-- (Slot 2 of every kind is the table: the constructors fill it positionally.)
local S_COLUMNS, S_DISTINCT, S_JOINS, S_WHERE, S_GROUP, S_HAVING, S_ORDER = 3, 4, 5, 6, 7, 8, 9
local S_LIMIT, S_OFFSET, S_CTES, S_SETOPS, S_LOCK, S_WAIT = 10, 11, 12, 13, 14, 15
local S_W1 = 16 -- w1col, w1op (17), w1val (18): the inline comparison (below)
local I_COLUMNS, I_ROWS, I_CONFLICT, I_ACTION, I_SET, I_RETURNING, I_CTES = 3, 4, 5, 6, 7, 8, 9
local U_SET, U_WHERE, U_RETURNING, U_CTES, U_W1 = 3, 4, 5, 6, 7
local DB = 0 -- the database's slot (see the top)
local D_WHERE, D_RETURNING, D_CTES, D_W1 = 3, 4, 5, 6
sql.check_slots("select", { columns = S_COLUMNS, distinct = S_DISTINCT, joins = S_JOINS,
  where = S_WHERE, group = S_GROUP, having = S_HAVING, order = S_ORDER, limit = S_LIMIT,
  offset = S_OFFSET, ctes = S_CTES, setops = S_SETOPS, lock = S_LOCK, wait = S_WAIT,
  w1col = S_W1, w1op = S_W1 + 1, w1val = S_W1 + 2 })
sql.check_slots("insert", { columns = I_COLUMNS, rows = I_ROWS, conflict = I_CONFLICT,
  action = I_ACTION, set = I_SET, returning = I_RETURNING, ctes = I_CTES })
sql.check_slots("update", { set = U_SET, where = U_WHERE, returning = U_RETURNING, ctes = U_CTES,
  w1col = U_W1, w1op = U_W1 + 1, w1val = U_W1 + 2 })
sql.check_slots("delete", { where = D_WHERE, returning = D_RETURNING, ctes = D_CTES,
  w1col = D_W1, w1op = D_W1 + 1, w1val = D_W1 + 2 })

local M = {}

local Select, Insert, Update, Delete = {}, {}, {}, {}
Select.__index, Insert.__index, Update.__index, Delete.__index = Select, Insert, Update, Delete
M.Select, M.Insert, M.Update, M.Delete = Select, Insert, Update, Delete

-- Queries can be used as expressions (subqueries) and aliased like them.
Select.as = expr.Expr.as

local function push(q, slot, v)
  local list = q[slot]
  if not list then
    list = {}
    q[slot] = list
  end
  list[#list + 1] = v
  return q
end

local function check_table(name, fname)
  if type(name) ~= "string" and not is_node(name) then
    error(fname .. ": the table must be a string or a subquery, got " .. type(name), 3)
  end
end

-- A generated model (dsl/backends/models.lua: a column node with a metatable and a `table`
-- name) stands for its table's name: insert/update/delete need a name, and a name lets select
-- use the render cache.
local function model_table(t)
  if type(t) == "table" and getmetatable(t) ~= nil and type(rawget(t, "table")) == "string" then
    return t.table
  end
  return t
end

local function sorted_keys(t, fname)
  local keys = {}
  for k in pairs(t) do
    if type(k) ~= "string" then error(fname .. ": keys must be column names (strings)", 4) end
    keys[#keys + 1] = k
  end
  sort(keys)
  return keys
end

-- --- conditions ---------------------------------------------------------------------------

local function value(v)
  if v == nil then return NULL end
  return v
end

local function map_cond(k, v)
  if type(v) == "table" and not is_node(v) then return { OP.IN, 0, k, v, false } end
  return { OP.CMP, 0, k, "=", value(v) }
end

local add_cond

-- A comparison node, made with table.new and filled slot by slot: the constructor
-- { CMP, conj, a, "=", b } compiles to a TDUP of a template whose array part ends before slot 5
-- (only "=" is a constant), so the fifth store rehashed the node on every where() (callgrind:
-- one lj_tab_newkey + rehashtab + lj_tab_resize per condition, ~500 instructions).
local function cmp_node(conj, a, op, b)
  local t = tnew(5, 0)
  t[1], t[2], t[3], t[4], t[5] = CMP, conj, a, op, b
  return t
end

-- The condition list of slot, made when missing; w1 (0: none) is the slot of the inline
-- comparison (see the top), moved into the list as its first node.
local function cond_list(q, slot, w1)
  local list = q[slot]
  if list then return list end
  list = tnew(4, 0)
  if w1 ~= 0 then
    local col = q[w1]
    if col ~= nil then
      list[1] = cmp_node(0, col, q[w1 + 1], q[w1 + 2])
      q[w1], q[w1 + 1], q[w1 + 2] = nil, nil, nil
    end
  end
  q[slot] = list
  return list
end

local function push_cond(q, slot, w1, v)
  local list = cond_list(q, slot, w1)
  list[#list + 1] = v
  return q
end

-- Runs fn on a fresh collector and returns the conditions it added.
local function collect(fn)
  local g = setmetatable({ OP.SELECT }, Select)
  fn(g)
  if g[S_W1] ~= nil then return cond_list(g, S_WHERE, S_W1) end
  return g[S_WHERE]
end

function add_cond(q, slot, w1, conj, fname, n, a, b, c)
  if n == 1 then
    local ta = type(a)
    if ta == "function" then
      local list = collect(a)
      if list and #list > 0 then push_cond(q, slot, w1, { OP.GROUP, conj, list, false }) end
      return q
    elseif is_node(a) then
      return push_cond(q, slot, w1, { OP.EXPR, conj, a })
    elseif ta == "table" then
      local keys = sorted_keys(a, fname)
      if #keys == 0 then return q end
      if #keys == 1 or conj == 0 then
        for i = 1, #keys do
          local cnd = map_cond(keys[i], a[keys[i]])
          if i == 1 then cnd[2] = conj end
          push_cond(q, slot, w1, cnd)
        end
        return q
      end
      local items = {}
      for i = 1, #keys do items[i] = map_cond(keys[i], a[keys[i]]) end
      return push_cond(q, slot, w1, { OP.GROUP, conj, items, false })
    end
    error(fname .. ": expects (column, value), (column, op, value), a table or a function", 3)
  elseif n == 2 or n == 3 then
    -- The hot path: push and value() are written out (see Select:select for why).
    local op, v
    if n == 2 then
      if b == nil then b = NULL end
      op, v = "=", b
    else
      if type(b) ~= "string" then error(fname .. ": the operator must be a string", 3) end
      local lb = lower(b)
      if lb == "in" or lb == "not in" then
        if type(c) ~= "table" then error(fname .. ": '" .. b .. "' needs a list or a query", 3) end
        return push_cond(q, slot, w1, { IN, conj, a, c, lb == "not in" })
      end
      if c == nil then c = NULL end
      op, v = b, c
    end
    local list = q[slot]
    if not list then
      if w1 ~= 0 and conj == 0 and q[w1] == nil then
        -- The first comparison: inline (see the top).
        q[w1], q[w1 + 1], q[w1 + 2] = a, op, v
        return q
      end
      list = cond_list(q, slot, w1)
    end
    list[#list + 1] = cmp_node(conj, a, op, v)
    return q
  end
  error(fname .. ": too many arguments", 3)
end

local function check_col(col, fname)
  if type(col) ~= "string" and not is_node(col) then
    error(fname .. ": the column must be a string or an expression", 3)
  end
end

-- Installs where/or_where/where_in/... on a builder class whose conditions live at slot (w1: the
-- inline comparison's slot, 0 for none).
local function install_conditions(class, slot, w1, prefix)
  local function def(name, fn)
    local and_name, or_name = prefix .. name, "or_" .. prefix .. name
    class[and_name] = function(self, ...) return fn(self, 0, and_name, ...) end
    class[or_name] = function(self, ...) return fn(self, 1, or_name, ...) end
  end
  -- where/or_where themselves skip the generic wrapper: they are the hot path.
  local and_name, or_name = prefix, "or_" .. prefix
  class[and_name] = function(self, ...)
    return add_cond(self, slot, w1, 0, and_name, select("#", ...), ...)
  end
  class[or_name] = function(self, ...)
    return add_cond(self, slot, w1, 1, or_name, select("#", ...), ...)
  end
  def("_not", function(self, conj, fname, fn)
    if type(fn) ~= "function" then error(fname .. ": expects a function", 3) end
    local list = collect(fn)
    if list and #list > 0 then push_cond(self, slot, w1, { OP.GROUP, conj, list, true }) end
    return self
  end)
  if prefix ~= "where" then return end
  local function def_in(name, neg)
    def(name, function(self, conj, fname, col, list)
      if type(col) ~= "string" and not is_node(col) then
        error(fname .. ": the column must be a string or an expression", 3)
      end
      if type(list) ~= "table" then error(fname .. ": expects a list or a query", 3) end
      return push_cond(self, slot, w1, { IN, conj, col, list, neg })
    end)
  end
  def_in("_in", false)
  def_in("_not_in", true)
  local function def_between(name, neg)
    def(name, function(self, conj, fname, col, a, b)
      check_col(col, fname)
      return push_cond(self, slot, w1, { OP.BETWEEN, conj, col, value(a), value(b), neg })
    end)
  end
  def_between("_between", false)
  def_between("_not_between", true)
  local function def_null(name, neg)
    def(name, function(self, conj, fname, col)
      check_col(col, fname)
      return push_cond(self, slot, w1, { OP.NULL, conj, col, neg })
    end)
  end
  def_null("_null", false)
  def_null("_not_null", true)
  local function def_like(name, mode, neg)
    def(name, function(self, conj, fname, col, s)
      check_col(col, fname)
      if type(s) ~= "string" and type(s) ~= "number" then error(fname .. ": expects a string", 3) end
      return push_cond(self, slot, w1, { OP.LIKE, conj, col, s, mode, neg })
    end)
  end
  def_like("_contains", 1, false)
  def_like("_starts_with", 2, false)
  def_like("_ends_with", 3, false)
  def_like("_not_contains", 1, true)
  local function def_exists(name, neg)
    def(name, function(self, conj, fname, q)
      if type(q) ~= "table" or q[1] ~= OP.SELECT then error(fname .. ": expects a select query", 3) end
      local e = expr.exists(q)
      if neg then return push_cond(self, slot, w1, { OP.GROUP, conj, { { OP.EXPR, 0, e } }, true }) end
      return push_cond(self, slot, w1, { OP.EXPR, conj, e })
    end)
  end
  def_exists("_exists", false)
  def_exists("_not_exists", true)
end

install_conditions(Select, S_WHERE, S_W1, "where")
install_conditions(Select, S_HAVING, 0, "having")
install_conditions(Update, U_WHERE, U_W1, "where")
install_conditions(Delete, D_WHERE, D_W1, "where")

-- where() once more, with its slots as literals: install_conditions' closures share one
-- prototype, so LuaJIT reads their slot from an upvalue at run time, and a store at a variable
-- index keeps the builder from being sunk (every later load from it is then a real one too).
function Select:where(...) return add_cond(self, S_WHERE, S_W1, 0, "where", select("#", ...), ...) end
function Update:where(...) return add_cond(self, U_WHERE, U_W1, 0, "where", select("#", ...), ...) end
function Delete:where(...) return add_cond(self, D_WHERE, D_W1, 0, "where", select("#", ...), ...) end

-- --- common pieces ------------------------------------------------------------------------

local function with(slot, recursive, fname)
  return function(self, name, q, columns)
    if type(name) ~= "string" then error(fname .. ": the name must be a string", 2) end
    if type(q) ~= "table" or q[1] ~= OP.SELECT then error(fname .. ": expects a select query", 2) end
    if columns ~= nil and type(columns) ~= "table" then error(fname .. ": columns must be a list", 2) end
    return push(self, slot, { name, q, columns, recursive })
  end
end

local function returning(slot)
  return function(self, ...)
    for i = 1, select("#", ...) do
      local c = select(i, ...)
      check_col(c, "returning")
      push(self, slot, c)
    end
    return self
  end
end

-- --- select -------------------------------------------------------------------------------

-- The table is made with room for every slot, so filling them later never resizes it: a
-- constructor with nils up to the last slot, then a literal false in slot 19 (LuaJIT sizes the
-- array part of the constructor's template by its positions), not table.new, which LuaJIT
-- compiles to a call it cannot sink (see the top). The false, a constant past the last slot,
-- keeps that size in compiled bytecode (build/bc): LuaJIT's bytecode writer drops a template's
-- trailing nils, and the builder made from the shrunk template grew slot by slot through its
-- hash part and was never sunk (296 B and ~2,900 instructions more a first(), callgrind and
-- jit.dump). Slot 19 is read by nothing.
function M.select(db, from)
  local model = from
  from = model_table(from)
  if from ~= nil and type(from) ~= "string" then check_table(from, "from") end
  local q = { [DB] = db, SELECT, from, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
    nil, nil, nil, nil, false }
  if model ~= from then q._model = model end
  return setmetatable(q, Select)
end

local function select_many(self, ...)
  for i = 1, select("#", ...) do
    local c = select(i, ...)
    if c == nil then error("select: column " .. i .. " is nil", 3) end
    push(self, S_COLUMNS, c)
  end
  return self
end

-- One or two columns without a loop: a loop here would stop LuaJIT from compiling the
-- caller's loop in one trace (the common select("id", "email") is the hot case).
function Select:select(...)
  local n = select("#", ...)
  if n > 2 then return select_many(self, ...) end
  if n == 0 then return self end
  local a, b = ...
  if a == nil then error("select: column 1 is nil", 2) end
  if n == 2 and b == nil then error("select: column 2 is nil", 2) end
  local list = self[S_COLUMNS]
  if not list then
    self[S_COLUMNS] = n == 2 and { a, b } or { a }
    return self
  end
  local len = #list
  list[len + 1] = a
  if n == 2 then list[len + 2] = b end
  return self
end

function Select:distinct()
  self[S_DISTINCT] = true
  return self
end

-- DISTINCT ON (cols): the first row of each group of equal cols, in order_by's order
-- (PostgreSQL; sqlite refuses it when rendering).
function Select:distinct_on(...)
  local n = select("#", ...)
  if n == 0 then error("distinct_on: expects at least one column", 2) end
  local list = {}
  for i = 1, n do
    local c = select(i, ...)
    check_col(c, "distinct_on")
    list[i] = c
  end
  self[S_DISTINCT] = list
  return self
end

local function join(kind, fname)
  return function(self, t, left, op, right)
    t = model_table(t)
    check_table(t, fname)
    if kind == 5 then return push(self, S_JOINS, { kind, t }) end
    if right == nil then op, right = "=", op end
    if left == nil or right == nil then error(fname .. ": expects (table, left, [op,] right)", 2) end
    return push(self, S_JOINS, { kind, t, left, op, right })
  end
end
Select.join = join(1, "join")
Select.inner_join = Select.join
Select.left_join = join(2, "left_join")
Select.right_join = join(3, "right_join")
Select.full_join = join(4, "full_join")
Select.cross_join = join(5, "cross_join")

function Select:group_by(...)
  for i = 1, select("#", ...) do
    local c = select(i, ...)
    check_col(c, "group_by")
    push(self, S_GROUP, c)
  end
  return self
end

function Select:order_by(col, dir)
  if col == nil then error("order_by: expects a column", 2) end
  local list = self[S_ORDER]
  if not list then
    list = tnew(4, 0)
    self[S_ORDER] = list
  end
  if type(col) == "string" then
    -- The common case, written out (see Select:select); a bad direction raises in order_add.
    local desc = 0
    if dir ~= nil then
      local d = type(dir) == "string" and lower(dir)
      if d == "desc" then
        desc = 1
      elseif d ~= "asc" then
        order_add(list, col, dir, 2)
      end
    end
    local len = #list
    list[len + 1], list[len + 2] = col, desc
  elseif dir ~= nil and (type(col) ~= "table" or is_node(col)) then
    order_add(list, col, dir, 2)
  else
    order_list(col, 2, list)
  end
  return self
end

local function count_arg(n, fname)
  if type(n) ~= "number" or n < 0 or n % 1 ~= 0 then
    error(fname .. ": expects a non-negative integer, got " .. tostring(n), 3)
  end
  return n
end

function Select:limit(n)
  if type(n) ~= "number" or n < 0 or n % 1 ~= 0 then count_arg(n, "limit") end
  self[S_LIMIT] = n
  return self
end

function Select:offset(n)
  self[S_OFFSET] = count_arg(n, "offset")
  return self
end

Select.with = with(S_CTES, false, "with")
Select.with_recursive = with(S_CTES, true, "with_recursive")

local function setop(kind, fname)
  return function(self, q)
    if type(q) ~= "table" or q[1] ~= OP.SELECT then error(fname .. ": expects a select query", 2) end
    push(self, S_SETOPS, kind)
    return push(self, S_SETOPS, q)
  end
end
Select.union = setop(1, "union")
Select.union_all = setop(2, "union_all")
Select.intersect = setop(3, "intersect")
Select.except = setop(4, "except")

function Select:for_update()
  self[S_LOCK] = 1
  return self
end

function Select:for_share()
  self[S_LOCK] = 2
  return self
end

function Select:skip_locked()
  self[S_WAIT] = 1
  return self
end

function Select:nowait()
  self[S_WAIT] = 2
  return self
end

-- A shallow copy: chain methods on the copy do not change the original's lists.
local function clone(self)
  local c = {}
  for k, v in pairs(self) do
    if type(v) == "table" and not getmetatable(v) and k ~= DB then
      local list = {}
      for i = 1, #v do list[i] = v[i] end
      v = list
    end
    c[k] = v
  end
  return setmetatable(c, getmetatable(self))
end
Select.clone, Insert.clone, Update.clone, Delete.clone = clone, clone, clone, clone

-- --- insert -------------------------------------------------------------------------------

function M.insert(db, t)
  t = model_table(t)
  check_table(t, "insert_into")
  return setmetatable({ [DB] = db, OP.INSERT, t }, Insert)
end

-- values{...} (one row) or values{ {...}, {...} } (one multi-row INSERT). Every row must name
-- the same columns; use db.null for an explicit NULL.
function Insert:values(rows)
  if type(rows) ~= "table" or is_node(rows) then error("values: expects a row or a list of rows", 2) end
  if rows[1] == nil then rows = { rows } end
  local cols = self[I_COLUMNS]
  local list = self[I_ROWS] or {}
  for r = 1, #rows do
    local row = rows[r]
    if type(row) ~= "table" then error("values: row " .. r .. " is not a table", 2) end
    if not cols then cols = sorted_keys(row, "values") end
    local vals, seen = {}, 0
    for i = 1, #cols do
      local v = row[cols[i]]
      if v == nil then
        error("values: row " .. r .. " has no '" .. cols[i] .. "' (rows must have the same columns)", 2)
      end
      vals[i] = v
    end
    for _ in pairs(row) do seen = seen + 1 end
    if seen ~= #cols then error("values: row " .. r .. " has columns the first row does not have", 2) end
    list[#list + 1] = vals
  end
  self[I_COLUMNS], self[I_ROWS] = cols, list
  return self
end

function Insert:on_conflict(...)
  local list = {}
  for i = 1, select("#", ...) do
    local c = select(i, ...)
    check_col(c, "on_conflict")
    list[i] = c
  end
  self[I_CONFLICT] = list
  return self
end

function Insert:do_nothing()
  if not self[I_CONFLICT] then error("do_nothing: call on_conflict first", 2) end
  self[I_ACTION] = 1
  return self
end

-- A set list from a map {col = value} (sorted) and/or a list of columns meaning excluded.col.
local function set_list(t, fname, into)
  if type(t) ~= "table" or is_node(t) then error(fname .. ": expects a table", 3) end
  local out = into or {}
  for i = 1, #t do
    if type(t[i]) ~= "string" then error(fname .. ": list entries must be column names", 3) end
    out[#out + 1] = t[i]
    out[#out + 1] = expr.excluded(t[i])
  end
  local keys = {}
  for k in pairs(t) do
    if type(k) == "string" then keys[#keys + 1] = k
    elseif type(k) ~= "number" then error(fname .. ": keys must be column names", 3) end
  end
  sort(keys)
  for i = 1, #keys do
    out[#out + 1] = keys[i]
    out[#out + 1] = value(t[keys[i]])
  end
  return out
end

function Insert:do_update(t)
  if not self[I_CONFLICT] then error("do_update: call on_conflict first", 2) end
  self[I_ACTION] = 2
  self[I_SET] = set_list(t, "do_update")
  if #self[I_SET] == 0 then error("do_update: nothing to set", 2) end
  return self
end

Insert.returning = returning(I_RETURNING)
Insert.with = with(I_CTES, false, "with")
Insert.with_recursive = with(I_CTES, true, "with_recursive")

-- --- update -------------------------------------------------------------------------------

function M.update(db, t)
  t = model_table(t)
  check_table(t, "update")
  return setmetatable({ [DB] = db, OP.UPDATE, t }, Update)
end

-- set{ col = value, ... } (sorted by column) or set(col, value).
function Update:set(a, b)
  if type(a) == "string" then
    local list = self[U_SET] or {}
    list[#list + 1] = a
    list[#list + 1] = value(b)
    self[U_SET] = list
    return self
  end
  self[U_SET] = set_list(a, "set", self[U_SET])
  return self
end

Update.returning = returning(U_RETURNING)
Update.with = with(U_CTES, false, "with")
Update.with_recursive = with(U_CTES, true, "with_recursive")

-- --- delete -------------------------------------------------------------------------------

function M.delete(db, t)
  t = model_table(t)
  check_table(t, "delete_from")
  return setmetatable({ [DB] = db, OP.DELETE, t }, Delete)
end

Delete.returning = returning(D_RETURNING)
Delete.with = with(D_CTES, false, "with")
Delete.with_recursive = with(D_CTES, true, "with_recursive")

-- --- tenant scoping (zever.tenant) -----------------------------------------------------------
-- q:for_tenant(tenant[, column]): select, update and delete only the tenant's rows (WHERE
-- column = id, ANDed with the other conditions); insert writes the id into the column of every
-- row given so far (call it after values). tenant is an id or a table with .id (req.tenant);
-- column defaults to "tenant_id". A nil tenant raises: an unscoped query is written as one.
local function tenant_of(t)
  if type(t) == "table" then t = t.id end
  if type(t) ~= "string" and type(t) ~= "number" then
    error("for_tenant: expects a tenant id (a string or number) or a table with id", 3)
  end
  return t
end

local function scope_where(self, t, column)
  return self:where(column or "tenant_id", tenant_of(t))
end
Select.for_tenant, Update.for_tenant, Delete.for_tenant = scope_where, scope_where, scope_where

function Insert:for_tenant(t, column)
  local id, col = tenant_of(t), column or "tenant_id"
  local cols, rows = self[I_COLUMNS], self[I_ROWS]
  if not cols then error("for_tenant: call it after values", 2) end
  local at
  for i = 1, #cols do if cols[i] == col then at = i end end
  for r = 1, #rows do
    if at and rows[r][at] ~= id then
      error("for_tenant: row " .. r .. " names another tenant in '" .. col .. "'", 2)
    end
    if not at then rows[r][#cols + 1] = id end
  end
  if not at then cols[#cols + 1] = col end
  return self
end

require("zever.db.query_run").install(M)

return M
