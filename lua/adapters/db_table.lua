-- adapters.db_table: what the db adapters of cache, queue and idempotency share about the one
-- table each keeps in the app's database: the options they take, the table created on first
-- use, their clock, the once-per-interval trigger of their bounded sweeps, the claim tokens of
-- this process and the mapping of a database failure to code "unavailable". It holds no state
-- of its own: every field lives in the adapter's object. It must not know any adapter's
-- columns or statements (each adapter renders its own SQL).
--
--   local fail = db_table.failer("cache")   fail(err) -> nil, a zever error ("unavailable", "db: ...")
--   local self = db_table.new("cache.db", db, opts, { table = "cache_entries", sweep_interval = 60,
--                                                     sweep_batch = 100 })
--   self.schema = ...                                the CREATE ... IF NOT EXISTS text, rendered
--   db_table.ensure(self, fail)  -> true | nil, err  runs self.schema once (self.ready)
--   db_table.resolve(self, schema, fail) -> db | nil, err   self.db (or what the function self.db
--                                                  returns), with schema run once (self.ready)
--   db_table.now(self)           -> seconds          self.clock() (specs) or the wall clock
--   db_table.due(self, now)      -> boolean          true once per sweep_interval
--   db_table.token_prefix()      -> "pid:addr:usec:" a prefix unique to this process for tokens
--   db_table.dialect(db)         -> "sqlite" | "postgres"   (db.dialect; sqlite when unset)
--   db_table.blob(db)            -> the function that marks a string as a BLOB / bytea value
--   M.open = db_table.opener(M.new[, options])   the adapter contract's open: the app's
--                                  database (ctx:get("db")) and new's options, options(section)
--                                  or { table = section.table } ("" meaning the adapter's own)
--
-- self.schema is one string or a list of statements (PostgreSQL's extended protocol runs one
-- statement per call). On PostgreSQL the list runs in one transaction that first takes a
-- transaction-scoped advisory lock on the table's name: two processes creating the same table
-- at once would otherwise race in the catalogue (CREATE TABLE IF NOT EXISTS is not atomic
-- there: the loser fails on pg_type's unique index).
--
-- The object new returns has db, table, clock, wall, sweep_interval, sweep_batch (an integer),
-- next_sweep, ready (false) and binds (a reused list of values for db:exec); the adapter adds
-- its own fields and its metatable. Time is wall-clock seconds (processes share it).

local sys = require "zever.sys"
local errors = require "zever.errors"
require "zever.cdef.sys"
-- sys.wall through the FFI: the classic binding's is a C API call, which ends the caller's trace
-- (a cache get went back to the interpreter after every clock read).
local wall = require("ffi").C.zv_sys_wall

local type, error, format, tostring, floor, huge, pcall = type, error, string.format, tostring,
  math.floor, math.huge, pcall

local M = {}

-- Returns fail(err): nil plus the battery's zever error ("unavailable", "db: " .. the message of
-- err), for the errors zever.db returns ({ code, message }) and for plain strings alike.
function M.failer(battery)
  return function(err)
    return nil, errors.new(battery, "unavailable", "db: " .. tostring(err and err.message or err))
  end
end

-- A number option >= min and finite, or default when absent; raises blaming new's caller.
local function number(who, opts, name, default, min)
  local v = opts[name]
  if v == nil then return default end
  if type(v) ~= "number" or v ~= v or v < min or v == huge then
    error(format("%s: %s must be a number >= %s", who, name, tostring(min)), 4)
  end
  return v
end

-- who names the adapter in messages ("cache.db"); db is a zever.db database (the caller keeps
-- owning it); opts the adapter's options (table, clock, sweep_interval, sweep_batch; nil for
-- none); defaults gives table, sweep_interval and sweep_batch. Misuse raises with the caller of
-- the adapter's new blamed. Returns a fresh table of the fields above.
function M.new(who, db, opts, defaults)
  if type(db) ~= "table" or type(db.exec) ~= "function" then
    error(who .. ".new: expects a zever.db database", 3)
  end
  opts = opts or {}
  if type(opts) ~= "table" then error(who .. ".new: opts must be a table", 3) end
  -- zever.db raises on SQL errors; this battery reports them as values ("unavailable", ...).
  if db.try_handle then db = db:try_handle() end
  local t = opts.table or defaults.table
  if type(t) ~= "string" or not t:match("^[%a_][%w_]*$") then
    error(who .. ": table must be a plain identifier ([A-Za-z_][A-Za-z0-9_]*)", 3)
  end
  if opts.clock ~= nil and type(opts.clock) ~= "function" then
    error(who .. ": clock must be a function", 3)
  end
  return {
    db = db,
    table = t,
    clock = opts.clock,
    wall = wall,
    sweep_interval = number(who, opts, "sweep_interval", defaults.sweep_interval, 0),
    sweep_batch = floor(number(who, opts, "sweep_batch", defaults.sweep_batch, 1)),
    next_sweep = -huge,
    ready = false,
    binds = {},   -- reused for statements: the list form of db:exec/query's values
  }
