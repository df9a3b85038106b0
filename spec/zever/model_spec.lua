-- zever.model, the runtime of the models.lua that `zever gen` writes, tested directly with
-- hand-written definitions over a real SQLite database (the generated module is covered by
-- spec/dsl/gen_e2e_spec.lua).

local model = require "zever.model"
local zdb = require "zever.db"

local ID = "0b7f2a52-5d2e-4c8a-9d8e-1f6c2b3a4d5e"

local function defs()
  return {
    Post = {
      name = "Post", module = "blog", table = "posts", primary_key = "id",
      columns = {
        { name = "id", kind = "int64", sql = "bigint", primary = true },
        { name = "title", kind = "string", required = true, validate = { min_len = 2, max_len = 5 } },
        { name = "status", kind = "enum", values = { "draft", "live" }, required = true },
        { name = "score", kind = "float64", nullable = true, validate = { gte = 0, lt = 10 } },
        { name = "author_id", kind = "uuid", required = true },
        { name = "site", kind = "string", nullable = true, validate = { format = "url" } },
        { name = "cover", kind = "bytes", nullable = true, validate = { max_len = 2 } },
        { name = "public", kind = "bool", nullable = true },
        { name = "tags", kind = "list", nullable = true },
        { name = "meta", kind = "json", nullable = true },
      },
      relations = { author = { kind = "belongs_to", target = "Author", foreign_key = "author_id",
        references = "id", table = "authors" } },
    },
    Author = {
      name = "Author", module = "blog", table = "authors", primary_key = "id",
      columns = {
        { name = "id", kind = "uuid", required = true, primary = true },
        { name = "email", kind = "string", required = true, validate = { format = "email" } },
      },
      relations = { posts = { kind = "has_many", target = "Post", foreign_key = "author_id",
        references = "id", table = "posts" } },
    },
  }
end

-- Raises unless fn raises; returns the message, which must blame this file (error(msg, 2)).
local function raises(fn)
  local ok, err = pcall(fn)
  assert.is_false(ok, "expected a raise")
  assert.is_truthy(err:find("model_spec.lua:%d+: "), "the caller is not blamed: " .. tostring(err))
  return err
end

