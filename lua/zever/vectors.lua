-- zever.vectors: the front-end of the vector battery (cosine similarity, higher is closer).
--
--   vectors.wrap(impl)                        -> a battery over an adapter object
--   v:upsert(id, embedding[, metadata])       -> true | nil, err
--   v:upsert_batch{ {id, embedding, metadata}, ... } (or { id =, embedding =, metadata = })
--                                             -> n written | nil, err (nothing written)
--   v:delete(id)                              -> true | nil, err ("not_found")
--   v:query(embedding[, top_k = 10[, opts]])  -> { {id =, score =, metadata =}, ... } | nil, err
--        opts: filter = {...}, exact = true (skip the index), nprobe = n (lists to probe)
--   v:build_index{ nlist =, nprobe =, iters =, sample =, seed =, min_rows =, rebuild = }
--                                             -> true | nil, err (the opt-in approximate index)
--   v:drop_index()                            -> true (queries scan exactly again)
--   v:index_info()                            -> { nlist, nprobe, built, indexed, stale, rows }
--                                                | nil (no index built now)
--   v:close()                                 -> true; later calls return "closed"
--   vectors.error(code, message)              the error objects every adapter returns
--
-- This file checks arguments so adapters may assume them valid: ids are non-empty strings,
-- embeddings arrays of finite numbers, metadata a JSON-encodable table (checked before anything
-- is written), top_k an integer >= 1. A wrong type raises (caller blamed); an empty embedding,
-- a non-finite component, metadata JSON cannot hold, or a dimension the adapter refuses is an
-- expected failure, nil + err with code "invalid". Results are best first; equal scores are
-- ordered by id. opts.filter = { key = value, ... } keeps only vectors whose metadata has
-- every key equal to its value (keys are words, values strings, numbers or booleans; anything
-- else raises). It holds no state and must not know any adapter.

local battery = require "zever.battery"
local json = require "zever.json"

local type, error, pcall, pairs, ipairs, next, find = type, error, pcall, pairs, ipairs, next,
  string.find

local M = {}

local Vectors = battery.define("vectors", "the vector store is closed")
M.error = Vectors.error

local CLOSED = Vectors.CLOSED

-- Returns nil when embedding is valid, else an err; raises when it is not a table.
local function check_embedding(e, fname, level)
  if type(e) ~= "table" then error(fname .. ": embedding must be an array of numbers", level) end
  local n = #e
  if n == 0 then return M.error("invalid", "the embedding is empty") end
  for i = 1, n do
    local x = e[i]
    if type(x) ~= "number" or x ~= x or x == 1 / 0 or x == -1 / 0 then
      return M.error("invalid", "embedding component " .. i .. " is not a finite number")
    end
  end
  return nil
end

local function check_metadata(m, fname, level)
  if m == nil then return nil end
  if type(m) ~= "table" then error(fname .. ": metadata must be a table", level) end
  local ok = pcall(json.encode, m)
  if not ok then return M.error("invalid", "the metadata cannot be encoded as JSON") end
  return nil
end

local function check_id(id, fname, level)
  if type(id) ~= "string" or id == "" then error(fname .. ": id must be a non-empty string", level) end
end

function Vectors:upsert(id, embedding, metadata)
  check_id(id, "vectors:upsert", 3)
  local err = check_embedding(embedding, "vectors:upsert", 3)
    or check_metadata(metadata, "vectors:upsert", 3)
  if err then return nil, err end
  if self.closed then return nil, CLOSED end
  return self.impl:upsert(id, embedding, metadata)
end

