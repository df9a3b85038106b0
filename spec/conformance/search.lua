-- The search battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.search")("db", function() return search end)
--
-- new() returns a fresh, empty zever.search (front-end) over the adapter. peek(s), when given
-- as caps.count, returns how many documents the adapter stores (to check atomic batches
-- without the search path).

return function(name, new, caps)
  caps = caps or {}
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  local corpus = {
    { id = "1", content = "The quick brown fox jumps over the lazy dog", metadata = { n = 1 } },
    { id = "2", content = "A fox, a fox, a fox: foxes everywhere and a fox den", metadata = { n = 2 } },
    { id = "3", content = "Dogs and cats live together", metadata = { n = 3 } },
    { id = "4", content = "Brown bread with butter", metadata = { n = 4 } },
    { id = "5", content = "Le café est très chaud à Zürich", metadata = { n = 5 } },
    { id = "6", index = "blog", content = "A fox in the blog index", metadata = { n = 6 } },
  }

  local function ids(res)
    local out = {}
    for i, h in ipairs(res.hits) do out[i] = h.id end
    return out
  end

  local function loaded()
    local s = new()
    assert.are.equal(#corpus, s:index_batch(corpus))
    return s
  end

  describe("search conformance: " .. name, function()
    it("ranks the document that says fox most often first", function()
      local s = loaded()
      local res = assert(s:search("fox", { index = "default" }))
      assert.are.equal(2, res.total)
      assert.are.same({ "2", "1" }, ids(res))
      assert.is_true(res.hits[1].score > res.hits[2].score)
      assert.are.equal("default", res.hits[1].index)
      assert.are.same({ n = 2 }, res.hits[1].metadata)
      s:close()
    end)

    it("orders every page by score, highest first, and pages in that order", function()
      local s = loaded()
      local all = assert(s:search("fox", { limit = 10 }))
      assert.are.equal(3, all.total)
      for i = 2, #all.hits do
        assert.is_true(all.hits[i - 1].score >= all.hits[i].score)
      end
      assert.are.equal("2", all.hits[1].id)
      local second = assert(s:search("fox", { limit = 1, offset = 1 }))
      assert.are.same({ all.hits[2].id }, ids(second))
      s:close()
    end)

    it("highlights the matches in the snippet", function()
      local s = loaded()
      local res = assert(s:search("lazy"))
      assert.are.equal(1, res.total)
      assert.is_truthy(res.hits[1].snippet:find("<b>lazy</b>", 1, true))
      s:close()
    end)

    it("pages with limit and offset and reports the total of every page", function()
      local s = new()
      local docs = {}
      for i = 1, 25 do
        docs[i] = { id = ("p%02d"):format(i), content = "page item " .. ("word "):rep(i % 3 + 1) }
      end
      assert(s:index_batch(docs))
      local seen = {}
      for page = 0, 2 do
        local res = assert(s:search("page", { limit = 10, offset = page * 10 }))
        assert.are.equal(25, res.total)
        assert.are.equal(page < 2 and 10 or 5, #res.hits)
        for _, h in ipairs(res.hits) do
          assert.is_nil(seen[h.id])
          seen[h.id] = true
        end
      end
      local past = assert(s:search("page", { offset = 100 }))
      assert.are.equal(25, past.total)
      assert.are.same({}, past.hits)
      s:close()
    end)

    it("filters by index, and searches every index without one", function()
      local s = loaded()
      local res = assert(s:search("fox", { index = "blog" }))
      assert.are.same({ "6" }, ids(res))
      assert.are.equal("blog", res.hits[1].index)
      assert.are.equal(3, assert(s:search("fox")).total)
      s:close()
    end)

    it("matches without diacritics and across case", function()
      local s = loaded()
      assert.are.same({ "5" }, ids(assert(s:search("cafe"))))
      assert.are.same({ "5" }, ids(assert(s:search("ZURICH"))))
      assert.are.same({ "5" }, ids(assert(s:search("très"))))
      s:close()
    end)

    -- Hostile or broken query syntax: never a raise, either a result or "invalid".
    local hostile = { '"unterminated', "fox AND", "(fox", "nosuchcol: fox", "NEAR(fox", "*",
      "fox' OR 1=1 --", "'); DROP TABLE zever_search; --", "\0", "AND OR NOT" }
    for _, q in ipairs(hostile) do
      it(("answers the hostile query %q with a result or invalid"):format(q), function()
        local s = loaded()
        local ok, res, err = pcall(s.search, s, q)
        assert.is_true(ok, tostring(res))
        if res == nil then
          assert.are.equal("invalid", err.code)
        else
          assert.is_number(res.total)
        end
        assert.are.equal(2, assert(s:search("fox", { index = "default" })).total)
        s:close()
      end)
    end

    it("replaces a document indexed again under the same id and index", function()
      local s = loaded()
      assert.is_true(s:index{ id = "1", content = "now about zebras", metadata = { v = 2 } })
      assert.are.equal(0, assert(s:search("lazy")).total)
      local res = assert(s:search("zebras"))
      assert.are.same({ "1" }, ids(res))
      assert.are.same({ v = 2 }, res.hits[1].metadata)
      assert.is_true(s:index{ id = "1", index = "blog", content = "zebras in the blog" })
      assert.are.equal(2, assert(s:search("zebras")).total)
      s:close()
    end)

    it("deletes from one index only, and answers not_found for a missing document", function()
      local s = loaded()
      s:index{ id = "1", index = "blog", content = "lazy blog" }
      assert.is_true(s:delete("1"))
      local res = assert(s:search("lazy"))
      assert.are.same({ "1" }, ids(res))
      assert.are.equal("blog", res.hits[1].index)
      local ok, err = s:delete("1")
      assert.is_nil(ok)
      assert.are.equal("not_found", err.code)
      assert.is_true(s:delete("1", { index = "blog" }))
      s:close()
    end)

    -- { name, batch, position named in the message }
    local invalid = {
      { "metadata JSON cannot hold", { { id = "a", content = "x" },
        { id = "b", content = "x", metadata = { f = print } } }, 2 },
      { "a missing id", { { id = "a", content = "x" }, { content = "x" } }, 2 },
      { "content that is not a string", { { id = "a", content = {} } }, 1 },
      { "an empty index", { { id = "a", content = "x" }, { id = "b", index = "", content = "x" } }, 2 },
    }
    for _, row in ipairs(invalid) do
      it("writes nothing when one document has " .. row[1], function()
        local s = new()
        local ok, err = s:index_batch(row[2])
        assert.is_nil(ok)
        assert.are.equal("invalid", err.code)
        assert.is_truthy(err.message:find("document " .. row[3], 1, true))
        assert.are.equal(0, assert(s:search("x")).total)
        if caps.count then assert.are.equal(0, caps.count(s)) end
        s:close()
      end)
    end

    it("answers a blank query with nothing", function()
      local s = loaded()
      assert.are.same({ total = 0, hits = {} }, s:search("   "))
      s:close()
    end)

    it("raises on arguments of the wrong type", function()
      local s = new()
      assert.has_error(function() s:search(42) end)
      assert.has_error(function() s:search("x", { limit = 0 }) end)
      assert.has_error(function() s:search("x", { offset = -1 }) end)
      assert.has_error(function() s:index("doc") end)
      s:close()
    end)

    it("finds the same documents after flush, reindex and optimize", function()
      local s = loaded()
      assert.is_true((s:index{ id = "7", content = "a late fox" }))
      assert.is_true(s:flush())
      local before = assert(s:search("fox", { limit = 10 }))
      assert.are.equal(4, before.total)
      local seen = {}
      local function progress(done, total) seen[#seen + 1] = { done, total } end
      local n = assert(s:reindex{ progress = progress })
      assert.are.equal(#corpus + 1, n)
      assert.are.same({ #corpus + 1, #corpus + 1 }, seen[#seen])
      assert.are.same(ids(before), ids(assert(s:search("fox", { limit = 10 }))))
      assert.are.equal(1, assert(s:reindex{ index = "blog" }))
      assert.is_true(s:optimize())
      assert.are.same(ids(before), ids(assert(s:search("fox", { limit = 10 }))))
      assert.has_error(function() s:reindex{ index = 3 } end)
      assert.has_error(function() s:reindex{ progress = true } end)
      s:close()
    end)

    it("answers closed after close", function()
      local s = new()
      s:close()
      local ok, err = s:search("x")
      assert.is_nil(ok)
      assert.are.equal("closed", err.code)
    end)
  end)
end
