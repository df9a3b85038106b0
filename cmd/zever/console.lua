-- zever console [app]: a REPL inside the host with the app loaded: `app` and its batteries
-- (app.db, app.cache, ... resolved on first use, as in a handler), `zever`, and `_` (the last
-- result). An expression prints its values (zever.cli.pretty: tables as constructors, query
-- rows as a grid); a statement runs. Input that is not complete yet (an open function, an
-- unclosed string) continues on the next line. Each chunk runs in a coroutine on the event
-- loop, so calls that wait (Redis, PostgreSQL, zever.sleep) work without await. Line editing
-- and history (zever.cli.lineedit; ~/.zever_history or ZEVER_HISTORY). A production
-- configuration (ZEVER_ENV=production) is announced in red before the first prompt.

local cliapp = require "zever.cli.app"

local format, concat = string.format, table.concat

local function pack(...) return { n = select("#", ...), ... } end

return {
  name = "console",
  json = false,
  dry_run = false,
  why = "an interactive REPL: what it writes is what you type",
  summary = "A Lua REPL with the app and its batteries loaded",
  usage = "zever console [app.lua | dir]",
  flags = { cliapp.FLAG },
  run = function(args, flags)
    if args[2] then return 2, "one app only; usage: zever console [app.lua | dir]" end
    local target, terr = cliapp.resolve(flags, args[1], "console")
    if not target then return 2, terr end
    -- The app and its configuration load once, before the first prompt, interpreted (the JIT
    -- is on for what the user types).
    local ok, app = pcall(cliapp.load, target)
    if not ok then return 1, tostring(app) end
    local cok, cfg = cliapp.interpreted(app.config, app)
    local loop, sched = require "zever.loop", require "zever.sched"
    local pretty = require "zever.cli.pretty"
    -- Colour on a terminal only, never with NO_COLOR: the CLI's one rule (zever.cli.output).
    local output = require "zever.cli.output"
    local function paint(code, s) return output.paint(1, code, s) end

    if not cok then return 1, tostring(cfg) end
    local environment = require("zever.config").sources(cfg).environment or "development"
    io.stdout:write(format("zever console: %s (%s). app, app.db, app.cache, ... and zever are " ..
      "at hand; Ctrl-D exits.\n", target.file or target.dir, environment))
    if environment == "production" then
      io.stdout:write(paint("1;31", "warning: this is the PRODUCTION configuration: writes are real") ..
        "\n")
    end
    io.stdout:flush()

    local env = setmetatable({ app = app, zever = require "zever" }, { __index = _G })
    local home = os.getenv("HOME")
    local history = os.getenv("ZEVER_HISTORY") or (home and home .. "/.zever_history")
    local ed = require("zever.cli.lineedit").new{ history = history ~= "" and history or nil }

    local function run(fn)
      local token = { done = false }
      loop.spawn(function()
        sched.complete(token, pack(xpcall(fn, function(e)
          -- The traceback down to the chunk: the console's own frames say nothing.
          local tb = debug.traceback(tostring(e), 2)
          return (tb:gsub("\n%s*%[C%]: in function 'xpcall'.*$", ""))
        end)))
      end)
      return sched.await(token)
    end

    local pending = ""
    while true do
      local line = ed:read(paint("36", pending == "" and "zever> " or "  ...> "))
      if line == nil then break end
      local src = pending .. line
      local fn, err = load("return " .. src, "=console", "t", env)
      if not fn then fn, err = load(src, "=console", "t", env) end
      if not fn and err:match("near '?<eof>'?$") then
        pending = src .. "\n"
      else
        pending = ""
        ed:add(src)
        if not fn then
          io.stdout:write(paint("31", tostring(err)), "\n")
        elseif src:match("%S") then
          local r = run(fn)
          if not r[1] then
            io.stdout:write(paint("31", tostring(r[2])), "\n")
          elseif r.n > 1 then
            local parts = {}
            for i = 2, r.n do parts[#parts + 1] = pretty.render(r[i]) end
            io.stdout:write(concat(parts, "\n"), "\n")
            rawset(env, "_", r[2])
          end
        end
      end
      io.stdout:flush()
    end
    ed:close()
    local cerr
    ok, cerr = app:close()
    if not ok then io.stderr:write("zever console: closing the app: ", tostring(cerr), "\n") end
    return 0
  end,
}
