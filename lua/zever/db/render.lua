-- zever.db.render: renders builders through the C renderer (zever.sql, l_sql.c), memoizing the
-- SQL text by query *shape*. Two selects that differ only in their bound values render to the
-- same text, so the second one need not cross into C at all: a walk in Lua (which LuaJIT
-- compiles, unlike the classic C API the renderer uses) collects the binds in render order
-- while it descends a trie keyed by everything that decides the text.
--
--   trie (one root per dialect):  root -"users"-> . -2-> . -"id"-> . -"email"-> ... -> leaf
--   leaf[LEAF] = the SQL text, or false when this shape must always go through C
--
-- Tokens are the table name, list lengths, identifiers, opcodes, conjunctions, operator strings,
-- NULL-ness of compared values and flags, in the order the renderer reads them; every list is
-- prefixed by its length, so a token path names exactly one shape. A value never becomes a
-- token, except for being NULL or not (= NULL renders IS NULL).
--
-- Only the shapes the builder makes for everyday selects are walked: a string table, string
-- columns, joins on string columns, where with =/</in/between/null/groups over plain values,
-- order by strings, limit and offset; and updates of a string table setting columns to plain
-- values with such a where (an update's path starts with its opcode, a number, where a
-- select's starts with its table, a string). Anything else (expressions, subqueries, LIKE,
-- group by, CTEs, returning, inserts, deletes) goes to C every time. A new leaf is filled by
-- one C render, and is kept only if C produced the same binds as the walk; errors are never
-- cached. The trie is bounded: past MAX_NODES it is dropped and starts again.
--
-- It must not decide SQL text itself: every text it returns was produced by zever.sql.

local sql = require "zever.sql"

local OP, NULL = sql.op, sql.null
local c_render = sql.render
local type, getmetatable, rawequal = type, getmetatable, rawequal
local tnew = require "table.new"
local clear = require "table.clear"

local SELECT = OP.SELECT
-- The select's slots (lx_sql.h's ZV_SQL_SELECT_SLOTS, exported as sql.SLOT.select): literals, so
-- that LuaJIT folds them into the walk's trace (names loaded from sql.SLOT cost a render about
-- 3% more instructions, callgrind), checked against sql.SLOT when this module loads.
local S_FROM, S_COLUMNS, S_DISTINCT, S_JOINS, S_WHERE, S_GROUP, S_HAVING, S_ORDER = 2, 3, 4, 5,
  6, 7, 8, 9
local S_LIMIT, S_OFFSET, S_CTES, S_SETOPS, S_LOCK, S_WAIT, S_W1 = 10, 11, 12, 13, 14, 15, 16
sql.check_slots("select", { from = S_FROM, columns = S_COLUMNS, distinct = S_DISTINCT,
  joins = S_JOINS, where = S_WHERE, group = S_GROUP, having = S_HAVING, order = S_ORDER,
  limit = S_LIMIT, offset = S_OFFSET, ctes = S_CTES, setops = S_SETOPS, lock = S_LOCK,
  wait = S_WAIT, w1col = S_W1, w1op = S_W1 + 1, w1val = S_W1 + 2 })
local CMP, GROUP, IN, BETWEEN, ISNULL = OP.CMP, OP.GROUP, OP.IN, OP.BETWEEN, OP.NULL
local UPDATE = OP.UPDATE
local U_TABLE, U_SET, U_WHERE, U_RETURNING, U_CTES, U_W1 = 2, 3, 4, 5, 6, 7
sql.check_slots("update", { set = U_SET, where = U_WHERE, returning = U_RETURNING,
  ctes = U_CTES, w1col = U_W1, w1op = U_W1 + 1, w1val = U_W1 + 2 })

local MAX_NODES = 20000
local LEAF = {} -- the leaf's key: no token is a table

local M = {}

local roots, nodes

local function reset()
  roots = { sqlite = {}, postgres = {}, postgresql = {} }
  nodes = 0
end
reset()

