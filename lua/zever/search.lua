-- zever.search: the front-end of the full-text search battery.
--
--   search.wrap(impl)                      -> a battery over an adapter object
--   s:index(doc)                           -> true | nil, err
--   s:index_batch(docs)                    -> n written | nil, err (nothing written)
--   s:delete(id[, { index = "default" }])  -> true | nil, err ("not_found")
--   s:search(q[, { limit = 10, offset = 0, index = nil }])
--        -> { total = n, hits = { {id, index, score, snippet, metadata}, ... } } | nil, err
--   s:flush()                              -> true | nil, err (index pending writes now)
--   s:reindex([{ index = name, progress = fn(done, total) }])
--                                          -> n documents reindexed | nil, err
--   s:optimize()                           -> true | nil, err (merge the index's segments)
--   s:close()                              -> true; later calls return "closed"
--   search.error(code, message)            a zever error of this battery (zever.errors)
--
-- A document is { id = "..." (or a number, kept as its string), index = "default",
-- content = "...", metadata = {...} }. Every document of a call is checked before anything is
-- written: a missing or empty id, content that is not a string, an index that is not a
-- non-empty string, or metadata JSON cannot hold is an expected failure (nil, err with code
-- "invalid", naming the document's position), since documents usually come from data. A doc
-- that is not a table, a query that is not a string, or options of the wrong type raise.
-- The query language is the adapter's (SQLite FTS5 syntax for the db adapter); a query it
-- cannot parse is "invalid". A blank query matches nothing. Hits are best first; score is
-- higher for better matches. It holds no state and must not know any adapter.

local battery = require "zever.battery"
local json = require "zever.json"

local type, error, pcall, tostring, find = type, error, pcall, tostring, string.find

local M = {}

local Search = battery.define("search", "the search index is closed")
M.error = Search.error

local CLOSED = Search.CLOSED

-- Returns a normalised copy { id, index, content, metadata_json } or nil, err.
local function check_doc(doc, pos, fname)
  if type(doc) ~= "table" then error(fname .. ": a document must be a table", 3) end
  local where = pos and ("document " .. pos .. ": ") or ""
  local id = doc.id
  if type(id) == "number" then id = tostring(id) end
  if type(id) ~= "string" or id == "" then
    return nil, M.error("invalid", where .. "id must be a non-empty string")
  end
  local index = doc.index
  if index == nil then index = "default" end
  if type(index) ~= "string" or index == "" then
    return nil, M.error("invalid", where .. "index must be a non-empty string")
  end
  if type(doc.content) ~= "string" then
    return nil, M.error("invalid", where .. "content must be a string")
  end
  local meta = doc.metadata
  local encoded = "{}"
  if meta ~= nil then
    local ok, s = pcall(json.encode, meta)
    if type(meta) ~= "table" or not ok then
      return nil, M.error("invalid", where .. "metadata must be a JSON-encodable table")
    end
    encoded = s
  end
  return { id, index, doc.content, encoded }
end

function Search:index(doc)
  local d, err = check_doc(doc, nil, "search:index")
  if not d then return nil, err end
  if self.closed then return nil, CLOSED end
  local n, werr = self.impl:write({ d })
  if not n then return nil, werr end
  return true
end

function Search:index_batch(docs)
  if type(docs) ~= "table" then error("search:index_batch: docs must be an array", 2) end
  local rows = {}
  for i = 1, #docs do
    local d, err = check_doc(docs[i], i, "search:index_batch")
    if not d then return nil, err end
    rows[i] = d
  end
  if self.closed then return nil, CLOSED end
  if #rows == 0 then return 0 end
  return self.impl:write(rows)
end

function Search:delete(id, opts)
  if type(id) == "number" then id = tostring(id) end
  if type(id) ~= "string" or id == "" then error("search:delete: id must be a non-empty string", 2) end
  local index = "default"
  if opts ~= nil then
    if type(opts) ~= "table" then error("search:delete: opts must be a table", 2) end
    if opts.index ~= nil then
      if type(opts.index) ~= "string" then error("search:delete: index must be a string", 2) end
      index = opts.index
    end
  end
  if self.closed then return nil, CLOSED end
  return self.impl:delete(id, index)
end

function Search:search(q, opts)
  if type(q) ~= "string" then error("search:search: query must be a string", 2) end
  local limit, offset, index = 10, 0, nil
  if opts ~= nil then
    if type(opts) ~= "table" then error("search:search: opts must be a table", 2) end
    limit = battery.count(opts.limit, 10, "search:search", "limit", 1)
    offset = battery.count(opts.offset, 0, "search:search", "offset", 0)
    index = opts.index
    if index ~= nil and type(index) ~= "string" then
      error("search:search: index must be a string", 2)
    end
  end
  if self.closed then return nil, CLOSED end
  if not find(q, "%S") then return { total = 0, hits = json.array() } end
  return self.impl:search(q, limit, offset, index)
end

-- The maintenance calls: adapters that have nothing to do (or cannot) answer true / 0.
function Search:flush()
  if self.closed then return nil, CLOSED end
  if not self.impl.flush then return true end
  return self.impl:flush()
end

function Search:reindex(opts)
  local index, progress
  if opts ~= nil then
    if type(opts) ~= "table" then error("search:reindex: opts must be a table", 2) end
    index, progress = opts.index, opts.progress
    if index ~= nil and (type(index) ~= "string" or index == "") then
      error("search:reindex: index must be a non-empty string", 2)
    end
    if progress ~= nil and type(progress) ~= "function" then
      error("search:reindex: progress must be a function", 2)
    end
  end
  if self.closed then return nil, CLOSED end
  if not self.impl.reindex then return 0 end
  return self.impl:reindex(index, progress)
end

function Search:optimize()
  if self.closed then return nil, CLOSED end
  if not self.impl.optimize then return true end
  return self.impl:optimize()
end

function M.wrap(impl)
  return battery.object(Search, impl)
end

return M
