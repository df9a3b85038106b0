-- zever dev [app]: `zever serve` for development, reloaded on every change. It watches the app
-- folder (libuv fs events, inotify: each folder but data/, generated/, spec/ and hidden ones)
-- and, a moment after the last change (50 ms, so that an editor's burst of writes is one
-- reload):
--   1. a change under schema/ runs `zever gen` in-process (and its handler stubs);
--   2. the app is loaded once in this thread, as a check (its own modules loaded afresh);
--   3. the server reloads as on SIGHUP (zever.server): a new set of workers starts, and the old
--      set drains, in-flight requests finishing, as soon as every new worker listens.
-- A gen error or an app that does not load is printed in the terminal and served as an error
-- page (500, text/html) by workers of a small app of its own, instead of stopping the server;
-- the next change that fixes it serves the app again. Flags are serve's (default one worker).

local sys = require "zever.sys"
local loop = require "zever.loop"

local format, concat = string.format, table.concat

local serve = require "cmd.zever.serve"

-- Folders never watched: what the app writes (data/, generated/ is gen's output), specs, VCS.
local SKIP = { data = true, generated = true, spec = true, node_modules = true }

-- Names an editor writes beside the file it saves (vim's 4913 and .swp, emacs' #x# and x~).
local function noise(name)
  return name == nil or name:match("^%.") or name:match("~$") or name:match("%.swp$") or
    name:match("%.swx$") or name == "4913" or name:match("^#") or name:match("%.db%-?%w*$")
end

local function folders(root, out)
  out[#out + 1] = root
  for _, name in ipairs(sys.listdir(root) or {}) do
    local full = root .. "/" .. name
    if not name:match("^%.") and not SKIP[name] and sys.isdir(full) then folders(full, out) end
  end
  return out
end

local function html_escape(s)
  return (s:gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" }))
end

-- The app the workers serve while the real one is broken: every path answers 500 with the
-- message in a page of its own (no external resources).
local ERROR_APP = [[
-- Written by zever dev: the page shown while the app does not load. It goes when it does.
local zever = require "zever"
local app = zever.app()
local PAGE = %q
local function page(_, res)
  res:status(500)
  res:header("Content-Type", "text/html; charset=utf-8")
  res:header("X-Zever-Dev", "error")
  return res:send(PAGE)
end
app:route({ "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE" }, "/", page)
app:route({ "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE" }, "/*path", page)
return app
]]

local function error_page(what, message)
  return "<!doctype html><html><head><meta charset=\"utf-8\"><title>zever dev: " ..
    html_escape(what) .. "</title><style>body{font:15px system-ui,sans-serif;margin:2em}" ..
    "pre{background:#fee;border:1px solid #c00;padding:1em;white-space:pre-wrap}</style>" ..
    "</head><body><h1>zever dev: " .. html_escape(what) .. "</h1><pre>" .. html_escape(message) ..
    "</pre><p>Fix it and save: the app reloads.</p></body></html>\n"
end

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local flags = {}
for i, f in ipairs(serve.flags) do flags[i] = f end

return {
  name = "dev",
  json = false,
  dry_run = false,
  why = "a server that runs until stopped",
  summary = "Serve an app and reload it on every change (development)",
  usage = "zever dev [app.lua | dir] [serve's flags]",
  flags = flags,
  run = function(args, given)
    if not given.workers then given.workers = "1" end
    -- Development: ZEVER_ENV=development and the /_zever dashboard (docs/dashboard.md), unless
    -- the environment says otherwise; set before the configuration is read.
    local ffi = require "ffi"
    require "zever.cdef.libc"
    ffi.C.setenv("ZEVER_ENV", "development", 0)
    ffi.C.setenv("DASHBOARD_ENABLED", "true", 0)
    local opts, err = serve.options(args, given)
    if not opts then return 2, err end
    local server = require "zever.server"
    local root = opts.root
    local tmp = sys.mkdtemp and sys.mkdtemp("/tmp/zever-dev-XXXXXX") or os.tmpname()
    if not sys.mkdtemp then
      os.remove(tmp)
      os.execute("mkdir -p '" .. tmp .. "'")
    end
    local error_file = tmp .. "/error_app.lua"
    opts.ready_dir = tmp
    local broken   -- the error page's app file while the app does not load

    -- The app's own modules (those under root) are dropped so the check loads them afresh.
    local function check_app()
      for name in pairs(package.loaded) do
        local file = package.searchpath(name, package.path)
        if file and file:sub(1, #root + 1) == root .. "/" then package.loaded[name] = nil end
      end
      local ok, app = pcall(server.load_app, opts.app, root)
      if ok then pcall(app.close, app) end   -- only a check: the workers load their own
      return ok, app
    end

    local function gen()
      local dsl = require "dsl.gen"
      -- The migrations go where zever gen puts them: the app's db.migrations (one sequence).
      local cfg = require("zever.config").load{ dir = root }
      local report, gerr = dsl.run({ root .. "/schema" }, { out = root .. "/generated",
        migrations = cfg and cfg.db.migrations or root .. "/migrations" })
      local result = report and report.result or (gerr and gerr.result)
      local diags = ""
      if result and #result.diags > 0 then
        diags = require("dsl.diagnostics").render(result.diags, result.sources)
      end
      if not report then return nil, diags .. tostring(gerr and gerr.message or gerr) end
      local stubs = require("zever.cli.stubs").sync(result.ir, root)
      for _, line in ipairs(stubs and stubs.added or {}) do
        io.stderr:write("zever dev: added stub ", line, "\n")
      end
      return true
    end

    -- Decides what the workers serve next; returns nil (the app) or the error file.
    local function prepare(changed)
      for _, path in ipairs(changed) do
        if path:match("%.zen$") then
          local ok, gerr = gen()
          if not ok then
            write(error_file, format(ERROR_APP, error_page("zever gen failed", gerr)))
            io.stderr:write("zever dev: zever gen failed:\n", gerr, "\n")
            return error_file
          end
          break
        end
      end
      local ok, lerr = check_app()
      if not ok then
        write(error_file, format(ERROR_APP, error_page("the app does not load", tostring(lerr))))
        io.stderr:write("zever dev: the app does not load: ", tostring(lerr), "\n")
        return error_file
      end
      return nil
    end

    broken = prepare({})
    local real_app = opts.app
    if broken then opts.app = broken end

    opts.reload = function()
      local o, oerr = serve.options(args, given)
      if not o then return nil, oerr end
      if broken then o.app = broken end
      return o
    end

    opts.watch = function(reload)
      local watchers, pending = {}, {}
      local timer
      local function watch_all()
        for _, dir in ipairs(folders(root, {})) do
          if not watchers[dir] then
            watchers[dir] = loop.watch(dir, function(name)
              if noise(name) then return end
              pending[#pending + 1] = dir .. "/" .. name
              timer:start(0.05)
            end) or false
          end
        end
      end
      timer = loop.timer(function()
        local changed = pending
        pending = {}
        watch_all()   -- a folder made since
        local names, seen = {}, {}
        for _, p in ipairs(changed) do
          if not seen[p] and sys.mtime(p) then names[#names + 1] = p:sub(#root + 2) end
          seen[p] = true
        end
        if #names == 0 then names[1] = "a file" end
        broken = prepare(changed)
        reload(format("%s changed", concat(names, ", ")))
        if not broken then io.stderr:write("zever dev: serving ", real_app, "\n") end
      end)
      watch_all()
      io.stderr:write(format("zever dev: watching %s (schema/ runs zever gen)\n", root))
    end

    local ok, code = pcall(server.run, opts)
    os.execute("rm -rf '" .. tmp:gsub("'", "'\\''") .. "'")
    if not ok then return 1, tostring(code) end
    return code
  end,
}