end

-- The dialect of db and its bytea/BLOB marker (zever.db's db.blob; zever.sqlite's before it).
function M.dialect(db)
  return db and db.dialect or "sqlite"
end

function M.blob(db)
  return db and db.blob or require("zever.sqlite").blob
end

-- Runs schema (a string or a list of statements) on db; true or nil, err.
local function run_schema(db, schema, name)
  if type(schema) == "string" then return db:exec(schema) end
  if M.dialect(db) ~= "postgres" then
    for i = 1, #schema do
      local ok, err = db:exec(schema[i])
      if not ok then return nil, err end
    end
    return true
  end
  local ok, res, terr = pcall(db.transaction, db, function(tx)
    local r, lerr = tx:exec("SELECT pg_advisory_xact_lock(hashtext(?))", "zever.schema." .. name)
    if not r then error(lerr, 0) end
    for i = 1, #schema do
      local s, serr = tx:exec(schema[i])
      if not s then error(serr, 0) end
    end
    return true
  end)
  if not ok then return nil, res end
  if not res then return nil, terr end   -- BEGIN or COMMIT failed (a try handle's nil, err)
  return true
end
M.run_schema = run_schema

-- The database of an adapter that resolves it on first use (self.db: a database, or a function
-- returning one | nil, err) and then runs schema once (CREATE ... IF NOT EXISTS: a string, a
-- list, or a function of the database returning one, for a schema that depends on the
-- dialect); db or fail(err).
function M.resolve(self, schema, fail)
  local db = self.db
  if self.ready then return db end
  if type(db) == "function" then
    local got, err = db()
    if not got then return fail(err) end
    db = got
  end
  -- zever.db raises on SQL errors; these batteries report them as values ("unavailable", ...).
  if db.try_handle and not db.soft then db = db:try_handle() end
  self.db = db
  if type(schema) == "function" then schema = schema(db) end
  local ok, err = run_schema(db, schema, self.table)
  if not ok then return fail(err) end
  self.ready = true
  return db
end

-- Creates the table (self.schema, IF NOT EXISTS) on the first call; true or fail(err).
function M.ensure(self, fail)
  if self.ready then return true end
  local ok, err = run_schema(self.db, self.schema, self.table)
  if not ok then return fail(err) end
  self.ready = true
  return true
end

function M.now(self)
  local clock = self.clock
  if clock then return clock() end
  return self.wall()
end

-- True when a sweep is due at now, and then not again before now + sweep_interval: the caller
-- runs one bounded batch (there is no timer).
function M.due(self, now)
  if now >= self.next_sweep then
    self.next_sweep = now + self.sweep_interval
    return true
  end
  return false
end

-- pid, the address of a fresh table and the start time in microseconds: two processes (or two
-- adapters in one) never share it; a counter appended to it makes a claim token.
function M.token_prefix()
  return format("%d:%s:%.0f:", sys.getpid(), tostring({}):match("0x%x+") or "",
    sys.wall() * 1e6)
end

function M.opener(new, options)
  return function(section, ctx)
    local db, err = ctx:get("db")
    if not db then return nil, err end
    return new(db, options and options(section) or
      { table = section.table ~= "" and section.table or nil })
  end
end

return M
