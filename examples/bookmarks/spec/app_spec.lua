-- The bookmarks app's own spec (docs/testing.md walks through it): every route in-process, the
-- job and its mail, the limiter, and the same app served on a real socket.
local testing = require "zever.testing"

-- The app folder: this file's parent's parent, so the spec runs from any directory.
local APP = debug.getinfo(1, "S").source:match("^@(.*)/spec/[^/]*$") or "."

describe("bookmarks", function()
  local t
  before_each(function() t = testing.app(APP) end)   -- a fresh database, cache and limiter
  after_each(function() t:close() end)

  local ann = { headers = { ["X-User"] = "ann" } }

  it("creates a bookmark and lists it", function()
    local res = t:post("/bookmarks", { json = { url = "https://lua.org/manual" },
      headers = ann.headers })
    assert.are.equal(201, res.status)
    assert.are.equal("https://lua.org/manual", res:json().url)
    local list = t:get("/bookmarks", ann):json().bookmarks
    assert.are.equal(1, #list)
    assert.are.equal("ann", list[1].owner)
  end)

  it("rejects a body without a URL", function()
    local res = t:post("/bookmarks", { json = { url = "lua.org" }, headers = ann.headers })
    assert.are.equal(422, res.status)
    assert.are.same({ error = "invalid_url" }, res:json())
  end)

  it("answers 404 for another user's bookmark", function()
    local id = t:post("/bookmarks", { json = { url = "https://a.example" }, headers = ann.headers })
      :json().id
    assert.are.equal(200, t:get("/bookmarks/" .. id, ann).status)
    assert.are.equal(404, t:get("/bookmarks/" .. id, { headers = { ["X-User"] = "bob" } }).status)
  end)

  it("caches the list until a bookmark changes it", function()
    assert.are.equal("miss", t:get("/bookmarks", ann).headers["x-cache"])
    assert.are.equal("hit", t:get("/bookmarks", ann).headers["x-cache"])
    t:post("/bookmarks", { json = { url = "https://b.example" }, headers = ann.headers })
    assert.are.equal("miss", t:get("/bookmarks", ann).headers["x-cache"])
  end)

  it("fills the title in a job and mails the first bookmark only", function()
    t:post("/bookmarks", { json = { url = "https://www.lua.org/about.html" }, headers = ann.headers })
    t:post("/bookmarks", { json = { url = "https://luajit.org" }, headers = ann.headers })
    assert.is_nil(t:get("/bookmarks/1", ann):json().title)   -- not run yet: it is queued
    local ran = testing.perform_jobs()
    assert.are.same({ ran = 2, done = 2, failed = 0 }, ran)
    assert.are.equal("www.lua.org", t:get("/bookmarks/1", ann):json().title)
    local mails = testing.mails()
    assert.are.equal(1, #mails)
    assert.are.equal("ann@example.com", mails[1].to)
    assert.are.equal("Your first bookmark", mails[1].subject)
    assert.are.equal("bookmarks@example.com", mails[1].from)
  end)

  it("limits each user to the burst of zever.test.yaml", function()
    for _ = 1, 10 do assert.are.equal(200, t:get("/bookmarks", ann).status) end
    local res = t:get("/bookmarks", ann)
    assert.are.equal(429, res.status)
    assert.is_truthy(tonumber(res.headers["retry-after"]) >= 1)
    assert.are.equal(200, t:get("/bookmarks", { headers = { ["X-User"] = "bob" } }).status)
  end)

  it("serves the same app on a real socket", function()
    local srv = t:serve()
    local res = srv:post("/bookmarks", { json = { url = "https://lua.org" }, headers = ann.headers })
    assert.are.equal(201, res.status)
    assert.are.equal(1, #t:get("/bookmarks", ann):json().bookmarks)   -- the same database
    assert.are.equal(401, srv:get("/bookmarks").status)
    srv:close()
  end)
end)
