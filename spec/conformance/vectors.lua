-- The vector battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.vectors")("db", function() return vectors end, caps)
--
-- new() returns a fresh, empty zever.vectors (front-end) over the adapter, with no dimension
-- fixed yet. caps.count_decodes, when given, returns how many metadata decodes have happened
-- so far (the suite checks that a query decodes only its survivors).

return function(name, new, caps)
  caps = caps or {}
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  -- A small seeded generator (an LCG), so the data is the same on every run and platform.
  local function rng(seed)
    local s = seed
    return function()
      s = (s * 1103515245 + 12345) % 2147483648
      return s / 2147483648 * 2 - 1
    end
  end

  local function random_vector(r, dim)
    local v = {}
    for i = 1, dim do v[i] = r() end
    return v
  end

  -- Rounds to float32, as the store keeps it, so the reference computes the same numbers.
  local ffi = require "ffi"
  local f32 = ffi.new("float[1]")
  local function round32(x)
    f32[0] = x
    return f32[0]
  end

  local function cosine(a, b)
    local d, na, nb = 0, 0, 0
    for i = 1, #a do
      local x, y = round32(a[i]), round32(b[i])
      d, na, nb = d + x * y, na + x * x, nb + y * y
    end
    if na == 0 or nb == 0 then return 0 end
    return d / math.sqrt(na * nb)
  end

  describe("vectors conformance: " .. name, function()
    it("returns the exact top-k of a brute-force reference on seeded random data", function()
      local v = new()
      local r, dim, n = rng(42), 24, 300
      local data = {}
      for i = 1, n do
        local id = ("v%04d"):format(i)
        data[i] = { id = id, e = random_vector(r, dim) }
        assert.is_true((v:upsert(id, data[i].e, { i = i })))
      end
      for _ = 1, 5 do
        local q = random_vector(r, dim)
        local ref = {}
        for i = 1, n do ref[i] = { id = data[i].id, score = cosine(q, data[i].e) } end
        table.sort(ref, function(a, b) return a.score > b.score end)
        local got = assert(v:query(q, 7))
        assert.are.equal(7, #got)
        for i = 1, 7 do
          assert.are.equal(ref[i].id, got[i].id, "rank " .. i)
          assert.is_true(math.abs(ref[i].score - got[i].score) < 1e-5, "score " .. i)
          assert.are.equal(tonumber(ref[i].id:sub(2)), got[i].metadata.i)
        end
      end
      v:close()
    end)

    it("scores an identical direction 1 and an opposite one -1", function()
      local v = new()
      v:upsert("same", { 2, 0, 0 })
      v:upsert("opposite", { -1, 0, 0 })
      v:upsert("orthogonal", { 0, 5, 0 })
      local got = assert(v:query({ 1, 0, 0 }, 3))
      assert.are.same({ "same", "orthogonal", "opposite" }, { got[1].id, got[2].id, got[3].id })
      assert.is_true(math.abs(got[1].score - 1) < 1e-6)
      assert.is_true(math.abs(got[2].score) < 1e-6)
      assert.is_true(math.abs(got[3].score + 1) < 1e-6)
      v:close()
    end)

    it("orders equal scores by id", function()
      local v = new()
      for _, id in ipairs({ "c", "a", "d", "b" }) do v:upsert(id, { 1, 1 }) end
      v:upsert("far", { 1, -1 })
      local got = assert(v:query({ 1, 1 }, 4))
      assert.are.same({ "a", "b", "c", "d" }, { got[1].id, got[2].id, got[3].id, got[4].id })
      assert.are.equal(got[1].score, got[4].score)
      v:close()
    end)

    it("returns fewer than top_k when the store holds fewer, and {} when it is empty", function()
      local v = new()
      assert.are.same({}, v:query({ 1, 2, 3 }, 5))
      v:upsert("only", { 1, 2, 3 }, { tag = "x" })
      local got = assert(v:query({ 1, 2, 3 }, 5))
      assert.are.equal(1, #got)
      assert.are.same({ tag = "x" }, got[1].metadata)
      v:close()
    end)

    it("replaces the embedding and metadata of an existing id", function()
      local v = new()
      v:upsert("a", { 1, 0 }, { n = 1 })
      v:upsert("b", { 0, 1 }, { n = 2 })
      assert.are.equal("a", v:query({ 1, 0 }, 1)[1].id)
      v:upsert("a", { 0, 1 }, { n = 3 })
      local got = v:query({ 1, 0.01 }, 2)
      assert.are.equal(2, #got)
      assert.are.same({ n = 3 }, got[1].metadata)
      v:close()
    end)

    -- { name, first upsert, call, expected code }
    local errors = {
      { "refuses an empty embedding", function(v) return v:upsert("x", {}) end, "invalid" },
      { "refuses a dimension mismatch on upsert", function(v)
        v:upsert("a", { 1, 2, 3 })
        return v:upsert("b", { 1, 2 })
      end, "invalid" },
      { "refuses a dimension mismatch on query", function(v)
        v:upsert("a", { 1, 2, 3 })
        return v:query({ 1, 2, 3, 4 })
      end, "invalid" },
      { "refuses an empty query embedding", function(v) return v:query({}) end, "invalid" },
      { "refuses a NaN component", function(v) return v:upsert("x", { 0 / 0 }) end, "invalid" },
      { "refuses metadata JSON cannot hold", function(v)
        return v:upsert("x", { 1 }, { f = function() end })
      end, "invalid" },
      { "answers not_found when deleting a missing id", function(v) return v:delete("nope") end,
        "not_found" },
    }
    for _, row in ipairs(errors) do
      it(row[1], function()
        local v = new()
        local ok, err = row[2](v)
        assert.is_nil(ok)
        assert.are.equal(row[3], err.code)
        v:close()
      end)
    end

    it("raises on arguments of the wrong type", function()
      local v = new()
      assert.has_error(function() v:upsert(1, { 1 }) end)
      assert.has_error(function() v:upsert("a", "1,2") end)
      assert.has_error(function() v:query({ 1 }, 0) end)
      assert.has_error(function() v:query({ 1 }, 2.5) end)
      v:close()
    end)

    it("deletes, so the id no longer comes back", function()
      local v = new()
      for i = 1, 5 do v:upsert("k" .. i, { i, 1 }) end
      assert.is_true((v:query({ 1, 0 }, 1)) ~= nil)
      assert.is_true(v:delete("k5"))
      assert.is_true(v:delete("k1"))
      local got = v:query({ 1, 0 }, 10)
      assert.are.equal(3, #got)
      for _, h in ipairs(got) do
        assert.is_true(h.id ~= "k5" and h.id ~= "k1")
      end
      assert.are.equal("k4", got[1].id)
      v:close()
    end)

    it("writes a batch, and writes nothing when one item is invalid", function()
      local v = new()
      assert.are.equal(2, v:upsert_batch{ { "a", { 1, 0 } }, { id = "b", embedding = { 0, 1 },
        metadata = { x = 1 } } })
      local ok, err = v:upsert_batch{ { "c", { 1, 1 } }, { "d", { 1, 1, 1 } } }
      assert.is_nil(ok)
      assert.are.equal("invalid", err.code)
      ok, err = v:upsert_batch{ { "e", { 1, 1 } }, { "f", {} } }
      assert.is_nil(ok)
      assert.are.equal("invalid", err.code)
      local got = v:query({ 1, 1 }, 10)
      assert.are.equal(2, #got)
      v:close()
    end)

    it("keeps only vectors whose metadata matches every filter key", function()
      local v = new()
      v:upsert("a", { 1, 0 }, { kind = "x" })
      v:upsert("b", { 1, 0.1 }, { kind = "y" })
      v:upsert("c", { 1, 0.2 }, { kind = "x", n = 2, on = true })
      v:upsert("d", { 1, 0.3 })
      local function ids(hits)
        local out = {}
        for i, h in ipairs(hits) do out[i] = h.id end
        return out
      end
      assert.are.same({ "a", "c" }, ids(assert(v:query({ 1, 0 }, 10, { filter = { kind = "x" } }))))
      assert.are.same({ "c" }, ids(assert(v:query({ 1, 0 }, 10, { filter = { kind = "x", n = 2 } }))))
      assert.are.same({ "c" }, ids(assert(v:query({ 1, 0 }, 10, { filter = { on = true } }))))
      assert.are.same({ "a" }, ids(assert(v:query({ 1, 0 }, 1, { filter = { kind = "x" } }))))
      assert.are.same({}, assert(v:query({ 1, 0 }, 10, { filter = { kind = "z" } })))
      assert.are.equal(4, #assert(v:query({ 1, 0 }, 10, { filter = {} })))
      v:delete("a")
      assert.are.same({ "c" }, ids(assert(v:query({ 1, 0 }, 10, { filter = { kind = "x" } }))))
      v:close()
    end)

    it("raises on a filter of the wrong shape", function()
      local v = new()
      v:upsert("a", { 1 })
      assert.has_error(function() v:query({ 1 }, 1, { filter = "kind" }) end)
      assert.has_error(function() v:query({ 1 }, 1, { filter = { ["a.b"] = 1 } }) end)
      assert.has_error(function() v:query({ 1 }, 1, { filter = { k = {} } }) end)
      v:close()
    end)

    it("answers closed after close", function()
      local v = new()
      v:close()
      local ok, err = v:upsert("a", { 1 })
      assert.is_nil(ok)
      assert.are.equal("closed", err.code)
    end)

    if caps.count_decodes then
      it("decodes metadata only for the top_k survivors", function()
        local v = new()
        local r = rng(7)
        for i = 1, 200 do v:upsert("m" .. i, random_vector(r, 8), { i = i }) end
        local before = caps.count_decodes()
        local got = v:query(random_vector(r, 8), 5)
        assert.are.equal(5, #got)
        assert.are.equal(5, caps.count_decodes() - before)
        v:close()
      end)
    end

    it("keeps recall@10 >= 0.95 against the exact scan with an approximate index", function()
      local v = new()
      local r = rng(21)
      local dim, centres = 16, {}
      for c = 1, 30 do centres[c] = random_vector(r, dim) end
      local function point()
        local c, p = centres[math.floor((r() + 1) / 2 * 30) % 30 + 1], {}
        for j = 1, dim do p[j] = c[j] + 0.3 * (r() + r() + r()) end
        return p
      end
      local batch = {}
      for i = 1, 3000 do batch[i] = { ("p%04d"):format(i), point() } end
      assert.are.equal(3000, v:upsert_batch(batch))
      local built, err = v:build_index{ seed = 1 }
      if not built then
        assert.are.equal("unsupported", err.code) -- an adapter without an index says so
        v:close()
        return
      end
      local found = 0
      for _ = 1, 40 do
        local q = point()
        local exact, seen = assert(v:query(q, 10, { exact = true })), {}
        for _, h in ipairs(assert(v:query(q, 10))) do seen[h.id] = true end
        for _, h in ipairs(exact) do if seen[h.id] then found = found + 1 end end
      end
      assert.is_true(found / 400 >= 0.95, ("recall@10 %.3f"):format(found / 400))
      v:close()
    end)
  end)
end
