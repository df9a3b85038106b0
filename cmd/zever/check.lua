-- zever check [paths...]: lexes, parses and resolves every .zen file under the paths (default
-- schema/) and prints the diagnostics, sorted, each with its source line and a caret. Exit 1 when
-- any is an error, 0 otherwise. It is diagnostics only: the resolver's IR is built and dropped,
-- nothing is generated or written (the backends come next).

local sys = require "zever.sys"
local json = require "zever.json"

local sort = table.sort

-- Appends to files every .zen file under path (a file is taken as it is), sorted by name.
local function collect(path, files)
  if not sys.isdir(path) then
    files[#files + 1] = path
    return true
  end
  local names, err = sys.listdir(path)
  if not names then return nil, err end
  local subdirs = {}
  for _, name in ipairs(names) do
    local full = path:gsub("/+$", "") .. "/" .. name
    if sys.isdir(full) then
      subdirs[#subdirs + 1] = full
    elseif name:match("%.zen$") then
      files[#files + 1] = full
    end
  end
  for _, dir in ipairs(subdirs) do
    local ok, e = collect(dir, files)
    if not ok then return nil, e end
  end
  return true
end

return {
  name = "check",
  summary = "Check the .zen schema (syntax, names, types, relations, routes) and report problems",
  usage = "zever check [paths...] [--json]",
  help = "Paths are .zen files or folders searched for them (default: schema/). A file's folder\n"
    .. "is its module. Runs the lexer, the parser and the resolver (names, types, relations,\n"
    .. "routes, auth, jobs, schedules); it only reports, it generates nothing.\n"
    .. "Exit codes: 0 no errors (warnings allowed), 1 any error, 2 usage.",
  flags = {
    { name = "json", summary = "print the diagnostics as a JSON array" },
  },
  run = function(args, flags)
    -- The compiler loads here, not at the top: `zever help` reads every command file.
    local parser, resolver = require "dsl.parser", require "dsl.resolver"
    local diagnostics = require "dsl.diagnostics"
    if #args == 0 then args = { "schema" } end
    local files = {}
    for _, path in ipairs(args) do
      local ok, err = collect(path, files)
      if not ok then return 1, err end
    end
    sort(files)
    local all, sources, trees = {}, {}, {}
    for _, file in ipairs(files) do
      local f, err = io.open(file, "rb")
      if not f then return 1, err end
      local src = f:read("*a")
      f:close()
      sources[file] = src
      local tree, diags = parser.parse(src, file)
      trees[#trees + 1] = tree
      for _, d in ipairs(diags) do all[#all + 1] = d end
    end
    -- The resolver sees every file at once (a module may span files, and modules refer to each
    -- other); it resolves trees with syntax errors as far as they go.
    local _, rdiags = resolver.resolve(trees)
    for _, d in ipairs(rdiags) do all[#all + 1] = d end
    diagnostics.sort(all)
    local errors, warnings = diagnostics.count(all)
    if flags.json then
      local rows = {}
      for i, d in ipairs(all) do
        rows[i] = { file = d.file, line = d.line, col = d.col, phase = d.phase,
          severity = d.severity, message = d.message }
      end
      print(#rows == 0 and "[]" or json.encode(rows))
    else
      io.stdout:write(diagnostics.render(all, sources))
      io.stderr:write(string.format("zever check: %d file%s, %d error%s, %d warning%s\n", #files,
        #files == 1 and "" or "s", errors, errors == 1 and "" or "s", warnings,
        warnings == 1 and "" or "s"))
    end
    if #files == 0 then return 1, "no .zen files found in " .. table.concat(args, ", ") end
    return diagnostics.exit_code(all)
  end,
}
