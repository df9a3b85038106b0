-- adapters.search.db: the search battery on SQLite FTS5, or on PostgreSQL's tsvector + GIN.
--
--   local impl = db_search.new(db[, { table = "zever_search", fts = "unicode61 remove_diacritics 2",
--                                     ts_config = nil }])
--   impl:write(rows)  rows = { {id, index, content, metadata_json}, ... }  -> n | nil, err
--   impl:delete(id, index)                                                 -> true | nil, err
--   impl:search(q, limit, offset, index)              -> { total =, hits = {...} } | nil, err
--   impl:flush()                      -> true | nil, err  (feeds pending rows to FTS5 now)
--   impl:reindex([index[, progress]]) -> n rows | nil, err  (rebuilds the FTS5 index)
--   impl:optimize()                   -> true | nil, err  (FTS5 'optimize': one segment)
--   db_search.open(section, ctx)   -> impl over ctx:get("db") (the adapter contract)
--   db_search.decode               the metadata JSON decoder (specs may wrap it)
--
-- Storage: a content table (seq, id, "index", content, metadata; UNIQUE (id, "index")), an
-- external-content FTS5 table over its content column (the text is stored once), and a
-- pending table fed by three triggers on the content table (INSERT ... ON CONFLICT DO NOTHING):
--
--   zever_search          (seq, id, "index", content, metadata)     the truth
--   zever_search_pending  (seq PRIMARY KEY, old)  rows whose FTS5 entry is behind; old is the
--                                                 content FTS5 holds for seq (NULL: none)
--   zever_search_fts      fts5(content, content = zever_search, content_rowid = seq)
--
-- A write costs a B-tree insert, not FTS5's tokenizing and segment merging: the pending rows
-- are fed to FTS5 (flush: 'delete' of the old text, insert of the current one, in one
-- transaction; one INSERT ... SELECT ordered by rowid, each row's 'delete' before its insert,
-- because FTS5 writes its pending terms out as a new segment whenever a rowid goes backwards:
-- all the deletes, then all the inserts, wrote two segments a feed; FEED_CHUNK rows a
-- statement, then FTS5 'merge' of the chunks' segments, see feed below) before the next search,
-- by whichever connection searches first, so a search always sees every committed write.
-- Several writes between searches are fed at once, and a document rewritten twice is
-- tokenized once. An update that leaves content unchanged (the metadata only) queues nothing.
--
-- write() is one multi-row INSERT ... ON CONFLICT (id, "index") DO UPDATE (content and
-- metadata from excluded) per chunk of CHUNK rows (4 bound values each, far under SQLite's
-- variable limit), all chunks in one transaction. search() flushes when rows are pending, then
-- runs two statements, the count and the page (ranked by bm25, ties by id; snippets of up to
-- 12 tokens with the matches in <b>..</b>); the user's query is always a bound value. Errors
-- SQLite raises for the query text (FTS5 syntax, an unknown column filter) become code
-- "invalid". Arguments were checked by the front-end (zever.search), which also encoded the
-- metadata.
--
-- On PostgreSQL (db.dialect == "postgres") the same table carries a generated column
-- tsv = to_tsvector(config, content) under a GIN index, so the index is in step with every
-- committed write (GIN's own pending list plays the part of the pending table; flush and
-- optimize run gin_clean_pending_list). The query goes through websearch_to_tsquery (quoted
-- phrases, "or", "-word"; it never fails on syntax), ranking is ts_rank (the score; ties by id)
-- and snippets are ts_headline's (up to 12 words, matches in <b>..</b>). The text search
-- configuration is opts.ts_config, or by default "zever_search": the "simple" parser and
-- dictionary (no stemming, no stop words, like unicode61) behind the unaccent dictionary (the
-- unaccent extension of postgresql-contrib, part of Debian's postgresql-15), so that "cafe"
-- finds "café" as FTS5's remove_diacritics does. Without the extension the default falls back
-- to "simple" (diacritics then count). reindex recomputes the tsvector of the rows it covers
-- (an UPDATE of content to itself, in chunks) and rebuilds nothing else.

local errors = require "zever.errors"
local json = require "zever.json"

local db_table = require "adapters.db_table"

local type, tostring, find, concat, rep, pcall = type, tostring, string.find, table.concat,
  string.rep, pcall

local M = {}

M.decode = json.decode
M.CHUNK = 500

local function fail(code, message) return nil, errors.new("search", code, message) end

local function pass(err)
  if type(err) ~= "table" then return fail("unavailable", tostring(err)) end
  return fail(err.code or "unavailable", tostring(err.message))
end

local function quote(name) return '"' .. name:gsub('"', '""') .. '"' end

local DB = {}
DB.__index = DB

local function insert_sql(self, n)
  local sql = self.insert_cache[n]
  if sql then return sql end
  sql = "INSERT INTO " .. self.qt .. ' (id, "index", content, metadata) VALUES ' ..
    rep("(?, ?, ?, ?)", n, ", ") ..
    ' ON CONFLICT (id, "index") DO UPDATE SET content = excluded.content, ' ..
    "metadata = excluded.metadata"
  self.insert_cache[n] = sql
  return sql
end

-- One chunk: rows[first..last] as one statement.
local function write_chunk(self, rows, first, last)
  local binds, k = self.binds, 0
  for i = first, last do
    local r = rows[i]
    binds[k + 1], binds[k + 2], binds[k + 3], binds[k + 4] = r[1], r[2], r[3], r[4]
    k = k + 4
  end
  for i = k + 1, #binds do binds[i] = nil end
  return self.db:exec(insert_sql(self, last - first + 1), binds)
end

function DB:write(rows)
  local n = #rows
  if n <= M.CHUNK then
    local r, err = write_chunk(self, rows, 1, n)
    if not r then return pass(err) end
    return n
  end
  local ok, err = pcall(self.db.transaction, self.db, function()
    for first = 1, n, M.CHUNK do
      local last = first + M.CHUNK - 1
      if last > n then last = n end
      local r, werr = write_chunk(self, rows, first, last)
      if not r then error(werr, 0) end
    end
  end)
  if not ok then return pass(err) end
  return n
end

-- Feeds the pending rows to FTS5 inside tx and empties the queue: FEED_CHUNK rows a statement,
-- in seq order. FTS5 gathers a statement's terms in an in-memory hash and writes them out as one
-- segment when the statement ends; the hash's slot array grows with the distinct terms of the
-- largest statement and never shrinks while the connection lives (every later statement clears
-- and scans all of it), so one statement over a large queue would make every later feed dearer.
M.FEED_CHUNK = 100
M.FEED_MERGE = 2000

local function must_exec(tx, sql, ...)
  local r, err = tx:exec(sql, ...)
  if not r then error(err, 0) end
end

local function feed(self, tx)
  local chunks = 0
  while true do
    local b, err = tx:first(self.bound_sql, M.FEED_CHUNK - 1)
    if not b then
      if err then error(err, 0) end
      break
    end
    must_exec(tx, self.feed_upto_sql, b.seq, b.seq)
    must_exec(tx, self.clear_upto_sql, b.seq)
    chunks = chunks + 1
  end
  must_exec(tx, self.feed_sql)
  must_exec(tx, self.clear_sql)
  -- The chunks' segments, FTS5's 'merge': levels of usermerge (4) or more segments are merged,
  -- FEED_MERGE pages at most; without it the next searches read each chunk's segment until later
  -- writes make automerge fold them (Search after a 1,000-row feed: 2-3x the time).
  if chunks > 0 and M.FEED_MERGE > 0 then must_exec(tx, self.merge_sql, M.FEED_MERGE) end
end

-- Feeds the pending rows to FTS5 (see the top); nothing to do costs one indexed read.
function DB:flush()
  if self.pg then
    local r, err = self.db:first(self.pending_sql)
    if not r then return pass(err) end
    return true
  end
  if not self.db:first(self.pending_sql) then return true end
  local ok, err = pcall(self.db.transaction, self.db, self.feed)
  if not ok then return pass(err) end
  return true
end

-- Rebuilds the FTS5 index from the content table: every row (FTS5 'rebuild'; with a progress
-- function, 'delete-all' and the rows in chunks of REINDEX_CHUNK, calling progress(done,
-- total) after each), or only the rows of one index ('delete' and insert of each). One
-- transaction; returns the number of rows indexed.
M.REINDEX_CHUNK = 1000

function DB:reindex(index, progress)
  local db = self.db
  local total_row, err
  if index then
    total_row, err = db:first("SELECT count(*) AS n FROM " .. self.qt .. ' WHERE "index" = ?',
      index)
  else
    total_row, err = db:first("SELECT count(*) AS n FROM " .. self.qt)
  end
  if not total_row then return pass(err) end
  local total = total_row.n
  local ok, terr = pcall(db.transaction, db, function(tx)
    local function run(sql, ...)
      local r, werr = tx:exec(sql, ...)
      if not r then error(werr, 0) end
      return r
    end
    local ft, qt = self.ft, self.qt
    if self.pg then
      ft = nil   -- no FTS5 table: the chunks below recompute the generated tsvector
    elseif index then
      feed(self, tx)
      run("INSERT INTO " .. ft .. "(" .. ft .. ", rowid, content) SELECT 'delete', seq, content " ..
        "FROM " .. qt .. ' WHERE "index" = ?', index)
    elseif not progress then
      run("INSERT INTO " .. ft .. "(" .. ft .. ") VALUES ('rebuild')")
      run("DELETE FROM " .. self.pt)
      return
    else
      run("INSERT INTO " .. ft .. "(" .. ft .. ") VALUES ('delete-all')")
      run("DELETE FROM " .. self.pt)
    end
    local where = index and ' AND "index" = ?' or ""
    local chunk
    if self.pg then
      chunk = "UPDATE " .. qt .. " SET content = content WHERE seq > ? AND seq <= ?" .. where
    else
      chunk = "INSERT INTO " .. ft .. "(rowid, content) SELECT seq, content FROM " .. qt ..
        " WHERE seq > ? AND seq <= ?" .. where
    end
    local bounds = "SELECT max(seq) AS hi, count(*) AS n FROM (SELECT seq FROM " .. qt ..
      " WHERE seq > ?" .. where .. " ORDER BY seq LIMIT ?) AS b"
    local last, done = -1, 0
    if progress then progress(0, total) end
    while true do
      local b, berr
      if index then
        b, berr = tx:first(bounds, last, index, M.REINDEX_CHUNK)
      else
        b, berr = tx:first(bounds, last, M.REINDEX_CHUNK)
      end
      if not b then error(berr, 0) end
      if b.n == 0 then break end
      if index then run(chunk, last, b.hi, index) else run(chunk, last, b.hi) end
      last, done = b.hi, done + b.n
      if progress then progress(done, total) end
    end
  end)
  if not ok then
    if index and type(terr) == "table" and terr.code == "corrupt" then
      -- FTS5 'delete' needs the entries it removes: a damaged index is repaired only whole.
      return fail("corrupt", "the full-text index is damaged; reindex every index (no index " ..
        "option) to rebuild it: " .. tostring(terr.message))
    end
    return pass(terr)
  end
  return total
end

-- FTS5 'optimize': merges every segment into one (searches then read one b-tree).
function DB:optimize()
  local ok, err = self:flush()
  if not ok then return nil, err end
  if self.pg then return true end   -- flush cleaned GIN's pending list
  local ft = self.ft
  local r, oerr = self.db:exec("INSERT INTO " .. ft .. "(" .. ft .. ") VALUES ('optimize')")
  if not r then return pass(oerr) end
  return true
end

function DB:delete(id, index)
  local r, err = self.db:exec(self.delete_sql, id, index)
  if not r then return pass(err) end
  if r.changes == 0 then return fail("not_found", "no document with that id in that index") end
  return true
end

-- Errors caused by the query text itself.
local function query_error(err)
  local msg = type(err) == "table" and tostring(err.message) or tostring(err)
  if find(msg, "fts5", 1, true) or find(msg, "no such column", 1, true)
    or find(msg, "unterminated", 1, true) or find(msg, "malformed MATCH", 1, true)
    or find(msg, "unknown special query", 1, true) then
    local cut = find(msg, " (sql: ", 1, true)
    if cut then msg = msg:sub(1, cut - 1) end
    return fail("invalid", "the search query cannot be parsed: " .. msg)
  end
  return pass(err)
end

function DB:search(q, limit, offset, index)
  if self.pg and find(q, "\0", 1, true) then
    return fail("invalid", "the search query cannot be parsed: it contains a zero byte")
  end
  local total_row, err
  if not self.pg then   -- PostgreSQL's GIN searches its pending list itself
    total_row, err = self:flush()
    if not total_row then return nil, err end
  end
  if index then
    total_row, err = self.db:first(self.count_index_sql, q, index)
  else
    total_row, err = self.db:first(self.count_sql, q)
  end
  if not total_row then
    if err then return query_error(err) end
    return fail("unavailable", "the count returned no row")
  end
  local rows
  if index then
    rows, err = self.db:query(self.page_index_sql, q, index, limit, offset)
  else
    rows, err = self.db:query(self.page_sql, q, limit, offset)
  end
  if not rows then return query_error(err) end
  local decode = M.decode
  local hits = json.array() -- [] when nothing matches
  for i = 1, #rows do
    local r = rows[i]
    hits[i] = { id = r.id, index = r.idx, score = -r.rank, snippet = r.snippet or "",
      metadata = decode(r.metadata) or {} }
  end
  return { total = total_row.n, hits = hits }
end

function DB.close() return true end

-- The default text search configuration on PostgreSQL: "zever_search" (simple + unaccent),
-- created once per database when the unaccent extension can be had; "simple" otherwise.
local TS_CONFIG = [[
DO $zever$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'zever_search') THEN
    CREATE TEXT SEARCH CONFIGURATION zever_search (COPY = simple);
    ALTER TEXT SEARCH CONFIGURATION zever_search
      ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
      WITH unaccent, simple;
  END IF;
END $zever$]]

local function default_config(db)
  local ok, res = pcall(db_table.run_schema, db, { "DO $zever$ BEGIN IF NOT EXISTS " ..
    "(SELECT 1 FROM pg_extension WHERE extname = 'unaccent') THEN CREATE EXTENSION unaccent; " ..
    "END IF; END $zever$", TS_CONFIG }, "search_config")
  if ok and res then return "zever_search" end
  return "simple"
end

-- The PostgreSQL form of new (see the top); the statements take their values in the order of
-- SQLite's, so write, delete and search run the same code on both.
local function new_postgres(db, name, config)
  if config ~= nil and (type(config) ~= "string" or not find(config, "^[%a_][%w_.]*$")) then
    error("search.db: ts_config must be the name of a text search configuration", 3)
  end
  config = config or default_config(db)
  local qt = quote(name)
  local cfg = "'" .. config .. "'::regconfig"
  local ok, err = db_table.run_schema(db, {
    "CREATE TABLE IF NOT EXISTS " .. qt .. " (seq bigint GENERATED BY DEFAULT AS IDENTITY " ..
      'PRIMARY KEY, id text NOT NULL, "index" text NOT NULL, content text NOT NULL, ' ..
      "metadata text NOT NULL, tsv tsvector GENERATED ALWAYS AS (to_tsvector(" .. cfg ..
      ', content)) STORED, UNIQUE (id, "index"))',
    "CREATE INDEX IF NOT EXISTS " .. quote(name .. "_tsv") .. " ON " .. qt .. " USING gin (tsv)",
  }, name)
  if not ok then return pass(err) end
  local from = " FROM " .. qt .. " d, websearch_to_tsquery(" .. cfg .. ", ?) q WHERE d.tsv @@ q"
  local page = 'SELECT d.id AS id, d."index" AS idx, d.metadata AS metadata, ' ..
    "-ts_rank(d.tsv, q) AS rank, ts_headline(" .. cfg .. ", d.content, q, " ..
    "'StartSel=<b>, StopSel=</b>, MaxWords=12, MinWords=3, ShortWord=0, MaxFragments=1, " ..
    "FragmentDelimiter=…') AS snippet" .. from
  return setmetatable({
    db = db, qt = qt, pg = true, config = config, insert_cache = {}, binds = {},
    pending_sql = "SELECT gin_clean_pending_list('" .. quote(name .. "_tsv"):gsub("'", "''") ..
      "'::regclass) AS n",
    delete_sql = "DELETE FROM " .. qt .. ' WHERE id = ? AND "index" = ?',
    count_sql = "SELECT count(*) AS n" .. from,
    count_index_sql = "SELECT count(*) AS n" .. from .. ' AND d."index" = ?',
    page_sql = page .. " ORDER BY rank, d.id LIMIT ? OFFSET ?",
    page_index_sql = page .. ' AND d."index" = ? ORDER BY rank, d.id LIMIT ? OFFSET ?',
  }, DB)
end

-- The feed of the pending rows (up to a seq when upto is " AND p.seq <= ?"): one INSERT ...
-- SELECT ordered by rowid, each row's 'delete' before its insert (see the top).
local function feed_sql(ft, qt, pt, upto)
  return "INSERT INTO " .. ft .. "(" .. ft .. ", rowid, content) SELECT op, seq, txt FROM (" ..
    "SELECT 'delete' AS op, p.seq AS seq, p.old AS txt, 0 AS k FROM " .. pt .. " p WHERE " ..
    "p.old IS NOT NULL" .. upto .. " UNION ALL SELECT NULL, d.seq, d.content, 1 FROM " .. pt ..
    " p JOIN " .. qt .. " d ON d.seq = p.seq WHERE 1" .. upto .. ") ORDER BY seq, k"
end

function M.new(db, opts)
  opts = opts or {}
  -- zever.db raises on SQL errors; this battery reports them as values ("invalid", ...).
  if type(db) == "table" and db.try_handle then db = db:try_handle() end
  local name = opts.table or "zever_search"
  if type(name) ~= "string" or not find(name, "^[%a_][%w_]*$") then
    error("search.db: table must be a plain identifier", 2)
  end
  if db_table.dialect(db) == "postgres" then return new_postgres(db, name, opts.ts_config) end
  local fts = opts.fts or "unicode61 remove_diacritics 2"
  if type(fts) ~= "string" then error("search.db: fts must be a string", 2) end
  local qt, ft, pt = quote(name), quote(name .. "_fts"), quote(name .. "_pending")
  local function queue(seq, old)
    return "INSERT INTO " .. pt .. " (seq, old) VALUES (" .. seq .. ", " .. old ..
      ") ON CONFLICT (seq) DO NOTHING"
  end
  local schema = concat({
    "CREATE TABLE IF NOT EXISTS " .. qt .. ' (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, ' ..
      '"index" TEXT NOT NULL, content TEXT NOT NULL, metadata TEXT NOT NULL, UNIQUE (id, "index"))',
    "CREATE VIRTUAL TABLE IF NOT EXISTS " .. ft .. " USING fts5(content, content=" .. qt ..
      ", content_rowid=seq, tokenize='" .. fts:gsub("'", "''") .. "')",
    "CREATE TABLE IF NOT EXISTS " .. pt .. " (seq INTEGER PRIMARY KEY, old TEXT)",
    -- The triggers of earlier versions: synchronous (_ai, _ad, _au: the FTS5 index is in step
    -- when they exist), then queueing with INSERT ... SELECT ... WHERE NOT EXISTS (_pi, _pd, _pu:
    -- a statement that reads the table it inserts into stages its rows in a temporary b-tree,
    -- opened and closed on every row the write touched).
    "DROP TRIGGER IF EXISTS " .. quote(name .. "_ai"),
    "DROP TRIGGER IF EXISTS " .. quote(name .. "_ad"),
    "DROP TRIGGER IF EXISTS " .. quote(name .. "_au"),
    "DROP TRIGGER IF EXISTS " .. quote(name .. "_pi"),
    "DROP TRIGGER IF EXISTS " .. quote(name .. "_pd"),
    "DROP TRIGGER IF EXISTS " .. quote(name .. "_pu"),
    -- A seq already queued keeps its first old text: the one FTS5 still holds. (An upsert's
    -- DO NOTHING, not OR IGNORE: the write's own conflict clause would override a trigger's
    -- OR IGNORE, not the trigger's upsert.)
    "CREATE TRIGGER IF NOT EXISTS " .. quote(name .. "_qi") .. " AFTER INSERT ON " .. qt ..
      " BEGIN " .. queue("new.seq", "NULL") .. "; END",
    "CREATE TRIGGER IF NOT EXISTS " .. quote(name .. "_qd") .. " AFTER DELETE ON " .. qt ..
      " BEGIN " .. queue("old.seq", "old.content") .. "; END",
    "CREATE TRIGGER IF NOT EXISTS " .. quote(name .. "_qu") .. " AFTER UPDATE OF content ON " ..
      qt .. " WHEN old.content IS NOT new.content BEGIN " .. queue("old.seq", "old.content") ..
      "; END",
  }, ";\n")
  local ok, err = db:transaction(function(tx)
    local r, serr = tx:exec(schema)
    if not r then error(serr, 0) end
    return true
  end)
  if not ok then
    if type(err) == "table" and find(tostring(err.message), "tokenize", 1, true) then
      return fail("invalid", "search: the fts tokenizer is not valid: " .. tostring(err.message))
    end
    return pass(err)
  end
  local from = " FROM " .. ft .. " JOIN " .. qt .. " d ON d.seq = " .. ft .. ".rowid WHERE " ..
    ft .. " MATCH ?"
  local page = 'SELECT d.id AS id, d."index" AS idx, d.metadata AS metadata, rank, ' ..
    "snippet(" .. ft .. ", 0, '<b>', '</b>', '…', 12) AS snippet" .. from
  local self = setmetatable({
    db = db, qt = qt, ft = ft, pt = pt, insert_cache = {}, binds = {},
    pending_sql = "SELECT 1 AS p FROM " .. pt .. " LIMIT 1",
    bound_sql = "SELECT seq FROM " .. pt .. " ORDER BY seq LIMIT 1 OFFSET ?",
    feed_sql = feed_sql(ft, qt, pt, ""),
    feed_upto_sql = feed_sql(ft, qt, pt, " AND p.seq <= ?"),
    clear_sql = "DELETE FROM " .. pt,
    clear_upto_sql = "DELETE FROM " .. pt .. " WHERE seq <= ?",
    merge_sql = "INSERT INTO " .. ft .. "(" .. ft .. ", rank) VALUES ('merge', ?)",
    delete_sql = "DELETE FROM " .. qt .. ' WHERE id = ? AND "index" = ?',
    count_sql = "SELECT count(*) AS n" .. from,
    count_index_sql = "SELECT count(*) AS n" .. from .. ' AND d."index" = ?',
    page_sql = page .. " ORDER BY rank, d.id LIMIT ? OFFSET ?",
    page_index_sql = page .. ' AND d."index" = ? ORDER BY rank, d.id LIMIT ? OFFSET ?',
  }, DB)
  self.feed = function(tx) return feed(self, tx) end   -- flush's transaction body
  return self
end

function M.open(section, ctx)
  local db, err = ctx:get("db")
  if not db then return nil, err end
  return M.new(db, { fts = section.fts })
end

return M
