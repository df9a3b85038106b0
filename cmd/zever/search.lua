-- zever search reindex|optimize: maintenance of the app's full-text index (app.search).
-- `reindex` rebuilds the index from the stored documents (every index, or --index NAME only)
-- and then merges its segments; `optimize` only merges. On a terminal (stderr) reindex draws the
-- CLI's progress bar (zever.cli.progress); piped, it prints only the summary line (--json: one
-- object). --dry-run says what it would rebuild and opens nothing. The app (--app PATH or -C DIR,
-- default .; zever.cli.app) is loaded for its configuration,
-- as `zever jobs` loads it. It must not know the adapter: it calls
-- app.search:reindex / optimize.

local sys = require "zever.sys"
local cliapp = require "zever.cli.app"
local output = require "zever.cli.output"
local progress = require "zever.cli.progress"

local format = string.format

local USAGE = "zever search reindex [--index NAME] | optimize [--app PATH] [--json] [--dry-run]"
local VERBS = { "reindex", "optimize" }

return {
  name = "search",
  summary = "Rebuild or optimize the full-text search index",
  usage = USAGE,
  flags = {
    cliapp.FLAG,
    { name = "index", arg = "NAME", summary = "reindex: only the documents of this index" },
  },
  json = { "reindex", "optimize" },
  dry_run = { "reindex", "optimize" },
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
    if flags["dry-run"] then
      -- Nothing is opened: the app is not loaded (its search table would be created).
      local actions = {}
      if verb == "reindex" then
        actions[1] = { action = "reindex", target = flags.index and ('index "' .. flags.index .. '"')
          or "every index", index = flags.index }
      end
      actions[#actions + 1] = { action = "optimize", target = "the full-text index" }
      output.would(flags, actions)
      return 0
    end
    local ok, app = pcall(cliapp.load, target)
    if not ok then return 1, tostring(app) end
    local got, search = pcall(function() return app.search end)
    if not got or not search then
      app:close()
      return 1, tostring(search or "the app has no search battery")
    end
    local code, msg = 0, nil
    if verb == "reindex" then
      local t0 = sys.now()
      local bar = progress.new("reindex", 0)
      local n, err = search:reindex{ index = flags.index, progress = bar.active and function(done, total)
        bar.total = total
        bar:set(done)
      end or nil }
      bar:finish()
      if not n then
        code, msg = 1, tostring(err)
      else
        local merged, oerr = search:optimize()
        if not merged then
          code, msg = 1, tostring(oerr)
        else
          local secs = sys.now() - t0
          output.emit(flags, { reindexed = n, index = flags.index, seconds = secs },
            format("reindexed %d document(s)%s in %.2fs", n,
              flags.index and format(' of index "%s"', flags.index) or "", secs))
        end
      end
    else
      local merged, err = search:optimize()
      if not merged then
        code, msg = 1, tostring(err)
      else
        output.emit(flags, { optimized = true }, "optimized the search index")
      end
    end
    app:close()
    return code, msg
  end,
}
