-- zever.cli.bytecode: precompiles Lua sources of the zever home to LuaJIT bytecode in
-- <home>/build/bc/<same path>, where the host's searcher (host/runtime/state.c) finds them.
-- `make` runs it as a script with the sources that changed since the last run:
--
--   bin/zever run lua/zever/cli/bytecode.lua lua/zever/db.lua cmd/zever/init.lua ...
--
-- Each chunk is loaded from <home>/<path> (so that its name, in tracebacks and error messages,
-- is the one the source would have had) and dumped with its debug info. A file is written under
-- a temporary name and renamed, so the searcher never reads half a file; its modification time
-- is therefore later than the source's, which is what the searcher checks. A source that does
-- not compile is an error (make stops), as it would be when required.

local sys = require "zever.sys"

local M = {}

-- Compiles each home-relative path; returns the count, or raises naming the failing source.
function M.compile(home, paths)
  local count = 0
  for _, rel in ipairs(paths) do
    local fn, err = loadfile(home .. "/" .. rel)
    if not fn then error(err, 0) end
    local out = home .. "/build/bc/" .. rel
    local dir = out:match("^(.*)/[^/]+$")
    if not sys.isdir(dir) then assert(os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "'")) end
    local tmp = out .. ".tmp"
    local f = assert(io.open(tmp, "wb"))
    f:write(string.dump(fn))
    f:close()
    assert(os.rename(tmp, out))
    count = count + 1
  end
  return count
end

-- As a script (`zever run`): the arguments are the paths.
if arg and arg[0] and arg[0]:match("bytecode%.lua$") and select("#", ...) > 0 then
  M.compile(sys.home(), { ... })
end

return M
