-- zever.db.query_run: the run phase of the query builders. zever.db.query builds (its chain
-- methods fill the AST), zever.db.render renders (by shape, through the C renderer), and the
-- terminals here run: to_sql renders; all/first/each/count/exists and exec run the rendered SQL
-- through the builder's database (slot 0); prepare() keeps it (zever.db.prepared); preload()
-- loads relations of the rows a select returns. zever.db.query installs them on its classes
-- when it loads (install(M): M is zever.db.query's table, with its classes and M.select).
--
-- It must not build SQL text nor know a dialect (the renderer does), and changes a builder only
-- for the time of a render (first() sets LIMIT 1 and puts the old value back). first()'s LIMIT 1
-- is the value ONE (true) in the limit slot, which the renderer writes as the literal `LIMIT 1`
-- (limit() takes only integers, which bind): SQLite runs fewer opcodes for a literal LIMIT than
-- for a bound `LIMIT ?` (~200 instructions a primary-key first(), callgrind), and the call binds
-- one value less.

local sql = require "zever.sql"
local expr = require "zever.db.expr"
local render_mod = require "zever.db.render"
local prepared = require "zever.db.prepared"
local array_mt = require("zever.json").array_mt

local OP = sql.op
local render, render_shared = render_mod.render, render_mod.render_shared
local type, select, error, pairs, ipairs = type, select, error, pairs, ipairs
local setmetatable, tostring, rawget = setmetatable, tostring, rawget
local sort = table.sort

-- The slots read here: literals, as in zever.db.query (LuaJIT folds them into the traces), and
-- checked against sql.SLOT (lx_sql.h) when this module loads. Slot 0 is the database.
local DB = 0
local S_COLUMNS, S_DISTINCT, S_GROUP, S_ORDER, S_LIMIT, S_OFFSET, S_SETOPS = 3, 4, 7, 9, 10, 11, 13
local I_RETURNING, U_RETURNING, D_RETURNING = 8, 5, 4
sql.check_slots("select", { columns = S_COLUMNS, distinct = S_DISTINCT, group = S_GROUP,
  order = S_ORDER, limit = S_LIMIT, offset = S_OFFSET, setops = S_SETOPS })
sql.check_slots("insert", { returning = I_RETURNING })
sql.check_slots("update", { returning = U_RETURNING })
sql.check_slots("delete", { returning = D_RETURNING })

local ONE = true -- first()'s LIMIT 1 (see the top)

local R = {}

function R.install(M)
  local Select, Insert, Update, Delete = M.Select, M.Insert, M.Update, M.Delete

  local function dialect_of(q, dialect)
    if dialect ~= nil then return dialect end
    local db = q[DB]
    return db and db.dialect or "sqlite"
  end

  local function to_sql(self, dialect)
    local text, binds = render(self, dialect_of(self, dialect))
    if not text then error(binds, 2) end
    return text, binds
  end

  local function db_of(q, fname)
    local db = q[DB]
    if not db then error(fname .. ": the query is not attached to a database", 3) end
    return db
  end

  -- Renders for the query's database, raising on a renderer error (a programmer error).
  local function rendered(q, level)
    local db = db_of(q, "run")
    local text, binds = render(q, db.dialect)
    if not text then error(binds, level + 1) end
    return db, text, binds
  end

  for _, class in ipairs { Select, Insert, Update, Delete } do
    class.to_sql = to_sql
  end

  -- --- preload ------------------------------------------------------------------------------
  --
  -- q:preload("author", "tags") on a query from a generated model (db:from(models.Post)) loads
  -- those relations of the rows all()/first() return with one query per relation (per
  -- PRELOAD_CHUNK keys), never one per row, and sets row[name]: the row (belongs_to, has_one; nil
  -- when there is none) or a list, [] when empty (has_many, many_to_many). Relations are the
  -- model's (zever.model: kind, table, foreign_key, references, join_table, join_key, target_key,
  -- target_references).

  local PRELOAD_CHUNK = 500
  local OWNER = "zever_preload_owner"

  -- A map key for a value: int64 cdata are compared by value, not identity.
  local function key_of(v)
    if type(v) == "cdata" then return tostring(v) end
    return v
  end

  -- The distinct non-NULL values of column col in rows, in first-seen order.
  local function distinct(rows, col)
    local out, seen = {}, {}
    for i = 1, #rows do
      local v = rows[i][col]
      if v ~= nil then
        local k = key_of(v)
        if not seen[k] then
          seen[k] = true
          out[#out + 1] = v
        end
      end
    end
    return out
  end

  -- Runs make(chunk) for each PRELOAD_CHUNK keys and gathers the rows.
  local function chunked(keys, make)
    local all = {}
    for i = 1, #keys, PRELOAD_CHUNK do
      local chunk = {}
      for k = i, math.min(i + PRELOAD_CHUNK - 1, #keys) do chunk[#chunk + 1] = keys[k] end
      local rows = make(chunk):all()
      for _, r in ipairs(rows) do all[#all + 1] = r end
    end
    return all
  end

  local function preload_one(db, rows, name, rel)
    local kind = rel.kind
    if kind == "belongs_to" then
      local keys = distinct(rows, rel.foreign_key)
      local found = chunked(keys, function(chunk)
        return M.select(db, rel.table):where_in(rel.references, chunk)
      end)
      local by = {}
      for _, r in ipairs(found) do by[key_of(r[rel.references])] = r end
      for _, row in ipairs(rows) do
        local v = row[rel.foreign_key]
        row[name] = v ~= nil and by[key_of(v)] or nil
      end
    elseif kind == "has_many" or kind == "has_one" then
      local keys = distinct(rows, rel.references)
      local found = chunked(keys, function(chunk)
        return M.select(db, rel.table):where_in(rel.foreign_key, chunk):order_by(rel.foreign_key)
      end)
      local by = {}
      for _, r in ipairs(found) do
        local k = key_of(r[rel.foreign_key])
        if kind == "has_one" then
          if by[k] == nil then by[k] = r end
        else
          local list = by[k]
          if not list then
            list = setmetatable({}, array_mt)
            by[k] = list
          end
          list[#list + 1] = r
        end
      end
      for _, row in ipairs(rows) do
        local v = row[rel.references]
        local got = v ~= nil and by[key_of(v)] or nil
        if kind == "has_many" and got == nil then got = setmetatable({}, array_mt) end
        row[name] = got
      end
    elseif kind == "many_to_many" then
      local keys = distinct(rows, rel.references)
      local jt, t = rel.join_table, rel.table
      local found = chunked(keys, function(chunk)
        return M.select(db, t):select(t .. ".*", jt .. "." .. rel.join_key .. " AS " .. OWNER)
          :join(jt, jt .. "." .. rel.target_key, "=", t .. "." .. rel.target_references)
          :where_in(jt .. "." .. rel.join_key, chunk):order_by(jt .. "." .. rel.join_key)
      end)
      local by = {}
      for _, r in ipairs(found) do
        local k = key_of(r[OWNER])
        r[OWNER] = nil
        local list = by[k]
        if not list then
          list = setmetatable({}, array_mt)
          by[k] = list
        end
        list[#list + 1] = r
      end
      for _, row in ipairs(rows) do
        local v = row[rel.references]
        row[name] = v ~= nil and by[key_of(v)] or setmetatable({}, array_mt)
      end
    else
      error("preload: relation " .. name .. " has an unknown kind " .. tostring(kind), 4)
    end
  end

  local function run_preloads(q, db, rows)
    local model = q._model
    for _, name in ipairs(q._preload) do
      preload_one(db, rows, name, model.relations[name])
    end
    return rows
  end

  function Select:preload(...)
    local model = self._model
    if type(model) ~= "table" or type(rawget(model, "relations")) ~= "table" then
      error("preload: the query must start from a model (db:from(models.Post))", 2)
    end
    local list = self._preload or {}
    for i = 1, select("#", ...) do
      local name = select(i, ...)
      if type(name) ~= "string" then error("preload: relation names are strings", 2) end
      local rel = model.relations[name]
      if type(rel) ~= "table" then
        local known = {}
        for k in pairs(model.relations) do known[#known + 1] = k end
        sort(known)
        error("preload: " .. tostring(model.name or model.table) .. " has no relation '" .. name
          .. "' (relations: " .. (#known > 0 and table.concat(known, ", ") or "none") .. ")", 2)
      end
      list[#list + 1] = name
    end
    self._preload = list
    return self
  end

  -- all() and first() render into the renderer's shared list (render_shared): the binds go
  -- straight to the adapter, so a call allocates no list of its own.
  function Select:all()
    local db = db_of(self, "run")
    local text, binds, nb, shared = render_shared(self, db.dialect)
    if not text then error(binds, 2) end
    if self._preload then
      return run_preloads(self, db, db:_query_shared(text, binds, nb, shared))
    end
    return db:_query_shared(text, binds, nb, shared)
  end

  function Select:first()
    local db = db_of(self, "first")
    local saved = self[S_LIMIT]
    self[S_LIMIT] = ONE
    local text, binds, nb, shared = render_shared(self, db.dialect)
    self[S_LIMIT] = saved
    if not text then error(binds, 2) end
    if self._preload then
      local row = db:_first_shared(text, binds, nb, shared)
      if row ~= nil then run_preloads(self, db, { row }) end
      return row
    end
    return db:_first_shared(text, binds, nb, shared)
  end

  -- The query rendered once, run many times with the values of its db.param() placeholders:
  -- p:first(...), p:all(...) (zever.db.prepared).
  function Select:prepare()
    local db = db_of(self, "prepare")
    if self._preload then error("prepare: a query with preload cannot be prepared", 2) end
    local text, binds = render(self, db.dialect)
    if not text then error(binds, 2) end
    local saved = self[S_LIMIT]
    self[S_LIMIT] = ONE
    local ftext, fbinds = render(self, db.dialect)
    self[S_LIMIT] = saved
    if not ftext then error(fbinds, 2) end
    return prepared.new(db, "select", text, binds, ftext, fbinds)
  end

  function Select:each(fn)
    if type(fn) ~= "function" then error("each: expects a function", 2) end
    if self._preload then error("each: preload works with all() and first(), not each()", 2) end
    local db, text, binds = rendered(self, 2)
    return db:_each(text, binds, fn)
  end

  local COUNT = expr.fn.count():as("count")

  function Select:count()
    local db = db_of(self, "count")
    local simple = not (self[S_DISTINCT] or self[S_GROUP] or self[S_LIMIT] or self[S_OFFSET]
      or self[S_SETOPS])
    local q
    if simple then
      q = setmetatable({}, Select)
      for k, v in pairs(self) do q[k] = v end
      q[S_COLUMNS], q[S_ORDER] = { COUNT }, nil
    else
      q = setmetatable({ OP.SELECT, self:as("zever_count"), { COUNT } }, Select)
    end
    local text, binds = render(q, db.dialect)
    if not text then error(binds, 2) end
    local row, err = db:_first(text, binds)
    if not row then return nil, err end
    return row.count
  end

  local EXISTS_ALIAS = "exists"

  function Select:exists()
    local db = db_of(self, "exists")
    local q = { OP.SELECT, nil, { expr.exists(self):as(EXISTS_ALIAS) } }
    local text, binds = render(q, db.dialect)
    if not text then error(binds, 2) end
    local row, err = db:_first(text, binds)
    if not row then return nil, err end
    return row[EXISTS_ALIAS] == 1 or row[EXISTS_ALIAS] == true
  end

  -- Runs the insert: {changes=, last_insert_id=}, or the rows when returning() was used.
  function Insert:exec()
    local db, text, binds = rendered(self, 2)
    if self[I_RETURNING] then return db:_query(text, binds) end
    return db:_exec(text, binds)
  end

  -- exec() of an update or delete whose returning list is at slot: the number of changed rows,
  -- or the rows when returning() was used.
  local function exec_changes(slot)
    return function(self)
      local db, text, binds = rendered(self, 2)
      if self[slot] then return db:_query(text, binds) end
      return db:_changes(text, binds)
    end
  end

  Update.exec = exec_changes(U_RETURNING)

  -- The update rendered once, run many times with the values of its db.param() placeholders:
  -- p:exec(...) -> the number of changed rows (zever.db.prepared).
  function Update:prepare()
    local db = db_of(self, "prepare")
    if self[U_RETURNING] then error("prepare: an update with returning cannot be prepared", 2) end
    local _, text, binds = rendered(self, 2)
    return prepared.new(db, "update", text, binds)
  end

  Delete.exec = exec_changes(D_RETURNING)

  -- all() and first() of a write with returning(...): the rows exec() returns, or the first of
  -- them (nil when there is none: an insert whose on_conflict():do_nothing() skipped it, an
  -- update that matched nothing), as Lapis' insert and Rails' create give the new row. Without
  -- returning() a write has no rows to give: a misuse, raised with the caller blamed. In
  -- db:try a failing statement gives nil, err, as exec() does.
  local function write_rows(slot, kind, one)
    local name = one and "first" or "all"
    local misuse = name .. ": " .. kind .. " gives rows only with returning(...); without it, run exec()"
    return function(self)
      if not self[slot] then error(misuse, 2) end
      local db, text, binds = rendered(self, 2)
      local rows, err = db:_query(text, binds)
      if not rows then return nil, err end
      if one then return rows[1] end
      return rows
    end
  end

  Insert.all, Insert.first = write_rows(I_RETURNING, "an insert"), write_rows(I_RETURNING, "an insert", true)
  Update.all, Update.first = write_rows(U_RETURNING, "an update"), write_rows(U_RETURNING, "an update", true)
  Delete.all, Delete.first = write_rows(D_RETURNING, "a delete"), write_rows(D_RETURNING, "a delete", true)
end

return R
