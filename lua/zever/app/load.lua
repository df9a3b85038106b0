-- zever.app.load: loading an app file (zever.app.load(path, root), which `zever serve`,
-- `zever routes` and the other commands that take an app call): the file runs with its folder on
-- package.path, must return the app, and gets the routes its configuration asks for
-- (http.health, http.metrics, trace.http, dashboard.enabled). zever.app loads it with the first
-- app file, so a script that makes its app in code does not hold it (docs/app.md, "Start-up
-- heap").
--
-- It must not require zever.app (the require graph has no cycles): zever.app passes itself (A)
-- and its metatable of apps (App).

local M = {}

-- The app the file at path returns (a folder means its app.lua), and the file's path; see
-- zever.app.load for root and for what it raises.
function M.load(A, App, path, root)
  path = path or "."
  if require("zever.sys").isdir(path) then path = path:gsub("/$", "") .. "/app.lua" end
  -- In a bundle the app's files come from its payload (zever.assets; docs/deploy.md). Outside
  -- one, zever.assets is not loaded for it (docs/app.md, "Start-up heap").
  local chunk, err = (require("zever.bundle").active and require("zever.assets").loadfile
    or loadfile)(path)
  if not chunk then error("cannot load the app: " .. err, 0) end
  local dir = path:match("^(.*)/[^/]*$")
  if dir then package.path = dir .. "/?.lua;" .. dir .. "/?/init.lua;" .. package.path end
  dir = root or dir
  -- Apps made while the file runs belong to its folder already: an app file that registers jobs
  -- resolves app.jobs (and its config) before it returns.
  A.loading_dir = dir or "."
  local ok, app = pcall(chunk)
  A.loading_dir = nil
  if not ok then error(app, 0) end
  if getmetatable(app) ~= App then
    error(path .. " must return the app (end it with `return app`)", 0)
  end
  app.dir = dir or "."
  -- http.health: the health routes without app:health() in the file (a configuration that
  -- does not load is reported by whoever resolves it; here it only means no health routes).
  if not app.names.healthz then
    local loaded, cfg = pcall(app.config, app)
    if loaded and cfg.http.health then app:health() end
  end
  -- http.metrics: GET /metrics and the built-in HTTP metrics without app:metrics() in the file.
  if not app.names.metrics then
    local loaded, cfg = pcall(app.config, app)
    if loaded and cfg.http.metrics then app:metrics() end
  end
  -- trace.adapter other than noop, with trace.http: a server span per request (app:trace()).
  do
    local loaded, cfg = pcall(app.config, app)
    if loaded and cfg.trace and cfg.trace.adapter ~= "noop" and cfg.trace.http then app:trace() end
  end
  -- dashboard.enabled: the /_zever dashboard (zever.dashboard; development or a token only).
  -- zever.dashboard loads only then.
  do
    local loaded, cfg = pcall(app.config, app)
    if loaded and cfg.dashboard and cfg.dashboard.enabled then
      require("zever.dashboard").maybe_install(app)
    end
  end
  return app, path
end

return M
