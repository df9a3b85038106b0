-- zever generate and zever add, through the real binary on an app `zever new` wrote: schema
-- declarations appended only when the schema still compiles, handler stubs at once, files
-- never overwritten; zever.yaml sections added once, a conflicting adapter refused.

local process = require "spec.support.process"
local fs = require "spec.support.files"
local sys = require "zever.sys"

local quote = process.quote

local function zever_in(dir, ...)
  local parts = { "cd " .. quote(dir) .. " &&", quote(sys.exe()) }
  for i = 1, select("#", ...) do parts[#parts + 1] = quote((select(i, ...))) end
  return process.run(table.concat(parts, " "))
end

describe("zever generate", function()
  local root, app
  before_each(function()
    root = fs.tmpdir()
    app = root .. "/blog"
    assert.are.equal(0, zever_in(root, "new", "blog").code)
  end)
  after_each(function() os.execute("rm -rf " .. quote(root)) end)

  it("appends an entity, an rpc, a job and a schedule that compile, with stubs", function()
    local rows = {
      { { "entity", "Post", "title:string", "body:string?" },
        "added entity Post to schema/app.zen\nnext: zever gen, then zever migrate up (its table)" },
      { { "rpc", "PostService.GetPost", "id:int64", "--http", "GET /posts/{id}", "--auth", "none",
        "--returns", "Post" }, "added stub handlers/post_service.lua: PostService.GetPost" },
      { { "rpc", "PostService.Publish", "id:int64" }, "added stub handlers/post_service.lua: PostService.Publish" },
      { { "job", "IndexPost", "post_id:int64" }, "added stub handlers/jobs.lua: job IndexPost" },
      { { "schedule", "Nightly", "--cron", "0 3 * * *", "--dispatch", "IndexPost(post_id: 1)" },
        "added schedule Nightly" },
    }
    for _, row in ipairs(rows) do
      local r = zever_in(app, "generate", unpack(row[1]))
      assert.are.equal(0, r.code, r.stderr)
      assert.matches(row[2], r.stdout, 1, true)
      -- app.lua of zever new registers the generated routes: no hint to add them.
      assert.is_nil(r.stdout:find("then in app.lua", 1, true))
    end
    local zen = fs.read(app .. "/schema/app.zen")
    assert.matches("entity Post {\n  id: int64 @primary\n  title: string\n  body: string?\n}", zen, 1, true)
    assert.matches('service PostService {\n  rpc GetPost(id: int64) -> Post {\n    http: GET "/posts/{id}"\n' ..
      '    auth: none\n  }\n  rpc Publish(id: int64) {\n    http: POST "/post/publish"\n    auth: required\n  }\n}',
      zen, 1, true)
    assert.matches('job IndexPost(post_id: int64) {\n  queue: default\n}\n\n' ..
      'schedule Nightly {\n  cron: "0 3 * * *"\n  dispatch: IndexPost(post_id: 1)\n}\n', zen, 1, true)
    assert.are.equal(0, zever_in(app, "check").code)
    -- What generate writes is zever fmt's form: the schema needs no formatting.
    local f = zever_in(app, "fmt", "--check")
    assert.are.equal(0, f.code, f.stdout .. f.stderr)
    local g = zever_in(app, "gen")
    assert.are.equal(0, g.code, g.stderr)
    assert.are.equal("", g.stdout)   -- every stub is there already
    -- The entity's table: gen wrote its migration into the app's migrations/, migrate up
    -- applies it with the app's own.
    local r = zever_in(app, "migrate", "up")
    assert.are.equal(0, r.code, r.stderr)
    r = process.run("sqlite3 " .. quote(app .. "/data/app.db") .. " .schema")
    assert.matches('CREATE TABLE IF NOT EXISTS "posts" (', r.stdout, 1, true)
  end)

  it("says how to register the generated routes and jobs when app.lua does not", function()
    -- An app.lua of an older zever new, without the registration.
    fs.write(app .. "/app.lua", 'local app = require("zever").app()\nreturn app\n')
    local r = zever_in(app, "generate", "rpc", "PostService.Publish", "id:int64")
    assert.are.equal(0, r.code, r.stderr)
    assert.matches('then in app.lua: require("generated.routes").register(app', r.stdout, 1, true)
    r = zever_in(app, "generate", "job", "IndexPost", "post_id:int64")
    assert.are.equal(0, r.code, r.stderr)
    assert.matches('then in app.lua: require("generated.jobs").register(app)', r.stdout, 1, true)
  end)

  it("registers the generated jobs from a new app's app.lua: no hint", function()
    local r = zever_in(app, "generate", "job", "IndexPost", "post_id:int64")
    assert.are.equal(0, r.code, r.stderr)
    assert.is_nil(r.stdout:find("then in app.lua", 1, true))
    assert.matches('require("generated.jobs").register(app)', fs.read(app .. "/app.lua"), 1, true)
  end)

  it("names the field a path parameter needs instead of compiling a schema without it (exit 2)", function()
    local before = fs.read(app .. "/schema/app.zen")
    local r = zever_in(app, "generate", "rpc", "PostService.GetPost", "--http", "GET /posts/{id}")
    assert.are.equal(2, r.code)
    assert.matches("--http's path names {id}: give it as a field too (id:int64)", r.stderr, 1, true)
    r = zever_in(app, "generate", "rpc", "PostService.BySlug", "--http", "GET /p/{slug}")
    assert.matches("(slug:string)", r.stderr, 1, true)
    assert.are.equal(before, fs.read(app .. "/schema/app.zen"))
  end)

  it("prints what it added, or would add, as JSON with --json", function()
    local json = require "zever.json"
    local before = fs.read(app .. "/schema/app.zen")
    local r = zever_in(app, "generate", "job", "IndexPost", "post_id:int64", "--dry-run", "--json")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.same({ dry_run = true, kind = "job", name = "IndexPost",
      declaration = "job IndexPost(post_id: int64) {\n  queue: default\n}\n",
      actions = { { action = "append", target = "schema/app.zen" } } }, json.decode(r.stdout))
    assert.are.equal(before, fs.read(app .. "/schema/app.zen"))
    r = zever_in(app, "generate", "job", "IndexPost", "post_id:int64", "--json")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.same({ kind = "job", name = "IndexPost", file = "schema/app.zen",
      declaration = "job IndexPost(post_id: int64) {\n  queue: default\n}\n",
      stubs = { "handlers/jobs.lua: job IndexPost" } }, json.decode(r.stdout))
    assert.are.equal(before .. "\njob IndexPost(post_id: int64) {\n  queue: default\n}\n",
      fs.read(app .. "/schema/app.zen"))
    r = zever_in(app, "generate", "migration", "add_tags", "--json")
    assert.are.same({ kind = "migration", name = "add_tags", file = "migrations/0001_add_tags.lua" },
      json.decode(r.stdout))
    r = zever_in(app, "generate", "migration", "more", "--dry-run", "--json")
    assert.are.same({ { action = "write", target = "migrations/0002_more.lua" } }, json.decode(r.stdout).actions)
    assert.is_nil(fs.slurp(app .. "/migrations/0002_more.lua"))
    -- A schema that would not compile: the diagnostics in the one error object on stderr.
    r = zever_in(app, "generate", "schedule", "N", "--cron", "0 3 * * *", "--dispatch", "Nope", "--json")
    assert.are.equal(1, r.code)
    assert.are.equal("", r.stdout)
    local e = json.decode(r.stderr).error
    assert.matches("unknown job Nope", e.message, 1, true)
    assert.matches("is unchanged", e.message, 1, true)
  end)

  it("refuses, as zever add does, a folder that is not an app (exit 1, nothing written)", function()
    local bare = root .. "/bare"
    os.execute("mkdir -p " .. quote(bare))
    for _, args in ipairs({ { "generate", "entity", "Post", "title:string" }, { "generate", "spec", "x" },
      { "add", "cache" } }) do
      local r = zever_in(bare, unpack(args))
      assert.are.equal(1, r.code, table.concat(args, " "))
      assert.matches("is not an app folder (no app.lua, zever.yaml or zever.json)", r.stderr, 1, true)
    end
    assert.are.equal("", process.output("ls -A " .. quote(bare)))
    -- --app names the app from elsewhere.
    local r = zever_in(bare, "generate", "entity", "Post", "title:string", "--app", app)
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("entity Post {", fs.read(app .. "/schema/app.zen"), 1, true)
  end)

  it("writes nothing when the schema would not compile", function()
    local before = fs.read(app .. "/schema/app.zen")
    local r = zever_in(app, "generate", "schedule", "Nightly", "--cron", "0 3 * * *", "--dispatch", "Nope")
    assert.are.equal(1, r.code)
    assert.matches("unknown job Nope", r.stderr, 1, true)
    assert.matches("is unchanged", r.stderr, 1, true)
    assert.are.equal(before, fs.read(app .. "/schema/app.zen"))
    r = zever_in(app, "generate", "entity", "Post", "title:nosuchtype")
    assert.are.equal(1, r.code)
    assert.are.equal(before, fs.read(app .. "/schema/app.zen"))
  end)

  it("keeps one migration sequence: gen's tables after the app's own, for migrate and zever test", function()
    local json = require "zever.json"
    assert.are.equal(0, zever_in(app, "generate", "migration", "add_tags").code)
    assert.are.equal(0, zever_in(app, "generate", "entity", "Post", "title:string").code)
    local g = zever_in(app, "gen", "--json")
    assert.are.equal(0, g.code, g.stderr)
    local written = json.decode(g.stdout).written
    assert.is_truthy(fs.slurp(app .. "/migrations/0002_create_posts.lua"), table.concat(written, " "))
    assert.is_truthy(fs.slurp(app .. "/migrations/schema.snapshot.lua"))
    assert.is_nil(fs.slurp(app .. "/generated/migrations/schema.snapshot.lua"))
    -- A spec of the app reads the entity's table: zever test applied migrations/ whole.
    fs.write(app .. "/spec/posts_table_spec.lua", table.concat({
      'local testing = require "zever.testing"',
      'local APP = debug.getinfo(1, "S").source:match("^@(.*)/spec/[^/]*$") or "."',
      'describe("posts", function()',
      '  it("has the generated table", function()',
      '    local t = testing.app(APP)',
      '    t.app.db:exec("INSERT INTO posts (title) VALUES (?)", "first")',
      '    assert.are.equal("first", t.app.db:first("SELECT title FROM posts").title)',
      '    t:close()',
      '  end)',
      'end)', "" }, "\n"))
    local t = zever_in(app, "test", "spec/posts_table_spec.lua")
    assert.are.equal(0, t.code, t.stdout .. t.stderr)
    assert.matches("1 passed, 0 failed", t.stdout, 1, true)
    -- The next entity comes after a hand-written migration added meanwhile.
    assert.are.equal(0, zever_in(app, "generate", "migration", "seed_tags").code) -- 0003
    assert.are.equal(0, zever_in(app, "generate", "entity", "Tag", "name:string").code)
    g = zever_in(app, "gen")
    assert.are.equal(0, g.code, g.stderr)
    assert.is_truthy(fs.slurp(app .. "/migrations/0004_create_tags.lua"))
    local r = zever_in(app, "migrate", "up")
    assert.are.equal(0, r.code, r.stderr)
    r = zever_in(app, "migrate", "status", "--json")
    local names = {}
    for _, m in ipairs(json.decode(r.stdout)) do
      names[#names + 1] = m.version .. "_" .. m.name .. ":" .. tostring(m.applied)
    end
    assert.are.same({ "0001_add_tags:true", "0002_create_posts:true", "0003_seed_tags:true",
      "0004_create_tags:true" }, names)
    -- Nothing changed: gen writes nothing new (the snapshot keeps its bytes).
    local snap = fs.read(app .. "/migrations/schema.snapshot.lua")
    g = zever_in(app, "gen", "--json")
    assert.are.same({}, json.decode(g.stdout).written)
    assert.are.equal(snap, fs.read(app .. "/migrations/schema.snapshot.lua"))
  end)

  it("refuses an older layout's generated/migrations with what to do, writing nothing", function()
    assert.are.equal(0, zever_in(app, "generate", "entity", "Post", "title:string").code)
    os.execute("mkdir -p " .. quote(app .. "/generated/migrations"))
    fs.write(app .. "/generated/migrations/0001_create_posts.lua", "return { up = function() end }\n")
    local r = zever_in(app, "gen")
    assert.are.equal(1, r.code)
    assert.matches("generated/migrations holds migrations from an older zever gen", r.stderr, 1, true)
    assert.matches("move generated/migrations/* there", r.stderr, 1, true)
    assert.is_nil(fs.slurp(app .. "/generated/models.lua"))
    assert.is_nil(fs.slurp(app .. "/migrations/schema.snapshot.lua"))
  end)

  it("writes a spec and a migration, and never overwrites a spec", function()
    local r = zever_in(app, "generate", "spec", "posts")
    assert.are.equal(0, r.code, r.stderr)
    r = zever_in(app, "generate", "spec", "posts")
    assert.are.equal(1, r.code)
    assert.matches("exists", r.stderr, 1, true)
    r = zever_in(app, "generate", "migration", "add_tags")
    assert.are.equal(0, r.code, r.stderr)
    assert.is_truthy(fs.slurp(app .. "/migrations/0001_add_tags.lua"))
    local t = zever_in(app, "test")
    assert.are.equal(0, t.code, t.stdout .. t.stderr)
    assert.matches("4 passed, 0 failed", t.stdout, 1, true)
  end)

  it("refuses unknown kinds and bad names (exit 2)", function()
    local rows = {
      { { "entiy", "Post" }, 'unknown kind "entiy"; did you mean "entity"?' },
      { { "entity", "post" }, "a name is CamelCase" },
      { { "entity", "Post", "title" }, "want field:type items" },
      { { "rpc", "GetPost" }, "an rpc is named Service.Rpc" },
    }
    for _, row in ipairs(rows) do
      local r = zever_in(app, "generate", unpack(row[1]))
      assert.are.equal(2, r.code, row[2])
      assert.matches(row[2], r.stderr, 1, true)
    end
  end)
end)

describe("zever add", function()
  local root, app
  before_each(function()
    root = fs.tmpdir()
    app = root .. "/shop"
    assert.are.equal(0, zever_in(root, "new", "shop").code)
  end)
  after_each(function() os.execute("rm -rf " .. quote(root)) end)

  it("adds a battery and what it needs once, and the app still passes its tests", function()
    local r = zever_in(app, "add", "jobs")
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("added to .-: queue %(db%), jobs %(queue%)", r.stdout)
    local once = fs.read(app .. "/zever.yaml")
    r = zever_in(app, "add", "jobs")
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("already configured: db (sqlite), queue (db), jobs (queue)", r.stdout, 1, true)
    assert.are.equal(once, fs.read(app .. "/zever.yaml"))
    local t = zever_in(app, "test")
    assert.are.equal(0, t.code, t.stdout .. t.stderr)
  end)

  it("adds a Redis adapter with the redis section, and refuses another adapter later", function()
    local r = zever_in(app, "add", "cache/redis")
    assert.are.equal(0, r.code, r.stderr)
    local yaml = fs.read(app .. "/zever.yaml")
    assert.matches("redis:\n  url: redis://127.0.0.1:6379/0", yaml, 1, true)
    assert.matches("cache:\n  adapter: redis\n", yaml, 1, true)
    r = zever_in(app, "add", "cache/memory")
    assert.are.equal(1, r.code)
    assert.matches("cache is configured with adapter redis", r.stderr, 1, true)
    assert.are.equal(yaml, fs.read(app .. "/zever.yaml"))
    r = zever_in(app, "add", "cache/redsi")
    assert.are.equal(2, r.code)
    assert.matches('did you mean "redis"?', r.stderr, 1, true)
  end)
end)
