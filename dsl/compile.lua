-- dsl.compile: the front half of the schema compiler as one call: find the .zen files under some
-- paths, read them, parse each, resolve them all together. `zever check` and `zever gen` use it.
--
--   compile.collect(paths)  -> files (sorted list of .zen paths)   | nil, message
--   compile.sources(paths)  -> { file = text }, files              | nil, message
--   compile.compile(paths [, opts])  -> result                     | nil, message
--       result = { ir =, diags = (sorted), sources = { file = text }, files = { ... },
--                  errors = n, warnings = n }
--
-- opts.brief: the caller is a short-lived command that exits soon after (zever check); the
-- collector then pauses for the compile when the sources total at most M.PAUSE_LIMIT bytes, and
-- runs again after it (a collector the caller stopped stays stopped).
--
-- A folder is searched recursively for *.zen; a path that is not a folder is taken as a file.
-- Reading failures (a missing path) return nil, message; problems in the schema are diagnostics
-- in the result, never a failure of the call. It must not print or write anything.

local sys = require "zever.sys"

local sort = table.sort

local M = {}

-- Appends to files every .zen file under path (a file is taken as it is).
local function walk(path, files)
  if not sys.isdir(path) then
    files[#files + 1] = path
    return true
  end
  local names, err = sys.listdir(path)
  if not names then return nil, tostring(err) end
  sort(names)
  for _, name in ipairs(names) do
    local full = path:gsub("/+$", "") .. "/" .. name
    if sys.isdir(full) then
      local ok, e = walk(full, files)
      if not ok then return nil, e end
    elseif name:match("%.zen$") then
      files[#files + 1] = full
    end
  end
  return true
end

function M.collect(paths)
  if type(paths) == "string" then paths = { paths } end
  if type(paths) ~= "table" then error("compile.collect: paths must be a string or a list", 2) end
  local files = {}
  for _, path in ipairs(paths) do
    local ok, err = walk(path, files)
    if not ok then return nil, err end
  end
  sort(files)
  return files
end

function M.sources(paths)
  local files, err = M.collect(paths)
  if not files then return nil, err end
  local sources = {}
  for _, file in ipairs(files) do
    local f, oerr = io.open(file, "rb")
    if not f then return nil, oerr end
    sources[file] = f:read("*a")
    f:close()
  end
  return sources, files
end

-- Compiles already-read sources ({ file = text }, files in order) into a result.
function M.compile_sources(sources, files)
  local parser, resolver = require "dsl.parser", require "dsl.resolver"
  local diagnostics = require "dsl.diagnostics"
  local all, trees = {}, {}
  for _, file in ipairs(files) do
    local tree, diags = parser.parse(sources[file], file)
    trees[#trees + 1] = tree
    for _, d in ipairs(diags) do all[#all + 1] = d end
  end
  -- The resolver sees every file at once: a module may span files and modules refer to each
  -- other.
  local ir, rdiags = resolver.resolve(trees)
  for _, d in ipairs(rdiags) do all[#all + 1] = d end
  diagnostics.sort(all)
  local errors, warnings = diagnostics.count(all)
  return { ir = ir, diags = all, sources = sources, files = files, errors = errors,
    warnings = warnings }
end

-- A compile makes about 70 bytes of heap per byte of source, most of it garbage by the end
-- (the token arrays of each file, the parser's scratch): 9.5 MB for the 141 KB of the 200-entity
-- bench schema. Collecting it as it goes cost 11 M of the 128 M instructions of `zever check`
-- there, and a short-lived command gets all of it back at exit anyway. Up to this many bytes of
-- source (~70 MB of heap) the collector pauses; above it, it runs as usual.
M.PAUSE_LIMIT = 1024 * 1024

function M.compile(paths, opts)
  local sources, files = M.sources(paths)
  if not sources then return nil, files end
  local pause = false
  if opts and opts.brief then
    local bytes = 0
    for _, file in ipairs(files) do bytes = bytes + #sources[file] end
    pause = bytes <= M.PAUSE_LIMIT and collectgarbage("isrunning")
  end
  if not pause then return M.compile_sources(sources, files) end
  collectgarbage("stop")
  local ok, result = pcall(M.compile_sources, sources, files)
  collectgarbage("restart")
  if not ok then error(result, 0) end
  return result
end

-- For a command that needs a schema without errors: paths (default { "schema" }) compiled, or
-- nil, message after writing the diagnostics to stderr (the command exits 1 with it).
function M.compile_clean(paths)
  if #paths == 0 then paths = { "schema" } end
  local result, err = M.compile(paths)
  if not result then return nil, err end
  if result.errors > 0 then
    io.stderr:write(require("dsl.diagnostics").render(result.diags, result.sources))
    return nil, "the schema has errors"
  end
  return result
end

return M
