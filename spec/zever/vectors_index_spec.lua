-- The opt-in approximate index of the vector battery (IVF-flat, host/vectors/ivf.c): recall
-- against the exact scan on seeded clustered data, determinism, writes after the build, the
-- rebuild policy, and the options through app.vectors.

local ffi = require "ffi"
local core = require "zever.vectors_core"
local zever_db = require "zever.db"
local vectors = require "zever.vectors"
local db_vectors = require "adapters.vectors.db"

-- A seeded LCG, and points around seeded centres: the same data on every run.
local function rng(seed)
  local s = seed
  return function()
    s = (s * 1103515245 + 12345) % 2147483648
    return s / 2147483648 * 2 - 1
  end
end

local function clustered(seed, n, dim, ncentres, sigma)
  local r = rng(seed)
  local centres = {}
  for c = 1, ncentres do
    local v = {}
    for j = 1, dim do v[j] = r() end
    centres[c] = v
  end
  return function()
    local c = centres[math.floor((r() + 1) / 2 * ncentres) % ncentres + 1]
    local v = {}
    for j = 1, dim do v[j] = c[j] + sigma * (r() + r() + r()) end
    return v
  end, n
end

local floats = ffi.new("float[?]", 1024)
local function pack(v)
  for i = 1, #v do floats[i - 1] = v[i] end
  return ffi.string(floats, #v * 4)
end

-- recall@k of approx against exact: the share of exact's slots (or ids) that approx found.
local function recall(exact, approx, key)
  local seen, found = {}, 0
  for _, h in ipairs(approx) do seen[h[key]] = true end
  for _, h in ipairs(exact) do if seen[h[key]] then found = found + 1 end end
  return found, #exact
end

local function open_store()
  local db = assert(zever_db.open("sqlite::memory:"))
  return vectors.wrap(assert(db_vectors.new(db))), db
end

describe("zever.vectors_core index", function()
  local dim, n = 64, 20000
  local set, queries

  setup(function()
    local point = clustered(7, n, dim, 200, 0.65)
    set = core.new(dim)
    for slot = 0, n - 1 do assert(set:put(slot, pack(point()))) end
    queries = {}
    for i = 1, 100 do queries[i] = pack(point()) end
  end)

  teardown(function() set:free() end)

  it("finds at least 95% of the exact top 10 on clustered data at the default nprobe", function()
    assert.is_true(set:build_index{ seed = 1 })
    local info = set:index_info()
    assert.are.equal(math.floor(math.sqrt(n) + 0.5), info.nlist)
    assert.is_true(info.nprobe >= 1 and info.nprobe < info.nlist)
    local found, total = 0, 0
    for _, q in ipairs(queries) do
      local f, t = recall(set:query(q, 10), set:query(q, 10, 0), 1)
      found, total = found + f, total + t
    end
    assert.are.equal(1000, total)
    assert.is_true(found / total >= 0.95, ("recall@10 %.3f"):format(found / total))
    -- The data is not trivial: one list alone misses some of the neighbours.
    local found1 = 0
    for _, q in ipairs(queries) do
      found1 = found1 + recall(set:query(q, 10), set:query(q, 10, 1), 1)
    end
    assert.is_true(found1 < found, ("recall@10 at nprobe 1: %.3f"):format(found1 / total))
  end)

  it("returns the exact result when every list is probed", function()
    assert.is_true(set:build_index{ nlist = 50, seed = 3 })
    for i = 1, 10 do
      assert.are.same(set:query(queries[i], 10), set:query(queries[i], 10, 50))
    end
  end)

  it("builds the same index from the same seed", function()
    local results = {}
    for run = 1, 2 do
      assert.is_true(set:build_index{ nlist = 100, nprobe = 3, seed = 99 })
      local r = {}
      for i = 1, 20 do r[i] = set:query(queries[i], 10, 0) end
      results[run] = r
    end
    assert.are.same(results[1], results[2])
  end)

  it("scans exactly once the index is dropped", function()
    assert.is_true(set:build_index{ nlist = 100, nprobe = 1, seed = 5 })
    set:drop_index()
    assert.is_nil(set:index_info())
    assert.are.same(set:query(queries[1], 10), set:query(queries[1], 10, 1))
  end)

  it("refuses to index an empty set", function()
    local empty = core.new(4)
    local ok, _, code = empty:build_index()
    assert.is_nil(ok)
    assert.are.equal("INVAL", code)
    empty:free()
  end)
end)

describe("zever.vectors index", function()
  local dim = 32

  -- A store of n clustered rows ("r00001" ...) and a point generator of the same clusters.
  local function store(n, seed)
    local v, db = open_store()
    local point = clustered(seed, n, dim, 40, 0.6)
    local batch = {}
    for i = 1, n do
      batch[#batch + 1] = { ("r%05d"):format(i), point(), { i = i } }
      if #batch == 500 or i == n then
        assert(v:upsert_batch(batch))
        batch = {}
      end
    end
    return v, db, point
  end

  it("answers with at least 95% recall@10 against exact = true", function()
    local v, db, point = store(4000, 11)
    assert.is_true(v:build_index{ seed = 2 })
    local info = v:index_info()
    assert.are.equal(4000, info.indexed)
    local found, total = 0, 0
    for _ = 1, 50 do
      local q = point()
      local f, t = recall(v:query(q, 10, { exact = true }), v:query(q, 10), "id")
      found, total = found + f, total + t
    end
    assert.is_true(found / total >= 0.95, ("recall@10 %.3f"):format(found / total))
    v:close(); db:close()
  end)

  it("finds rows upserted after the build and drops deleted ones", function()
    local v, db = store(3000, 12)
    assert.is_true(v:build_index{ seed = 4, nprobe = 1 })
    -- A new row far from every cluster, and an indexed row moved to another direction.
    local far, other = {}, {}
    for j = 1, dim do far[j] = (j % 2 == 0) and 5 or -5; other[j] = (j % 3 == 0) and 7 or -2 end
    assert.is_true(v:upsert("new", far))
    assert.is_true(v:upsert("r00010", other))
    assert.are.equal("new", v:query(far, 1)[1].id)
    assert.are.equal("r00010", v:query(other, 1)[1].id)
    local info = v:index_info()
    assert.are.equal(1, info.stale)
    assert.are.equal(3001, info.rows)
    -- Deleting indexed rows (the last rows move into their slots) and the new one.
    for i = 1, 200, 7 do assert.is_true(v:delete(("r%05d"):format(i))) end
    assert.is_true(v:delete("new"))
    assert.are.equal("r00010", v:query(other, 1)[1].id)
    for i = 1, 200, 7 do
      local id = ("r%05d"):format(i)
      for _, h in ipairs(v:query(far, 50)) do assert.are_not.equal(id, h.id) end
    end
    for _, h in ipairs(v:query(far, 50)) do assert.are_not.equal("new", h.id) end
    v:close(); db:close()
  end)

  it("rebuilds the index once the rows scanned exactly pass the rebuild factor", function()
    local v, db, point = store(2000, 13)
    assert.is_true(v:build_index{ seed = 6, rebuild = 1.5 })
    local batch = {}
    for i = 1, 900 do batch[i] = { ("s%05d"):format(i), point() } end
    assert(v:upsert_batch(batch))
    v:query(point(), 5)
    assert.are.equal(2000, v:index_info().built) -- 900 exact rows: under 0.5 x 2000
    assert(v:upsert_batch{ { "t1", point() }, { "t2", point() }, { "t3", point() } })
    for i = 1, 100 do batch[i] = { ("u%05d"):format(i), point() } end
    for i = 101, 900 do batch[i] = nil end
    assert(v:upsert_batch(batch))
    v:query(point(), 5)
    local info = v:index_info()
    assert.are.equal(3003, info.built)
    assert.are.equal(3003, info.indexed)
    assert.are.equal(0, info.stale)
    v:close(); db:close()
  end)

  it("scans exactly when the query has a filter or exact = true", function()
    local v, db, point = store(1500, 14)
    assert.is_true(v:build_index{ seed = 8, nlist = 40, nprobe = 1 })
    local q = point()
    local exact = v:query(q, 10, { exact = true })
    assert.are.equal(10, #exact)
    local all = v:query(q, 10, { nprobe = 40 })
    assert.are.same(exact, all)
    local filtered = v:query(q, 3, { filter = { i = exact[2].metadata.i } })
    assert.are.equal(1, #filtered)
    assert.are.equal(exact[2].id, filtered[1].id)
    v:close(); db:close()
  end)

  it("builds the index lazily for a store created with index options", function()
    local db = assert(zever_db.open("sqlite::memory:"))
    local v = vectors.wrap(assert(db_vectors.new(db, { index = { min_rows = 500, seed = 1 } })))
    local point = clustered(15, 600, dim, 10, 0.3)
    local batch = {}
    for i = 1, 400 do batch[i] = { "a" .. i, point() } end
    assert(v:upsert_batch(batch))
    v:query(point(), 3)
    assert.is_nil(v:index_info())
    for i = 1, 200 do batch[i] = { "b" .. i, point() } end
    for i = 201, 400 do batch[i] = nil end
    assert(v:upsert_batch(batch))
    v:query(point(), 3)
    assert.are.equal(600, v:index_info().built)
    v:close(); db:close()
  end)

  it("raises on index options of the wrong type", function()
    local v, db = open_store()
    assert.has_error(function() v:build_index{ nlist = -1 } end)
    assert.has_error(function() v:build_index{ rebuild = 0.5 } end)
    assert.has_error(function() v:build_index("fast") end)
    assert.has_error(function() v:query({ 1, 2 }, 3, { nprobe = 0 }) end)
    assert.has_error(function() v:query({ 1, 2 }, 3, { exact = "yes" }) end)
    v:close(); db:close()
  end)

  it("accepts build_index on an empty store and indexes once rows arrive", function()
    local v, db = open_store()
    assert.is_true(v:build_index{ seed = 3 })
    assert.is_nil(v:index_info())
    assert.is_true(v:upsert("a", { 1, 0, 0 }))
    assert.is_true(v:upsert("b", { 0, 1, 0 }))
    assert.are.equal("b", v:query({ 0, 1, 0.1 }, 1)[1].id)
    assert.are.equal(2, v:index_info().built)
    assert.is_true(v:drop_index())
    assert.is_nil(v:index_info())
    assert.is_true(v:delete("a"))
    assert.is_true(v:delete("b"))
    assert.is_true(v:build_index()) -- a store emptied by deletes: indexed once rows return
    assert.is_nil(v:index_info())
    v:close()
    assert.is_nil(v:index_info())
    db:close()
  end)
end)
