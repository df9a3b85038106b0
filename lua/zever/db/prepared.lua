-- zever.db.prepared: a builder query rendered once and run many times with new values (the
-- prepared statement of Go's database/sql, or what Rails' statement cache does for a query
-- shape). The placeholders are db.param() values, given in the builder where a value goes:
--
--   local by_id = db:from("worlds"):where("id", db.param()):prepare()
--   local row = by_id:first(42)            -- SELECT ... WHERE "id" = ? LIMIT 1  (42)
--   local rows = by_id:all(42)
--   local set = db:update("worlds"):set("n", db.param()):where("id", db.param()):prepare()
--   set:exec(7, 42)                        -- the number of changed rows
--   db:transaction(function(tx) set:on(tx):exec(7, 42) end)
--
-- Values are given in the order their placeholders appear in the SQL text (the order the
-- builder's clauses render: an update's SET before its WHERE, a select's WHERE before LIMIT).
-- A nil value binds NULL (so `= ?` matches nothing: where(col, nil) without a placeholder
-- renders IS NULL instead).
-- A call renders nothing, walks no AST and allocates no bind list: the SQL text was rendered at
-- prepare() (for first(), a second text with LIMIT 1, as Select:first renders it), the other
-- bound values (constants given to the builder) sit in a template list, and a call writes its
-- values into that list's placeholder positions, hands it to the adapter and puts the
-- placeholders back (so the list keeps no value alive). A call that finds the list in use (a
-- pool's query waiting for a connection while another coroutine runs the same query) copies it.
-- A prepared query keeps the text, not the database's statement. It asks the adapter to hold
-- the statement of each text when the adapter can (conn:hold: SQLite keeps it prepared outside
-- its statement cache, so a call checks nothing out); otherwise the adapter's statement cache
-- keeps it (SQLite: by the interned text, no hashing; PostgreSQL: its named statements).
--
-- The builder's semantics are kept: the SQL is what the builder renders for the same query
-- with the values in place, the results and errors are the builder's (db errors raise, a soft
-- handle returns nil, err). Queries with preload() cannot be prepared (they run several
-- statements), nor inserts and deletes (not yet needed).
-- A db.param() anywhere else (a query run without prepare, a raw db:first) is a value the
-- adapters refuse to bind: it raises a db error.

local ffi = require "ffi"
local NULL = require("zever.sql").null

local type, select, error, setmetatable, rawequal = type, select, error, setmetatable, rawequal
local unpack = unpack

local M = {}

-- The placeholder: one cdata object (the renderer binds cdata as it is, and compares nothing:
-- the positions are found by identity once, at prepare()).
local PARAM = ffi.new("struct { uint8_t zever_db_param; }")
M.PARAM = PARAM

function M.param()
  return PARAM
end

local MAX = 8 -- values a call takes without a vararg table

local Prepared = {}
Prepared.__index = Prepared
M.Prepared = Prepared

-- One rendered form: text, the template list, its length, and the placeholder positions.
local function form(text, binds)
  local n = #binds
  local pos, np = {}, 0
  for i = 1, n do
    if rawequal(binds[i], PARAM) then
      np = np + 1
      pos[np] = i
    end
  end
  return { text = text, list = binds, n = n, pos = pos, np = np, busy = false }
end

-- The checkers of the adapter's answers, by adapter call: zever.db sets them (results.first(db,
-- text, own, f, row, code, message, fields) puts f's list back, then raises or returns).
local results = {}
M.results = results

-- new(db, kind, text, binds[, ftext, fbinds]) -> a prepared query. kind: "select" or
-- "update"; ftext/fbinds the select's LIMIT 1 form (first()).
function M.new(db, kind, text, binds, ftext, fbinds)
  local conn = db.conn
  if conn and conn.hold then
    conn:hold(text)
    if ftext then conn:hold(ftext) end
  end
  local all = form(text, binds)
  local p = { _db = db, kind = kind, many = all, np = all.np }
  if ftext then
    p.one = form(ftext, fbinds)
    if p.one.np ~= all.np then error("prepare: LIMIT cannot be a db.param()", 3) end
  end
  return setmetatable(p, Prepared)
end

-- The list of f with the values a1.. (nv of them; more than MAX come as the table more) in
-- place, and whether it is f's own list (to be put back by restore).
local function fill(f, nv, more, a1, a2, a3, a4, a5, a6, a7, a8)
  local list, own = f.list, true
  if f.busy then
    list, own = { unpack(f.list, 1, f.n) }, false
  else
    f.busy = true
  end
  local pos = f.pos
  if more then
    for i = 1, nv do
      local v = more[i]
      if v == nil then v = NULL end
      list[pos[i]] = v
    end
  elseif nv >= 1 then
    if a1 == nil then a1 = NULL end
    list[pos[1]] = a1
    if nv >= 2 then
      if a2 == nil then a2 = NULL end
      list[pos[2]] = a2
      if nv >= 3 then
        if a3 == nil then a3 = NULL end
        if a4 == nil then a4 = NULL end
        if a5 == nil then a5 = NULL end
        if a6 == nil then a6 = NULL end
        if a7 == nil then a7 = NULL end
        if a8 == nil then a8 = NULL end
        list[pos[3]] = a3
        if nv >= 4 then list[pos[4]] = a4 end
        if nv >= 5 then list[pos[5]] = a5 end
        if nv >= 6 then list[pos[6]] = a6 end
        if nv >= 7 then list[pos[7]] = a7 end
        if nv >= 8 then list[pos[8]] = a8 end
      end
    end
  end
  return list, own