function Vectors:upsert_batch(items)
  if type(items) ~= "table" then error("vectors:upsert_batch: items must be an array", 2) end
  local norm = {}
  for i = 1, #items do
    local it = items[i]
    if type(it) ~= "table" then error("vectors:upsert_batch: item " .. i .. " must be a table", 2) end
    local id, e, m = it.id or it[1], it.embedding or it[2], it.metadata or it[3]
    check_id(id, "vectors:upsert_batch", 3)
    local err = check_embedding(e, "vectors:upsert_batch", 3)
      or check_metadata(m, "vectors:upsert_batch", 3)
    if err then
      err.message = "item " .. i .. ": " .. err.message
      return nil, err
    end
    norm[i] = { id, e, m }
  end
  if self.closed then return nil, CLOSED end
  if #norm == 0 then return 0 end
  return self.impl:upsert_batch(norm)
end

function Vectors:delete(id)
  check_id(id, "vectors:delete", 3)
  if self.closed then return nil, CLOSED end
  return self.impl:delete(id)
end

function Vectors:query(embedding, top_k, opts)
  local err = check_embedding(embedding, "vectors:query", 3)
  if top_k == nil then
    top_k = 10
  elseif type(top_k) ~= "number" or top_k < 1 or top_k % 1 ~= 0 then
    error("vectors:query: top_k must be an integer >= 1", 2)
  end
  if opts ~= nil then
    if type(opts) ~= "table" then error("vectors:query: opts must be a table", 2) end
    local filter = opts.filter
    if filter ~= nil then
      if type(filter) ~= "table" then error("vectors:query: filter must be a table", 2) end
      for k, v in pairs(filter) do
        if type(k) ~= "string" or not find(k, "^[%w_%-]+$") then
          error("vectors:query: filter keys must be words ([A-Za-z0-9_-])", 2)
        end
        local t = type(v)
        if t ~= "string" and t ~= "number" and t ~= "boolean" then
          error("vectors:query: filter values must be strings, numbers or booleans", 2)
        end
      end
      if next(filter) == nil then filter = nil end
    end
    local exact, nprobe = opts.exact, opts.nprobe
    if exact ~= nil and type(exact) ~= "boolean" then
      error("vectors:query: exact must be a boolean", 2)
    end
    if nprobe ~= nil and (type(nprobe) ~= "number" or nprobe < 1 or nprobe % 1 ~= 0) then
      error("vectors:query: nprobe must be an integer >= 1", 2)
    end
    if err then return nil, err end
    if self.closed then return nil, CLOSED end
    if exact or nprobe then return self.impl:query(embedding, top_k, filter, opts) end
    return self.impl:query(embedding, top_k, filter)
  end
  if err then return nil, err end
  if self.closed then return nil, CLOSED end
  return self.impl:query(embedding, top_k)
end

-- The options build_index takes: counts (0 = the default), and rebuild, a factor >= 1.
local INDEX_COUNTS = { "nlist", "nprobe", "iters", "sample", "seed", "min_rows" }

function Vectors:build_index(opts)
  if opts == nil then opts = {} end
  if type(opts) ~= "table" then error("vectors:build_index: opts must be a table", 2) end
  for _, name in ipairs(INDEX_COUNTS) do
    local v = opts[name]
    if v ~= nil and (type(v) ~= "number" or v < 0 or v % 1 ~= 0 or v >= 2 ^ 53) then
      error("vectors:build_index: " .. name .. " must be an integer >= 0", 2)
    end
  end
  local r = opts.rebuild
  if r ~= nil and (type(r) ~= "number" or r ~= r or r < 1) then
    error("vectors:build_index: rebuild must be a number >= 1", 2)
  end
  if self.closed then return nil, CLOSED end
  if not self.impl.build_index then
    return nil, M.error("unsupported", "this adapter has no approximate index")
  end
  return self.impl:build_index(opts)
end

function Vectors:drop_index()
  if self.closed then return nil, CLOSED end
  if self.impl.drop_index then return self.impl:drop_index() end
  return true
end

function Vectors:index_info()
  if self.closed or not self.impl.index_info then return nil end
  return self.impl:index_info()
end

function M.wrap(impl)
  return battery.object(Vectors, impl)
end

return M
