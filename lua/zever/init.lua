-- zever: the framework's front door.
--
--   local zever = require "zever"
--   local app = zever.app()
--   zever.sleep(0.1)          -- yields the running request/job coroutine to the event loop
--   zever.spawn(fn, ...)      -- runs fn in a coroutine of the loop
--   zever.wait_until(pred, 5) -- runs the loop until pred() holds (false after 5 s)
--
-- Submodules load on first use, so `require "zever"` costs next to nothing.

local M = { version = require("zever.sys").version }

function M.app()
  return require("zever.app").new()
end

-- zever.middleware.<name>: the middleware modules, loaded on first use
-- (zever.middleware.session{...} is require("zever.middleware.session"){...}).
M.middleware = setmetatable({}, { __index = function(t, name)
  local mw = require("zever.middleware." .. name)
  rawset(t, name, mw)
  return mw
end })

function M.sleep(seconds)
  return require("zever.sched").sleep(seconds)
end

-- zever.spawn(fn, ...) runs fn in a coroutine of the loop; zever.wait_until(pred[, timeout])
-- runs the loop until pred() holds: a script drives many lock holders, subscribers or calls.
function M.spawn(fn, ...)
  return require("zever.sched").spawn(fn, ...)
end

function M.wait_until(pred, timeout)
  return require("zever.sched").wait_until(pred, timeout)
end

-- zever.http: the HTTP client (zever.httpc; docs/http-client.md), loaded on first use:
-- zever.http.get(url), zever.http.request{...}. (`require "zever.http"` is the server's
-- binding: the client's module is zever.httpc.)
M.http = setmetatable({}, { __index = function(_, k) return require("zever.httpc")[k] end })

return M