-- The child of node under token k, made when missing. The walk inlines the lookup as
-- (node[k] or new(node, k)): a call on every step would become a trace of its own before the
-- caller's loop does, and its side exits would keep LuaJIT from compiling the caller.
local function new(node, k)
  nodes = nodes + 1
  local nx = {}
  node[k] = nx
  return nx
end

-- A value the renderer binds as it is, or NULL; nil for anything it would not bind plainly
-- (tables, nodes, functions, full userdata), which sends the query to C.
-- (Type first: a NULL pointer cdata equals nil under ==, but the renderer binds it.)
local function plain(v)
  local t = type(v)
  if t == "number" or t == "string" or t == "boolean" or t == "cdata" then return v end
  if t == "nil" or (t == "userdata" and rawequal(v, NULL)) then return NULL end
  return nil
end

-- A condition list (where, or a group's list): its length, then each condition. Returns the
-- next trie node and bind count, or nil. (One function with the cases inline: see new().)
local function conds(node, list, binds, nb)
  local n = #list
  if n == 0 then return nil end -- an empty group is an error; let C say so
  node = node[n] or new(node, n)
  for i = 1, n do
    local c = list[i]
    if type(c) ~= "table" then return nil end
    local op, conj, lhs = c[1], c[2], c[3]
    if conj ~= 0 and conj ~= 1 then return nil end
    node = node[op] or new(node, op)
    node = node[conj] or new(node, conj)
    if op == GROUP then
      local neg = c[4]
      if type(lhs) ~= "table" or (neg ~= true and neg ~= false) then return nil end
      node, nb = conds(node[neg] or new(node, neg), lhs, binds, nb)
      if not node then return nil end
    else
      if type(lhs) ~= "string" then return nil end
      node = node[lhs] or new(node, lhs)
      if op == CMP then
        local o, v = c[4], c[5]
        if type(o) ~= "string" then return nil end
        node = node[o] or new(node, o)
        local t = type(v)
        if t == "number" or t == "string" or t == "boolean" or t == "cdata" then
          nb = nb + 1
          binds[nb] = v
          node = node[false] or new(node, false)
        elseif t == "nil" or (t == "userdata" and rawequal(v, NULL)) then
          node = node[true] or new(node, true)
        else
          return nil
        end
      elseif op == IN then
        local vals, neg = c[4], c[5]
        if type(vals) ~= "table" or getmetatable(vals) or (neg ~= true and neg ~= false) then
          return nil
        end
        local m = #vals
        node = node[neg] or new(node, neg)
        node = node[m] or new(node, m)
        for k = 1, m do
          local v = vals[k]
          local t = type(v)
          if t ~= "number" and t ~= "string" and t ~= "boolean" and t ~= "cdata" then
            v = plain(v)
            if v == nil then return nil end
          end
          nb = nb + 1
          binds[nb] = v
        end
      elseif op == ISNULL then
        local neg = c[4]
        if neg ~= true and neg ~= false then return nil end
        node = node[neg] or new(node, neg)
      elseif op == BETWEEN then
        local a, b, neg = plain(c[4]), plain(c[5]), c[6]
        if a == nil or b == nil or (neg ~= true and neg ~= false) then return nil end
        binds[nb + 1], binds[nb + 2] = a, b
        nb = nb + 2
        node = node[neg] or new(node, neg)
      else
        return nil
      end
    end
  end
  return node, nb
end

-- The where of a select or update at slot, or its inline comparison at w1 (zever.db.query: the
-- builder's only comparison kept in its own slots), walked as the one-condition list it stands
-- for (so both forms share a leaf: the renderer writes the same text for them). Returns the
-- next node and bind count, or nil.
local function where_of(q, slot, w1, node, binds, nb)
  local where = q[slot]
  if where ~= nil then
    if type(where) ~= "table" then return nil end
    if where[1] == nil and #where == 0 then return node[0] or new(node, 0), nb end
    return conds(node, where, binds, nb)
  end
  local lhs = q[w1]
  if lhs == nil then return node[0] or new(node, 0), nb end
  local o, v = q[w1 + 1], q[w1 + 2]
  if type(lhs) ~= "string" or type(o) ~= "string" then return nil end
  node = node[1] or new(node, 1)
  node = node[CMP] or new(node, CMP)
  node = node[0] or new(node, 0)
  node = node[lhs] or new(node, lhs)
  node = node[o] or new(node, o)
  local t = type(v)
  if t == "number" or t == "string" or t == "boolean" or t == "cdata" then
    nb = nb + 1
    binds[nb] = v
    return node[false] or new(node, false), nb
  elseif t == "nil" or (t == "userdata" and rawequal(v, NULL)) then
    return node[true] or new(node, true), nb
  end
  return nil
end

-- A select of the supported shape: returns its leaf node and bind count, or nil.
local function walk(q, node, binds)
  local from, cols, distinct, joins, order = q[S_FROM], q[S_COLUMNS], q[S_DISTINCT],
    q[S_JOINS], q[S_ORDER]
  if type(from) ~= "string" or q[S_GROUP] ~= nil or q[S_HAVING] ~= nil or q[S_CTES] ~= nil
    or q[S_SETOPS] ~= nil or q[S_LOCK] ~= nil or q[S_WAIT] ~= nil then
    return nil
  end
  if distinct ~= nil and distinct ~= true and distinct ~= false then return nil end
  node = node[from] or new(node, from)
  distinct = distinct == true
  node = node[distinct] or new(node, distinct)
  local nb = 0
  if cols ~= nil then
    if type(cols) ~= "table" then return nil end
    local n = #cols
    node = node[n] or new(node, n)
    for i = 1, n do
      local col = cols[i]
      if type(col) ~= "string" then return nil end
      node = node[col] or new(node, col)
    end
  else
    node = node[0] or new(node, 0)
  end
  if joins ~= nil then
    if type(joins) ~= "table" then return nil end
    local n = #joins
    node = node[n] or new(node, n)
    for i = 1, n do
      local j = joins[i]
      if type(j) ~= "table" then return nil end
      local kind, t, lhs, op, rhs = j[1], j[2], j[3], j[4], j[5]
      if type(kind) ~= "number" or type(t) ~= "string" then return nil end
      node = node[kind] or new(node, kind)
      node = node[t] or new(node, t)
      if kind ~= 5 then
        if type(lhs) ~= "string" or type(op) ~= "string" or type(rhs) ~= "string" then return nil end
        node = node[lhs] or new(node, lhs)
        node = node[op] or new(node, op)
        node = node[rhs] or new(node, rhs)
      end
    end
  else
    node = node[0] or new(node, 0)
  end
  node, nb = where_of(q, S_WHERE, S_W1, node, binds, nb)
  if not node then return nil end
  if order ~= nil then
    if type(order) ~= "table" then return nil end
    local n = #order
    node = node[n] or new(node, n)
    for i = 1, n - 1, 2 do
      local e, desc = order[i], order[i + 1]
      if type(e) ~= "string" or (desc ~= 0 and desc ~= 1) then return nil end
      node = node[e] or new(node, e)
      node = node[desc] or new(node, desc)
    end
  else
    node = node[0] or new(node, 0)
  end
  local limit, offset = q[S_LIMIT], q[S_OFFSET]
  local tail = 0
  if limit == false then limit = nil end
  if offset == false then offset = nil end
  if limit == true then
    -- first()'s LIMIT 1, which the renderer writes out (zever.db.query_run): nothing to bind.
    limit, tail = nil, 4
  end
  if limit ~= nil then
    limit = plain(limit)
    if limit == nil then return nil end
    nb = nb + 1
    binds[nb] = limit
  end
  if offset ~= nil then
    offset = plain(offset)
    if offset == nil then return nil end
    nb = nb + 1
    binds[nb] = offset
  end
  tail = tail + (limit ~= nil and 1 or 0) + (offset ~= nil and 2 or 0)
  return node[tail] or new(node, tail), nb
end

-- An update of the supported shape (UPDATE t SET col = value, ... [WHERE ...]): its leaf node
-- and bind count (the set values, then the where's, the renderer's order), or nil.
local function walk_update(q, node, binds)
  local t, set = q[U_TABLE], q[U_SET]
  if type(t) ~= "string" or type(set) ~= "table" or q[U_RETURNING] ~= nil
    or q[U_CTES] ~= nil then
    return nil
  end
  local n = #set
  if n == 0 or n % 2 == 1 then return nil end
  node = node[UPDATE] or new(node, UPDATE)
  node = node[t] or new(node, t)
  node = node[n] or new(node, n)
  local nb = 0
  for i = 1, n - 1, 2 do
    local col, v = set[i], set[i + 1]
    local tv = type(v)
    if type(col) ~= "string" or (tv ~= "number" and tv ~= "string" and tv ~= "boolean"
      and tv ~= "cdata") then
      return nil
    end
    node = node[col] or new(node, col)
    nb = nb + 1
    binds[nb] = v
  end
  return where_of(q, U_WHERE, U_W1, node, binds, nb)
end

-- Fills a new leaf from one C render; keeps the text only when C bound what the walk bound.
local function fill(leaf, q, dialect, binds, nb)
  local text, cbinds = c_render(q, dialect)
  if not text then return nil, cbinds end
  local same = #cbinds == nb
  for i = 1, nb do
    local a, b = cbinds[i], binds[i]
    if not (a == b or (a ~= a and b ~= b)) then same = false end
  end
  leaf[LEAF] = same and text or false
  return text, cbinds
end

-- The walk into binds: sql, binds, nb when the trie had the text (binds filled by the walk),
-- else what C's render returns (sql and a list of its own, or nil, message).
local function render_into(q, dialect, binds)
  local root = roots[dialect]
  local op = q[1]
  if root == nil or (op ~= SELECT and op ~= UPDATE) then return c_render(q, dialect) end
  if nodes > MAX_NODES then
    reset()
    root = roots[dialect]
  end
  local leaf, nb
  if op == SELECT then
    leaf, nb = walk(q, root, binds)
  else
    leaf, nb = walk_update(q, root, binds)
  end
  if not leaf then return c_render(q, dialect) end
  local text = leaf[LEAF]
  if text then return text, binds, nb end
  if text == false then return c_render(q, dialect) end
  return fill(leaf, q, dialect, binds, nb)
end

-- render(q, dialect) -> sql, binds | nil, message: the contract of zever.sql's render (which
-- also raises for an unknown dialect).
function M.render(q, dialect)
  local text, binds = render_into(q, dialect, tnew(8, 0))
  return text, binds
end

-- One list the walk fills instead of a new one, for the terminals that hand the binds straight
-- to the adapter (Select:first and all): a render then allocates nothing. It is taken from
-- render_shared to release; a render that finds it taken (the adapter re-entered, or waiting
-- for a pool's connection while another coroutine renders; or a caller that raised before
-- releasing it) uses a list of its own, as render does.
local shared, shared_taken = tnew(8, 0), false

-- render_shared(q, dialect) -> sql, binds, nb, shared | nil, message: as render, plus the
-- number of binds and whether binds is the shared list, to be given back with release(nb)
-- once the adapter has run (before anything that can raise).
function M.render_shared(q, dialect)
  if shared_taken then
    local text, binds = render_into(q, dialect, tnew(8, 0))
    if not text then return nil, binds end
    return text, binds, #binds, false
  end
  shared_taken = true
  local text, binds, nb = render_into(q, dialect, shared)
  if binds == shared then return text, binds, nb, true end
  -- C rendered it (or failed): its own list; the walk may have written into the shared one.
  clear(shared)
  shared_taken = false
  if not text then return nil, binds end
  return text, binds, #binds, false
end

-- Gives the shared list back, emptied (it must not keep values alive).
function M.release(nb)
  local s = shared
  for i = 1, nb do s[i] = nil end
  shared_taken = false
end

-- The number of trie nodes (for specs and benchmarks) and a way to empty the trie.
function M.size()
  return nodes
end

M.reset = reset

return M
