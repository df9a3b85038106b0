-- examples/bookmarks: a small bookmarks API, the app docs/testing.md tests end to end. It uses
-- the database (a migration), the cache (the list of a user's bookmarks), the limiter (as
-- middleware, per API key), a job (fetch a page's title after a bookmark is created) and a mail
-- (a welcome mail, sent by that job for a user's first bookmark).
local zever = require "zever"
local rate_limit = require "zever.middleware.rate_limit"

local app = zever.app()

-- Every request names its user in X-User; each user may make `limiter.burst` requests at once,
-- refilled at `limiter.rate` a second (zever.yaml), through the app's limiter.
app:use(rate_limit{ key = function(req) return req:header("x-user") end,
  limiter = function() return app.limiter end })

local function user_of(req, res)
  local user = req:header("x-user")
  if not user or user == "" then return nil, res:status(401):json({ error = "no_user" }) end
  return user
end

app:get("/bookmarks", function(req, res)
  local user, answer = user_of(req, res)
  if not user then return answer end
  local key = "bookmarks:" .. user
  local list = app.cache:get(key)
  if list == nil then
    list = app.db:from("bookmarks"):where("owner", user):order_by("id"):all()
    app.cache:set(key, list, 60)
    res:header("x-cache", "miss")
  else
    res:header("x-cache", "hit")
  end
  return res:json({ bookmarks = list })
end)

app:post("/bookmarks", function(req, res)
  local user, answer = user_of(req, res)
  if not user then return answer end
  local body = req:json()
  if type(body) ~= "table" or type(body.url) ~= "string" or not body.url:match("^https?://") then
    return res:status(422):json({ error = "invalid_url" })
  end
  local first = app.db:from("bookmarks"):where("owner", user):first() == nil
  app.db:insert_into("bookmarks"):values({ owner = user, url = body.url }):exec()
  local row = app.db:from("bookmarks"):where("owner", user):order_by("id", "desc"):first()
  app.cache:delete("bookmarks:" .. user)
  app.jobs:dispatch("fetch_title", { id = row.id, first = first })
  return res:status(201):json(row)
end)

app:get("/bookmarks/:id", function(req, res)
  local user, answer = user_of(req, res)
  if not user then return answer end
  local row = app.db:from("bookmarks"):where("id", tonumber(req.params.id))
    :where("owner", user):first()
  if not row then return res:status(404):json({ error = "not_found" }) end
  return row
end)

-- The job: a real app would fetch the page; this one derives a title from the URL, so the
-- example runs offline. The first bookmark of a user also sends a welcome mail.
app.jobs:register("fetch_title", function(args)
  local row = app.db:from("bookmarks"):where("id", args.id):first()
  if not row then return end
  local title = row.url:match("^https?://([^/]+)") or row.url
  app.db:update("bookmarks"):set({ title = title }):where("id", row.id):exec()
  app.cache:delete("bookmarks:" .. row.owner)
  if args.first then
    assert(app.mailer:send{ to = row.owner .. "@example.com", subject = "Your first bookmark",
      text = "You saved " .. row.url .. " (" .. title .. ")." })
  end
end)

return app
