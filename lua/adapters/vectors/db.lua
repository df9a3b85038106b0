-- adapters.vectors.db: the vector battery on the SQL database (SQLite or PostgreSQL).
--
--   local impl = db_vectors.new(db[, { table = "zever_vectors", dimensions = 0, index = nil }])
--   impl:upsert(id, embedding, metadata) / upsert_batch(items) / delete(id)
--   impl:query(e, k[, filter[, opts]])     opts.exact, opts.nprobe (checked by the front-end)
--   impl:build_index(opts) / drop_index() / index_info()   the opt-in IVF-flat index
--   db_vectors.open(section, ctx)  -> impl over ctx:get("db") (the adapter contract)
--   db_vectors.decode              the JSON decoder of metadata (specs wrap it to count calls)
--
-- Storage: one row per vector, (id TEXT PRIMARY KEY, dim, norm REAL, embedding BLOB of dim
-- float32 in host byte order, metadata TEXT JSON). The table is the truth; queries scan a dense
-- copy of it in C (zever.vectors_core: host/vectors/), loaded on the first query and kept in
-- step by this adapter's own writes. A write by another connection is noticed through
-- PRAGMA data_version and the copy is reloaded before the next query. Not noticed: writes to
-- the table through the same connection but not through this adapter, and a transaction of the
-- caller's that rolls back an upsert (the copy keeps it until the next reload).
--
-- A query copies the embedding into a reused float buffer, calls zv_vectors_set_query through
-- the FFI (the heap scratch belongs to the set), and decodes the metadata JSON of the top_k
-- survivors only. Arguments were checked by the front-end (zever.vectors).
--
-- The approximate index (host/vectors/ivf.c) is opt in: build_index(opts) or opts.index at
-- new(). The C set keeps it in step with every put/remove (rewritten rows and rows added after
-- the build are scanned exactly); before a query the adapter rebuilds it when those rows
-- exceed (rebuild - 1) x the rows indexed (rebuild = 1.5 by default), and builds it when there
-- is none and the store has min_rows rows or more (after a reload, which drops it). A filtered
-- query, or opts.exact, always scans exactly. Reads of PRAGMA data_version go through the db
-- adapter's FFI statement path when it has one (no row table per query).
--
-- On PostgreSQL (db.dialect == "postgres") the row is the same (bytea embedding, text JSON
-- metadata) and the scan is the same C kernel over the copy fetched from the table: pgvector
-- is not packaged for Debian 12 (docs/vectors.md). PostgreSQL has no data_version, so a
-- one-row table <table>_version counts the writes: every write of this adapter is one
-- statement that writes the row and bumps the counter (a data-modifying WITH), returning the
-- new count; the copy stays in step when the count is its own plus one, and is reloaded before
-- the next query otherwise (another process wrote). Not noticed there: writes to the table by
-- code other than this adapter. A metadata filter is one containment test,
-- metadata::jsonb @> the filter as JSON. new() reports in self.pgvector whether the server
-- offers the pgvector extension (pg_available_extensions); the scan does not use it yet.

local ffi = require "ffi"
local core = require "zever.vectors_core"
local errors = require "zever.errors"
local json = require "zever.json"
local db_table = require "adapters.db_table"

local type, tostring, format, sqrt, pairs, sort, concat = type, tostring, string.format,
  math.sqrt, pairs, table.sort, table.concat
local ffi_string, ffi_new, tonumber = ffi.string, ffi.new, tonumber
local tnew = require "table.new"

require "zever.cdef.vectors"

local C = ffi.C
local set_ptr = ffi.typeof("zv_vectors_set_t *")

local M = {}

M.decode = json.decode

local function fail(code, message) return nil, errors.new("vectors", code, message) end

local DB = {}
DB.__index = DB

local function quote(name)
  return '"' .. name:gsub('"', '""') .. '"'
end

