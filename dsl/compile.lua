-- dsl.compile: the front half of the schema compiler as one call: find the .zen files under some
-- paths, read them, parse each, resolve them all together. `zever check` and `zever gen` use it.
--
--   compile.collect(paths)  -> files (sorted list of .zen paths)   | nil, message
--   compile.sources(paths)  -> { file = text }, files              | nil, message
--   compile.compile(paths)  -> result                              | nil, message
--       result = { ir =, diags = (sorted), sources = { file = text }, files = { ... },
--                  errors = n, warnings = n }
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

function M.compile(paths)
  local sources, files = M.sources(paths)
  if not sources then return nil, files end
  return M.compile_sources(sources, files)
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
