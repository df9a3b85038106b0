-- adapters.search.db: the search battery on SQLite FTS5.
--
--   local impl = db_search.new(db[, { table = "zever_search", fts = "unicode61 remove_diacritics 2" }])
--   impl:write(rows)  rows = { {id, index, content, metadata_json}, ... }  -> n | nil, err
--   impl:delete(id, index)                                                 -> true | nil, err
--   impl:search(q, limit, offset, index)              -> { total =, hits = {...} } | nil, err
--   db_search.open(section, ctx)   -> zever.search over ctx:get("db") (the container's factory)
--   db_search.decode               the metadata JSON decoder (specs may wrap it)
--
-- Storage: a content table (seq, id, "index", content, metadata; UNIQUE (id, "index")) and an
-- external-content FTS5 table over its content column, kept in step by three triggers, so the
-- text is stored once. write() is one multi-row INSERT ... ON CONFLICT (id, "index") DO UPDATE
-- (content and metadata from excluded) per chunk of CHUNK rows (4 bound values each, far under
-- SQLite's variable limit), all chunks in one transaction. search() runs two statements, the
-- count and the page (ranked by bm25, ties by id; snippets of up to 12 tokens with the matches
-- in <b>..</b>); the user's query is always a bound value. Errors SQLite raises for the query
-- text (FTS5 syntax, an unknown column filter) become code "invalid". Arguments were checked by
-- the front-end (zever.search), which also encoded the metadata.

local search = require "zever.search"
local json = require "zever.json"

local type, tostring, find, concat, rep = type, tostring, string.find, table.concat, string.rep

local M = {}

M.decode = json.decode
M.CHUNK = 500

local function fail(code, message) return nil, search.error(code, message) end

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
  local total_row, err
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
  local hits = {}
  for i = 1, #rows do
    local r = rows[i]
    hits[i] = { id = r.id, index = r.idx, score = -r.rank, snippet = r.snippet or "",
      metadata = decode(r.metadata) or {} }
  end
  return { total = total_row.n, hits = hits }
end

function DB.close() return true end

function M.new(db, opts)
  opts = opts or {}
  local name = opts.table or "zever_search"
  if type(name) ~= "string" or not find(name, "^[%a_][%w_]*$") then
    error("search.db: table must be a plain identifier", 2)
  end
  local fts = opts.fts or "unicode61 remove_diacritics 2"
  if type(fts) ~= "string" then error("search.db: fts must be a string", 2) end
  local qt, ft = quote(name), quote(name .. "_fts")
  local schema = concat({
    "CREATE TABLE IF NOT EXISTS " .. qt .. ' (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, ' ..
      '"index" TEXT NOT NULL, content TEXT NOT NULL, metadata TEXT NOT NULL, UNIQUE (id, "index"))',
    "CREATE VIRTUAL TABLE IF NOT EXISTS " .. ft .. " USING fts5(content, content=" .. qt ..
      ", content_rowid=seq, tokenize='" .. fts:gsub("'", "''") .. "')",
    "CREATE TRIGGER IF NOT EXISTS " .. quote(name .. "_ai") .. " AFTER INSERT ON " .. qt ..
      " BEGIN INSERT INTO " .. ft .. "(rowid, content) VALUES (new.seq, new.content); END",
    "CREATE TRIGGER IF NOT EXISTS " .. quote(name .. "_ad") .. " AFTER DELETE ON " .. qt ..
      " BEGIN INSERT INTO " .. ft .. "(" .. ft .. ", rowid, content) " ..
      "VALUES ('delete', old.seq, old.content); END",
    "CREATE TRIGGER IF NOT EXISTS " .. quote(name .. "_au") .. " AFTER UPDATE ON " .. qt ..
      " BEGIN INSERT INTO " .. ft .. "(" .. ft .. ", rowid, content) " ..
      "VALUES ('delete', old.seq, old.content); INSERT INTO " .. ft ..
      "(rowid, content) VALUES (new.seq, new.content); END",
  }, ";\n")
  local ok, err = db:exec(schema)
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
  return setmetatable({
    db = db, qt = qt, insert_cache = {}, binds = {},
    delete_sql = "DELETE FROM " .. qt .. ' WHERE id = ? AND "index" = ?',
    count_sql = "SELECT count(*) AS n" .. from,
    count_index_sql = "SELECT count(*) AS n" .. from .. ' AND d."index" = ?',
    page_sql = page .. " ORDER BY rank, d.id LIMIT ? OFFSET ?",
    page_index_sql = page .. ' AND d."index" = ? ORDER BY rank, d.id LIMIT ? OFFSET ?',
  }, DB)
end

function M.open(section, ctx)
  local db, err = ctx:get("db")
  if not db then return nil, err end
  local impl, ierr = M.new(db, { fts = section.fts })
  if not impl then return nil, ierr end
  return search.wrap(impl)
end

return M