-- Fills self.buf with e (dim numbers) and returns the norm; the front-end checked e.
local function fill(self, e)
  local buf, s = self.buf, 0
  for i = 1, self.dim do
    local x = e[i]
    buf[i - 1] = x
    s = s + x * x
  end
  return sqrt(s)
end

-- Fixes the dimension on first use (config, then the table, then this embedding).
local function dimension(self, n)
  if self.dim == 0 then
    local row = self.db:first("SELECT dim FROM " .. self.qtable .. " LIMIT 1")
    self.dim = row and row.dim or n
    self.buf = ffi_new("float[?]", n)
    self.hits = ffi_new("zv_vectors_hit_t[?]", 16)
    self.nhits = 16
    self.nout = ffi_new("size_t[1]")
  end
  if n ~= self.dim then
    return fail("invalid", format("the embedding has %d dimensions, the store %d", n, self.dim))
  end
  return true
end

function DB:_load()
  local rows, err = self.db:query("SELECT id, embedding, metadata FROM " .. self.qtable ..
    " ORDER BY id")
  if not rows then return nil, err end
  local v = self.version_now
  if not self.set then self.set = core.new(self.dim) end
  local set = self.set
  set:clear()
  local ids, metas, slot_of = {}, {}, {}
  local bytes = self.dim * 4
  local n = 0
  for i = 1, #rows do
    local r = rows[i]
    if #r.embedding == bytes then
      set:put(n, r.embedding)
      n = n + 1
      ids[n], metas[n], slot_of[r.id] = r.id, r.metadata, n - 1
    end
  end
  self.ids, self.metas, self.slot_of, self.version = ids, metas, slot_of, v
  self.ptr = ffi.cast(set_ptr, set:ptr())
  return true
end

