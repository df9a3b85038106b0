-- examples/hello: the app `make run` serves.
--
--   curl localhost:8080/hello              -> hello world
--   curl localhost:8080/users/42           -> {"id":42}
--   curl localhost:8080/files/a/b.txt      -> a/b.txt
--   curl -d '{"a":1}' localhost:8080/echo  -> {"a":1}

local zever = require "zever"

local app = zever.app()

app:get("/hello", function()
  return "hello world"
end)

app:get("user", "/users/:id", function(req)
  return { id = tonumber(req.params.id) or req.params.id }
end)

app:get("/files/*path", function(req)
  return req.params.path
end)

app:post("/echo", function(req, res)
  local body, err = req:json()
  if body == nil then return res:status(400):json({ error = "invalid_json", message = err.message }) end
  return res:json(body)
end)

app:get("/slow", function()
  zever.sleep(0.1)
  return "done"
end)

return app
