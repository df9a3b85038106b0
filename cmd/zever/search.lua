-- zever search reindex|optimize: maintenance of the app's full-text index (app.search).
-- `reindex` rebuilds the index from the stored documents (every index, or --index NAME only)
-- and then merges its segments; `optimize` only merges. On a terminal (stderr) reindex draws a
-- progress bar; piped, it prints only the summary line. The app (--app PATH or -C DIR,
-- default .; zever.cli.app) is loaded for its configuration,
-- as `zever jobs` loads it. It must not know the adapter: it calls
-- app.search:reindex / optimize.

local sys = require "zever.sys"
local cliapp = require "zever.cli.app"

local format, rep, floor = string.format, string.rep, math.floor

local USAGE = "zever search reindex [--index NAME] | optimize [--app PATH]"
local VERBS = { "reindex", "optimize" }
local WIDTH = 30

-- A progress(done, total) that redraws one line of stderr, at most once per percent.
local function progress_bar()
  local last = -1
  return function(done, total)
    local pct = total > 0 and floor(done * 100 / total) or 100
    if pct == last then return end
    last = pct
    local fill = floor(pct * WIDTH / 100)
    io.stderr:write(format("\rreindex [%s%s] %3d%% %d/%d", rep("#", fill), rep(".", WIDTH - fill),
      pct, done, total))
    io.stderr:flush()
  end
end

return {
  name = "search",
  summary = "Rebuild or optimize the full-text search index",
  usage = USAGE,
  flags = {
    cliapp.FLAG,
    { name = "index", arg = "NAME", summary = "reindex: only the documents of this index" },
  },
  run = function(args, flags)
    local verb = args[1]
    local known = verb == "reindex" or verb == "optimize"
    if not known then
      if verb then
        local best = require("zever.text").closest(verb, VERBS)
        return 2, format('unknown search command "%s"%s; usage: %s', verb,
          best and format(' (did you mean "%s"?)', best) or "", USAGE)
      end
      return 2, "usage: " .. USAGE
    end
    if args[2] then return 2, "usage: " .. USAGE end
    if flags.index ~= nil and (verb ~= "reindex" or flags.index == "") then
      return 2, "--index NAME goes with reindex; usage: " .. USAGE
    end
    local target, terr = cliapp.resolve(flags, nil, "search")
    if not target then return 2, terr end
    local ok, app = pcall(cliapp.load, target)
    if not ok then return 1, tostring(app) end
    local got, search = pcall(function() return app.search end)
    if not got or not search then
      app:close()
      return 1, tostring(search or "the app has no search battery")
    end
    local code, msg = 0, nil
    if verb == "reindex" then
      local tty = sys.isatty(2)
      local t0 = sys.now()
      local n, err = search:reindex{ index = flags.index, progress = tty and progress_bar() or nil }
      if tty then io.stderr:write("\n") end
      if not n then
        code, msg = 1, tostring(err)
      else
        local merged, oerr = search:optimize()
        if not merged then
          code, msg = 1, tostring(oerr)
        else
          print(format("reindexed %d document(s)%s in %.2fs", n,
            flags.index and format(' of index "%s"', flags.index) or "", sys.now() - t0))
        end
      end
    else
      local merged, err = search:optimize()
      if not merged then code, msg = 1, tostring(err) else print("optimized the search index") end
    end
    app:close()
    return code, msg
  end,
}