-- PRAGMA data_version, read through the SQLite adapter's FFI statement path when the
-- connection has one (adapters.db.sqlite: conn.ptr), so a query allocates no row table.
local SQLITE_ROW, DATA_VERSION = 100, "PRAGMA data_version"
local function data_version(self)
  if self.pg then
    local row, err = self.db:first(self.version_sql)
    if not row then return nil, err end
    return row.v
  end
  local conn = self.db.conn
  local ptr, use = conn and conn.ptr, self.use
  if ptr and use and C.zv_sqlite_ffi_acquire(ptr, DATA_VERSION, #DATA_VERSION, 0, use) == 0 then
    local v
    local st = use.stmt
    if C.sqlite3_step(st) == SQLITE_ROW then v = tonumber(C.sqlite3_column_int64(st, 0)) end
    C.zv_sqlite_ffi_release(ptr, use)
    if v then return v end
  end
  local row, err = self.db:first(DATA_VERSION)
  if not row then return nil, err end
  return row.data_version
end

function DB:_fresh()
  local v, err = data_version(self)
  if not v then return nil, err end
  self.version_now = v
  if self.ids and self.version == v then return true end
  return self:_load()
end

local UPSERT = "INSERT INTO %s (id, dim, norm, embedding, metadata) VALUES (?, ?, ?, ?, ?) " ..
  "ON CONFLICT (id) DO UPDATE SET dim = excluded.dim, norm = excluded.norm, " ..
  "embedding = excluded.embedding, metadata = excluded.metadata"

-- Writes one row and mirrors it in the loaded copy; the caller checked the dimension.
function DB:_write(id, e, metadata)
  local norm = fill(self, e)
  local floats = ffi_string(self.buf, self.dim * 4)
  local meta = metadata and json.encode(metadata) or "{}"
  local r, err = self.db[self.pg and "first" or "exec"](self.db, self.upsert_sql, id, self.dim,
    norm, self.blob(floats), meta)
  if not r then return nil, err end
  if self.pg then   -- r.v: the write count after this write (see the top)
    if r.v ~= (self.version or -1) + 1 then self.ids = nil end
    self.version = r.v
  end
  if self.ids then
    local slot = self.slot_of[id]
    if not slot then
      slot = #self.ids
      self.ids[slot + 1], self.slot_of[id] = id, slot
    end
    self.metas[slot + 1] = meta
    if C.zv_vectors_set_put(self.ptr, slot, self.buf) ~= 0 then self.ids = nil end
  end
  return true
end

function DB:upsert(id, e, metadata)
  local ok, err = dimension(self, #e)
  if not ok then return nil, err end
  ok, err = self:_write(id, e, metadata)
  if not ok then return fail(err.code or "unavailable", tostring(err.message or err)) end
  return true
end

function DB:upsert_batch(items)
  for i = 1, #items do
    local ok, err = dimension(self, #items[i][2])
    if not ok then
      err.message = "item " .. i .. ": " .. err.message
      return nil, err
    end
  end
  -- The copy is dropped and reloaded if the transaction fails half-way.
  local ok, err = pcall(self.db.transaction, self.db, function()
    for i = 1, #items do
      local it = items[i]
      local w, werr = self:_write(it[1], it[2], it[3])
      if not w then error(werr, 0) end
    end
  end)
  if not ok then
    self.ids = nil
    return fail(type(err) == "table" and err.code or "unavailable",
      type(err) == "table" and tostring(err.message) or tostring(err))
  end
  return #items
end

function DB:delete(id)
  local r, err = self.db[self.pg and "first" or "exec"](self.db, self.delete_sql, id)
  if not r then return fail(err.code or "unavailable", tostring(err.message or err)) end
  if self.pg then
    if r.v ~= (self.version or -1) + r.changes then self.ids = nil end
    self.version = r.v
  end
  if r.changes == 0 then return fail("not_found", "no vector with that id") end
  if self.ids then
    local slot = self.slot_of[id]
    if slot then
      local ids, metas = self.ids, self.metas
      local last = #ids
      C.zv_vectors_set_remove(self.ptr, slot)
      if slot + 1 ~= last then
        ids[slot + 1], metas[slot + 1] = ids[last], metas[last]
        self.slot_of[ids[last]] = slot
      end
      ids[last], metas[last], self.slot_of[id] = nil, nil, nil
    end
  end
  return true
end

-- The mask of the slots whose metadata matches filter, selected by SQLite (json_extract), so
-- no metadata is decoded in Lua; nil when nothing matches.
function DB:_mask(filter)
  local rows, err
  if self.pg then
    rows, err = self.db:query("SELECT id FROM " .. self.qtable ..
      " WHERE metadata::jsonb @> ?::jsonb", json.encode(filter))
    if not rows then return nil, err end
    return self:_fill_mask(rows)
  end
  local keys, binds = {}, {}
  for key in pairs(filter) do keys[#keys + 1] = key end
  sort(keys)
  local where = {}
  for i, key in ipairs(keys) do
    where[i] = "json_extract(metadata, ?) = ?"
    binds[#binds + 1] = '$."' .. key .. '"'
    binds[#binds + 1] = filter[key]
  end
  rows, err = self.db:query("SELECT id FROM " .. self.qtable .. " WHERE " ..
    concat(where, " AND "), binds)
  if not rows then return nil, err end
  return self:_fill_mask(rows)
end

-- The mask of the slots of rows (each with an id); false when rows is empty.
function DB:_fill_mask(rows)
  if #rows == 0 then return false end
  local n = #self.ids
  if not self.mask or self.nmask < n then
    self.mask = ffi_new("uint8_t[?]", n)
    self.nmask = n
  else
    ffi.fill(self.mask, n, 0)
  end
  local mask, slot_of = self.mask, self.slot_of
  for i = 1, #rows do
    local slot = slot_of[rows[i].id]
    if slot then mask[slot] = 1 end
  end
  return mask
end

-- The index options (build_index's, or new()'s opts.index) with their defaults filled in.
local function index_options(o, min_rows)
  return { nlist = o.nlist or 0, nprobe = o.nprobe or 0, iters = o.iters or 0,
    sample = o.sample or 0, seed = o.seed or 0, min_rows = o.min_rows or min_rows,
    rebuild = o.rebuild or 1.5 }
end

-- Builds the index over the loaded copy now; false when the store is empty.
function DB:_build()
  local ok, message, code = self.set:build_index(self.index_opts)
  if ok then return true end
  if code == "INVAL" then return false end
  return fail("unavailable", "vectors: cannot build the index: " .. tostring(message))
end

-- Before an approximate query: (re)builds the index when the policy says so (see the top).
function DB:_maintain()
  local opts, ptr = self.index_opts, self.ptr
  local ix = C.zv_vectors_set_index(ptr)
  local n = tonumber(C.zv_vectors_set_count(ptr))
  if ix == nil then
    if n >= opts.min_rows and n > 0 then return self:_build() end
    return true
  end
  local info = self.info
  C.zv_vectors_ivf_info(ix, info)
  local exact = n - tonumber(info.n_indexed) + tonumber(info.n_stale)
  if exact > (opts.rebuild - 1) * tonumber(info.n_built) then return self:_build() end
  return true
end

function DB:build_index(opts)
  self.index_opts = index_options(opts or {}, 1)
  if self.dim == 0 then return true end
  local ok, err = self:_fresh()
  if not ok then return fail(err.code or "unavailable", tostring(err.message or err)) end
  local built, berr = self:_build()
  if built == nil then return nil, berr end
  return true -- built now, or (an empty store) on the first query with rows
end

function DB:drop_index()
  self.index_opts = nil
  if self.set then self.set:drop_index() end
  return true
end

function DB:index_info()
  if not self.set then return nil end
  local info = self.set:index_info()
  if info then info.rows = self.set:count() end
  return info
end

function DB:query(e, k, filter, opts)
  if self.dim == 0 then
    local row = self.db:first("SELECT dim FROM " .. self.qtable .. " LIMIT 1")
    if not row then return json.array() end
  end
  local ok, err = dimension(self, #e)
  if not ok then return nil, err end
  ok, err = self:_fresh()
  if not ok then return fail(err.code or "unavailable", tostring(err.message or err)) end
  fill(self, e)
  if k > self.nhits then
    self.hits = ffi_new("zv_vectors_hit_t[?]", k)
    self.nhits = k
  end
  local mask = nil
  if filter then
    mask, err = self:_mask(filter)
    if mask == nil then return fail(err.code or "unavailable", tostring(err.message or err)) end
    if mask == false then return json.array() end
  end
  local hits, nout = self.hits, self.nout
  local rc
  if self.index_opts and not mask and not (opts and opts.exact) then
    ok, err = self:_maintain()
    if ok == nil then return nil, err end
    rc = C.zv_vectors_set_query_approx(self.ptr, self.buf, k, opts and opts.nprobe or 0, hits, nout)
  else
    rc = C.zv_vectors_set_query_mask(self.ptr, self.buf, k, mask, hits, nout)
  end
  if rc ~= 0 then return fail("unavailable", "out of memory") end
  local n = tonumber(nout[0])
  local ids, metas, decode = self.ids, self.metas, M.decode
  local out = setmetatable(tnew(n, 0), json.array_mt) -- [] when nothing is stored
  for i = 1, n do
    local h = hits[i - 1]
    local slot = h.slot + 1
    out[i] = { id = ids[slot], score = h.score, metadata = decode(metas[slot]) or {} }
  end
  -- Equal scores by id (C orders them by slot); k is small, so insertion sort.
  for i = 2, n do
    local x, j = out[i], i - 1
    while j >= 1 and out[j].score == x.score and out[j].id > x.id do
      out[j + 1] = out[j]
      j = j - 1
    end
    out[j + 1] = x
  end
  return out
end

function DB:close()
  if self.set then self.set:free() end
  self.set, self.ids, self.ptr = nil, nil, nil
  return true
end

-- PostgreSQL's DDL for table t: the rows and the one-row write counter (see the top).
function M.schema_postgres(t)
  local qt, vq = quote(t), quote(t .. "_version")
  return {
    "CREATE TABLE IF NOT EXISTS " .. qt .. " (id text PRIMARY KEY, dim integer NOT NULL, " ..
      "norm double precision NOT NULL, embedding bytea NOT NULL, metadata text NOT NULL)",
    "CREATE TABLE IF NOT EXISTS " .. vq .. " (one boolean PRIMARY KEY DEFAULT true CHECK (one), " ..
      "v bigint NOT NULL)",
    "INSERT INTO " .. vq .. " (one, v) VALUES (true, 0) ON CONFLICT DO NOTHING",
  }
end

function M.new(db, opts)
  opts = opts or {}
  -- zever.db raises on SQL errors; this battery reports them as values ("unavailable", ...).
  if type(db) == "table" and db.try_handle then db = db:try_handle() end
  local tname = opts.table or "zever_vectors"
  if type(tname) ~= "string" or tname == "" then error("vectors.db: table must be a string", 2) end
  local qt = quote(tname)
  local pg = db_table.dialect(db) == "postgres"
  local ok, err
  if pg then
    ok, err = db_table.run_schema(db, M.schema_postgres(tname), tname)
  else
    ok, err = db:exec(("CREATE TABLE IF NOT EXISTS %s (id TEXT PRIMARY KEY, dim INTEGER NOT NULL, " ..
      "norm REAL NOT NULL, embedding BLOB NOT NULL, metadata TEXT NOT NULL)"):format(qt))
  end
  if not ok then return fail(err.code or "unavailable", tostring(err.message or err)) end
  local idx = opts.index
  if idx ~= nil and idx ~= false and type(idx) ~= "table" and idx ~= true then
    error("vectors.db: index must be a table of options, true or false", 2)
  end
  local self = setmetatable({ db = db, qtable = qt, dim = 0, pg = pg, blob = db_table.blob(db),
    upsert_sql = UPSERT:format(qt), delete_sql = "DELETE FROM " .. qt .. " WHERE id = ?",
    index_opts = idx and index_options(idx == true and {} or idx, 10000) or nil,
    info = ffi_new("zv_vectors_ivf_info_t"),
    use = pcall(ffi.typeof, "zv_sqlite_use_t") and ffi_new("zv_sqlite_use_t") or nil }, DB)
  if pg then
    local vq = quote(tname .. "_version")
    self.version_sql = "SELECT v FROM " .. vq
    self.upsert_sql = "WITH w AS (" .. self.upsert_sql .. " RETURNING 1) UPDATE " .. vq ..
      " SET v = v + 1 RETURNING v"
    self.delete_sql = "WITH d AS (DELETE FROM " .. qt .. " WHERE id = ? RETURNING 1), " ..
      "n AS (SELECT count(*) AS n FROM d) UPDATE " .. vq .. " SET v = v + n.n FROM n " ..
      "RETURNING v, n.n AS changes"
    self.pgvector = db:first("SELECT 1 AS ok FROM pg_available_extensions WHERE name = 'vector'")
      ~= nil
  end
  local dim = opts.dimensions or 0
  local row = db:first("SELECT dim FROM " .. qt .. " LIMIT 1")
  if row then dim = row.dim end
  if dim > 0 then dimension(self, dim) end
  return self
end

function M.open(section, ctx)
  local db, err = ctx:get("db")
  if not db then return nil, err end
  -- vectors.index / nlist / nprobe / index_min_rows: read when the config schema has them.
  local index = nil
  if section.index then
    index = { nlist = section.nlist, nprobe = section.nprobe, min_rows = section.index_min_rows }
  end
  return M.new(db, { dimensions = section.dimensions, table = section.table, index = index })
end

return M
