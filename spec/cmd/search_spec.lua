-- zever search reindex|optimize, end to end: the real binary on a throwaway app (written to a
-- temporary folder by this spec) whose database is a fresh SQLite file shared with this
-- process, which indexes documents, damages the FTS5 index and reads what the command did.

local process = require "spec.support.process"
local sys = require "zever.sys"
local zever_db = require "zever.db"
local search = require "zever.search"
local db_search = require "adapters.search.db"

local quote = process.quote

local dir, path, db, s

local function zever_search(...)
  local parts = { "DB_DSN=" .. quote("sqlite:" .. path), "LOG_LEVEL=error", quote(sys.exe()),
    "search" }
  for i = 1, select("#", ...) do parts[#parts + 1] = quote((select(i, ...))) end
  parts[#parts + 1] = "--app"
  parts[#parts + 1] = quote(dir)
  return process.run(table.concat(parts, " "))
end

-- Drops every entry of the FTS5 index behind the adapter's back (the documents stay).
local function wipe_index()
  assert(s:flush())
  assert(db:exec("INSERT INTO zever_search_fts(zever_search_fts) VALUES ('delete-all')"))
end

describe("zever search", function()
  before_each(function()
    dir = require("spec.support.files").tmpdir()
    local f = assert(io.open(dir .. "/app.lua", "w"))
    f:write('return require("zever").app()\n')
    f:close()
    path = dir .. "/app.db"
    db = assert(zever_db.open("sqlite:" .. path))
    s = search.wrap(assert(db_search.new(db)))
    local docs = {}
    for i = 1, 25 do
      docs[i] = { id = "d" .. i, index = i % 5 == 0 and "blog" or "default",
        content = "document number " .. i .. (i % 2 == 0 and " even" or " odd") }
    end
    assert(s:index_batch(docs))
  end)

  after_each(function()
    db:close()
    for _, name in ipairs{ "app.lua", "app.db", "app.db-wal", "app.db-shm" } do
      os.remove(dir .. "/" .. name)
    end
    os.remove(dir)
  end)

  it("reindex rebuilds a damaged index and prints one summary line when piped", function()
    wipe_index()
    assert.are.equal(0, s:search("document").total)
    local r = zever_search("reindex")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("", r.stderr)
    assert.is_truthy(r.stdout:match("^reindexed 25 document%(s%) in [%d.]+s\n$"), r.stdout)
    assert.are.equal(25, s:search("document", { limit = 50 }).total)
    assert.are.equal(12, s:search("even", { limit = 50 }).total)
  end)

  it("reindex --index reindexes the documents of one index only", function()
    local r = zever_search("reindex", "--index", "blog")
    assert.are.equal(0, r.code, r.stderr)
    assert.is_truthy(r.stdout:find('reindexed 5 document(s) of index "blog"', 1, true), r.stdout)
    assert.are.equal(25, s:search("document", { limit = 50 }).total)
    local res = s:search("document", { limit = 50, index = "blog" })
    assert.are.equal(5, res.total)
    for _, h in ipairs(res.hits) do assert.are.equal("blog", h.index) end
  end)

  it("reindex --index on a damaged index fails and points to a full reindex", function()
    wipe_index()
    local r = zever_search("reindex", "--index", "blog")
    assert.are.equal(1, r.code)
    assert.is_truthy(r.stderr:find("reindex every index", 1, true), r.stderr)
    assert.are.equal(0, s:search("document").total) -- rolled back: nothing half done
    assert.are.equal(0, zever_search("reindex").code)
    assert.are.equal(25, s:search("document", { limit = 50 }).total)
  end)

  it("draws a progress bar on stderr when it is a terminal", function()
    local cmd = quote(sys.exe()) .. " search reindex --app " .. quote(dir)
    -- NO_COLOR: the bar's filled part is plain (progress_spec checks the colour).
    local r = process.run("NO_COLOR=1 DB_DSN=" .. quote("sqlite:" .. path) .. " LOG_LEVEL=error " ..
      "script -qec " .. quote(cmd) .. " /dev/null")
    assert.are.equal(0, r.code, r.stderr)
    local bar = "reindex [" .. ("#"):rep(30) .. "] 100% 25/25"
    assert.is_truthy(r.stdout:find(bar, 1, true), r.stdout)
    assert.is_truthy(r.stdout:find("reindexed 25 document(s)", 1, true), r.stdout)
  end)

  it("optimize merges the index into one segment", function()
    for round = 1, 4 do
      assert(s:index{ id = "x" .. round, content = "segment round " .. round })
      assert(s:flush())
    end
    local function segments()
      -- FTS5 keeps its structure record in the _data table at id 10: more segments, more bytes.
      return #db:first("SELECT block FROM zever_search_fts_data WHERE id = 10").block
    end
    local before = segments()
    local r = zever_search("optimize")
    assert.are.equal(0, r.code, r.stderr)
    assert.are.equal("optimized the search index\n", r.stdout)
    assert.is_true(segments() < before)
    assert.are.equal(4, s:search("segment").total)
  end)

  it("exits 2 with a suggestion on an unknown subcommand", function()
    local r = zever_search("reindx")
    assert.are.equal(2, r.code)
    assert.is_truthy(r.stderr:find('did you mean "reindex"', 1, true), r.stderr)
    r = zever_search("optimize", "--index", "blog")
    assert.are.equal(2, r.code)
  end)
end)