end

local function restore(f, own)
  if not own then return end
  local list, pos = f.list, f.pos
  for i = 1, f.np do list[pos[i]] = PARAM end
  f.busy = false
end

local function check_count(p, nv, fname)
  if nv ~= p.np then
    error(fname .. ": this prepared query takes " .. p.np .. " value(s), got " .. nv, 3)
  end
end

-- Runs form f of p through the adapter call name ("first", "query", "exec") and zever.db's
-- checker of that name (which puts the list back, then raises the db error or returns nil, err
-- on a soft handle). Not a vararg function (see zever.db's *_values: LuaJIT compiles the
-- return to a vararg frame badly); the methods below only tail-call it.
local function run(p, f, name, nv, more, a1, a2, a3, a4, a5, a6, a7, a8)
  local db = p._db
  if db.finished then error("db: this transaction has finished; use the outer handle", 3) end
  local list, own = fill(f, nv, more, a1, a2, a3, a4, a5, a6, a7, a8)
  local conn, text = db.conn, f.text
  return results[name](db, text, own, f, conn[name](conn, text, list, f.n))
end

-- The row of the first result (or nil), as Select:first.
function Prepared:first(...)
  if self.kind ~= "select" then error("first: a prepared " .. self.kind .. " runs with exec()", 2) end
  local nv = select("#", ...)
  if nv ~= self.np then check_count(self, nv, "first") end
  if nv > MAX then return run(self, self.one, "first", nv, { ... }) end
  return run(self, self.one, "first", nv, nil, ...)
end

-- Every row (a json.array), as Select:all.
function Prepared:all(...)
  if self.kind ~= "select" then error("all: a prepared " .. self.kind .. " runs with exec()", 2) end
  local nv = select("#", ...)
  if nv ~= self.np then check_count(self, nv, "all") end
  if nv > MAX then return run(self, self.many, "query", nv, { ... }) end
  return run(self, self.many, "query", nv, nil, ...)
end

-- The number of changed rows, as Update:exec.
function Prepared:exec(...)
  if self.kind ~= "update" then error("exec: a prepared select runs with first() or all()", 2) end
  local nv = select("#", ...)
  if nv ~= self.np then check_count(self, nv, "exec") end
  if nv > MAX then return run(self, self.many, "exec", nv, { ... }) end
  return run(self, self.many, "exec", nv, nil, ...)
end

-- The same prepared query on another handle of its database (a transaction's tx, a try
-- handle): an object sharing the rendered forms' text (not their lists), kept per handle until
-- the collector takes it (a db reuses its transaction handles, so a transaction per request
-- asks for the same one and mostly finds it). Weak keys and values: the object refers to its
-- handle, and LuaJIT's weak tables are no ephemerons (weak keys alone would keep both).
local weak = { __mode = "kv" }

-- A rendered form with its own list of binds (the text shared). A function of the module, not a
-- closure made in on(): making a closure (FNEW) is not compiled, and on() runs inside a request's
-- trace whenever the collector has taken the object it kept (TFB /updates: `set:on(tx)`, "NYI:
-- bytecode 50 at prepared.lua:195" aborted the request's trace).
local function copy_form(f)
  if not f then return nil end
  local c = form(f.text, { unpack(f.list, 1, f.n) })
  for i = 1, c.np do c.list[c.pos[i]] = PARAM end
  return c
end

function Prepared:on(h)
  local seen = self._on
  local p = seen and seen[h]
  if p then return p end
  if type(h) ~= "table" or h.conn == nil then error("on: expects a db or transaction handle", 2) end
  if h.dialect ~= self._db.dialect then error("on: the handle is not of this query's dialect", 2) end
  if h == self._db then return self end
  if not seen then
    seen = setmetatable({}, weak)
    self._on = seen
  end
  p = setmetatable({ _db = h, kind = self.kind, np = self.np }, Prepared)
  seen[h] = p
  p.many, p.one = copy_form(self.many), copy_form(self.one)
  return p
end

-- The SQL text and the template binds (db.param() where a value goes).
function Prepared:to_sql()
  local f = self.many
  return f.text, { unpack(f.list, 1, f.n) }
end

M.restore = restore

return M