describe("zever.model", function()
  local d = defs()
  local models = model.link({ Post = model.new(d.Post), Author = model.new(d.Author) })
  local Post, Author = models.Post, models.Author
  local VALID = { title = "hey", status = "draft", author_id = ID }

  local function with(changes)
    local row = {}
    for k, v in pairs(VALID) do row[k] = v end
    for k, v in pairs(changes) do row[k] = v end
    return row
  end

  describe("new", function()
    it("carries its definition, a column node per column and a validator", function()
      assert.is_true(model.is_model(Post))
      assert.are.equal("posts", tostring(Post))
      assert.are.same({ "blog", "Post", "id" }, { Post.module, Post.name, Post.primary_key })
      assert.are.equal(d.Post.columns, Post.columns)
      assert.are.equal(10, #Post.rules)
      assert.are.equal("function", type(Post.validate))
      assert.is_false(model.is_model(zdb.col("posts")))
    end)

    it("renders as its table and its columns as table.column in the query builder", function()
      local db = assert(zdb.open("sqlite::memory:"))
      assert(db:exec("CREATE TABLE authors (id TEXT PRIMARY KEY, email TEXT)"))
      assert(db:exec("CREATE TABLE posts (id INTEGER PRIMARY KEY, title TEXT, status TEXT, "
        .. "author_id TEXT)"))
      assert(db:insert_into(Author):values{ id = ID, email = "a@b.io" }:exec())
      assert(db:insert_into(Post):values{ title = "hey", status = "live", author_id = ID }:exec())
      local row = assert(db:from(Post):select(Post.c.title, Author.c.email)
        :join(Author, Author.c.id, "=", Post.c.author_id):where(Post.c.status, "live"):first())
      assert.are.same({ title = "hey", email = "a@b.io" }, row)
      db:close()
    end)
  end)

  describe("validate", function()
    it("accepts a valid row", function()
      assert.is_true(Post.validate(VALID))
      assert.is_true(Post.validate(with({ score = 9.5, public = false, tags = {}, meta = "any",
        site = "https://x.io/a", cover = "ab" })))
    end)

    -- name, changes to a valid row, expected { field = message }
    local rows = {
      { "false where a string goes", { title = false }, { title = "must be a string" } },
      { "a null required field", { status = zdb.null }, { status = "is required" } },
      { "a title that is too short, in characters", { title = "é" },
        { title = "must be at least 2 characters long" } },
      { "a title that is too long", { title = "éééééé" },
        { title = "must be at most 5 characters long" } },
      { "a value that is not in the enum", { status = "gone" },
        { status = "must be one of draft, live" } },
      { "a fractional integer", { id = 1.5 }, { id = "must be an integer" } },
      { "a number below gte", { score = -1 }, { score = "must be at least 0" } },
      { "a number at lt", { score = 10 }, { score = "must be less than 10" } },
      { "a malformed uuid", { author_id = "x" }, { author_id = "must be a UUID" } },
      { "a bad url", { site = "nope" }, { site = "must be a URL" } },
      { "bytes over max_len", { cover = "abc" }, { cover = "must be at most 2 bytes long" } },
      { "a string for a bool", { public = "yes" }, { public = "must be true or false" } },
      { "a string for a list", { tags = "a" }, { tags = "must be a list or an object" } },
      { "a number for a string", { title = 12 }, { title = "must be a string" } },
    }
    for _, row in ipairs(rows) do
      it("rejects " .. row[1], function()
        local ok, errs = Post.validate(with(row[2]))
        assert.is_nil(ok)
        assert.are.same(row[3], errs)
      end)
    end

    it("names every missing required field and skips them when partial", function()
      local ok, errs = Post.validate({})
      assert.is_nil(ok)
      assert.are.same({ title = "is required", status = "is required", author_id = "is required" },
        errs)
      assert.is_true(Post.validate({ title = "ok" }, true))
      ok, errs = Author.validate({ email = "a@b" }, true)
      assert.is_nil(ok)
      assert.are.same({ email = "must be an email address" }, errs)
    end)

    it("raises when the row is not a table", function()
      raises(function() Post.validate("row") end)
    end)
  end)

  describe("link", function()
    it("points each relation at its target model", function()
      assert.are.equal(Author, Post.relations.author.model)
      assert.are.equal(Post, Author.relations.posts.model)
    end)

    it("raises on a value that is not a model or a relation to a missing model", function()
      raises(function() model.link("models") end)
      assert.is_truthy(raises(function() model.link({ Post = { relations = {} } }) end)
        :find("Post is not a model", 1, true))
      local lonely = defs().Post
      assert.is_truthy(raises(function() model.link({ Post = model.new(lonely) }) end)
        :find("relation Post.author names Author, which is not a model", 1, true))
    end)
  end)

  describe("misuse", function()
    -- name, a change to a valid definition, a fragment of the message
    local rows = {
      { "a definition that is not a table", function() return "posts" end, "definition table" },
      { "no table name", function(def) def.table = nil end, "def.table must be a table name" },
      { "no columns", function(def) def.columns = nil end, "def.columns must be a list" },
      { "a column without a name", function(def) def.columns[2] = { kind = "string" } end,
        "posts column 2 has no name" },
      { "an unknown format", function(def) def.columns[6].validate.format = "phone" end,
        'posts.site: unknown format "phone"' },
      { "an enum without values", function(def) def.columns[3].values = nil end,
        "posts.status is an enum without values" },
      { "relations that are not a table", function(def) def.relations = 1 end,
        "def.relations must be a table" },
    }
    for _, row in ipairs(rows) do
      it("raises from new on " .. row[1], function()
        local def = defs().Post
        def = row[2](def) or def
        assert.is_truthy(raises(function() model.new(def) end):find(row[3], 1, true))
      end)
    end
  end)
end)
