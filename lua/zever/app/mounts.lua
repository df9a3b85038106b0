-- zever.app.mounts: the app methods that mount more than a route: app:static (files served from C),
-- app:websocket and app:broadcast (zever.websocket), app:health (zever.health). zever.app
-- installs them on the first call of one, so that an app that uses none of them does not hold
-- their code (docs/app.md, "Start-up heap").
--
-- It must not require zever.app (the require graph has no cycles): M.install gets App.

local type, error, tostring, pairs, ipairs = type, error, tostring, pairs, ipairs

local M = {}

-- Installs the methods into App (zever.app's metatable of apps).
function M.install(App)
  local STATIC_OPTS = { max_age = true, immutable = true, index = true, precompressed = true }

  -- A WebSocket endpoint: GET pattern upgrades and runs fn(ws, req) (zever.websocket,
  -- docs/websockets.md); opts: max_frame, max_message, ping_interval.
  function App:websocket(pattern, fn, opts)
    if type(pattern) ~= "string" then error("app:websocket: want a path pattern", 2) end
    if type(fn) ~= "function" then error("app:websocket: want a function(ws, req)", 2) end
    if opts ~= nil and type(opts) ~= "table" then
      error("app:websocket: opts must be a table", 2)
    end
    return self:get(pattern, require("zever.websocket").handler(fn, opts, self))
  end

  -- To every WebSocket connection in room (ws:join), in every worker and process on the app's
  -- event bus (zever.websocket_rooms, docs/websockets.md): true | nil, err.
  function App:broadcast(room, msg, kind)
    msg, kind = require("zever.websocket").check_message(msg, kind, "app:broadcast")
    return require("zever.websocket_rooms").broadcast(self, room, msg, kind)
  end

  -- Serves the files under root (relative to the app's folder) at prefix, from C with
  -- sendfile(2), before routing: a GET or HEAD of an existing file never reaches the middleware or
  -- the routes; everything else (other methods, missing files, names never served) goes on to
  -- the application. docs/static.md has the rules.
  function App:static(prefix, root, opts)
    if type(prefix) ~= "string" or prefix:sub(1, 1) ~= "/"
      or (#prefix > 1 and prefix:sub(-1) == "/")
      or prefix:find("//", 1, true) or prefix:find("[%%?#]") then
      error('static prefix must start with "/" and not end with one, got ' .. tostring(prefix), 2)
    end
    if type(root) ~= "string" or root == "" then error("static root must be a folder path", 2) end
    opts = opts or {}
    if type(opts) ~= "table" then error("static options must be a table", 2) end
    for k in pairs(opts) do
      if not STATIC_OPTS[k] then error("static: unknown option '" .. tostring(k) .. "'", 2) end
    end
    local max_age, index = opts.max_age, opts.index
    if max_age ~= nil and (type(max_age) ~= "number" or max_age < 0 or max_age % 1 ~= 0) then
      error("static max_age must be a whole number of seconds >= 0", 2)
    end
    if opts.immutable and max_age == nil then error("static immutable needs max_age", 2) end
    if index ~= nil and index ~= false and (type(index) ~= "string" or index == ""
      or index:find("[/\\]") or index:sub(1, 1) == ".") then
      error("static index must be a plain file name or false", 2)
    end
    if root:sub(1, 1) ~= "/" then root = self.dir .. "/" .. root end
    -- In a bundle that carries the root's files, they are served from its payload (never the
    -- disk's copy); a root the bundle does not carry is served from disk (docs/static.md).
    local payload = require("zever.static_payload").folder(root)
    if not payload and not require("zever.sys").isdir(root) then
      error("static root " .. root .. " is not a folder", 2)
    end
    for _, m in ipairs(self.statics) do
      if m.prefix == prefix then error("static prefix " .. prefix .. " is mounted already", 2) end
    end
    self.statics[#self.statics + 1] = { prefix = prefix, root = root, max_age = max_age,
      immutable = opts.immutable and true or false,
      index = (index == nil and "index.html") or index or nil,
      precompressed = opts.precompressed ~= false, payload = payload }
    return self
  end

  -- GET /healthz and /readyz (zever.health; opts: live, ready, timeout, batteries, log).
  function App:health(opts)
    return require("zever.health").install(self, opts)
  end
end

return M
