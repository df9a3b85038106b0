-- zever breaking OLD [-- NEW]: compiles two versions of the schema and classifies every change
-- between them as additive or breaking (dsl/breaking.lua). OLD and NEW are each a path (a .zen
-- file or a folder) or a git revision (HEAD~1, main, v1.2.0, or REV:folder), whose schema folder
-- (--schema, default schema/) is read from git; NEW defaults to the schema folder on disk. Exit 1
-- when any change is breaking, 0 otherwise, 2 on a usage error or a version that does not compile.

local json = require "zever.json"

local function quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- Runs cmd; its stdout and whether it exited 0 (LuaJIT's close does not give the status).
local function sh(cmd)
  local p = io.popen("(" .. cmd .. ") 2>/dev/null; echo \"__rc=$?\"")
  local out = p:read("*a")
  p:close()
  local body, rc = out:match("^(.*)__rc=(%d+)\n?$")
  return body or "", rc == "0"
end

-- The sources of one version: { file = text }, files | nil, message.
local function version(spec, schema)
  local compile = require "dsl.compile"
  local sys = require "zever.sys"
  if sys.isdir(spec) or io.open(spec, "rb") then return compile.sources({ spec }) end
  local rev, dir = spec:match("^([^:]+):(.+)$")
  rev, dir = rev or spec, dir or schema
  local _, ok = sh("git rev-parse --verify --quiet " .. quote(rev .. "^{commit}"))
  if not ok then
    return nil, string.format("%s is neither a path nor a git revision", spec)
  end
  local list = sh("git ls-tree -r --name-only " .. quote(rev) .. " -- " .. quote(dir))
  local sources, files = {}, {}
  for file in list:gmatch("[^\n]+") do
    if file:match("%.zen$") then
      local text, shown = sh("git show " .. quote(rev .. ":" .. file))
      if not shown then return nil, "cannot read " .. file .. " at " .. rev end
      sources[file] = text
      files[#files + 1] = file
    end
  end
  table.sort(files)
  return sources, files
end

return {
  name = "breaking",
  json = true,
  dry_run = false,
  summary = "Classify the changes between two versions of the .zen schema as additive or breaking",
  usage = "zever breaking OLD [-- NEW] [--json] [--schema DIR]",
  help = "OLD and NEW are .zen files, folders, or git revisions (HEAD~1, main, REV:folder); a\n"
    .. "revision's schema is the --schema folder (default schema/) at that commit. NEW defaults\n"
    .. "to that folder on disk: `zever breaking HEAD~1` checks the working tree against the\n"
    .. "previous commit. Breaking: removed entities, fields, RPCs, enum values; types narrowed;\n"
    .. "required fields or inputs added; routes, outputs or auth changed. Additive: the rest.\n"
    .. "Exit codes: 0 no breaking change, 1 a breaking change, 2 usage or a version with errors.",
  flags = {
    { name = "json", summary = "print the changes as a JSON array" },
    { name = "schema", arg = "DIR", summary = "the schema folder of a git revision (schema)" },
  },
  run = function(args, flags)
    local compile = require "dsl.compile"
    local breaking = require "dsl.breaking"
    local diagnostics = require "dsl.diagnostics"
    if #args < 1 or #args > 2 then return 2, "usage: zever breaking OLD [-- NEW]" end
    local schema = flags.schema or "schema"
    local irs = {}
    for i, spec in ipairs({ args[1], args[2] or schema }) do
      local sources, files = version(spec, schema)
      if not sources then return 2, files end
      if #files == 0 then return 2, "no .zen files in " .. spec end
      local result = compile.compile_sources(sources, files)
      if result.errors > 0 then
        io.stderr:write(diagnostics.render(result.diags, result.sources))
        return 2, string.format("%s (%s) does not compile", spec, i == 1 and "old" or "new")
      end
      irs[i] = result.ir
    end
    local changes = breaking.compare(irs[1], irs[2])
    local n = breaking.count(changes)
    if flags.json then
      local rows = {}
      for i, c in ipairs(changes) do
        rows[i] = { level = c.level, subject = c.subject, message = c.message, file = c.file,
          line = c.line, col = c.col }
      end
      print(#rows == 0 and "[]" or json.encode(rows))
    else
      for _, c in ipairs(changes) do
        io.stdout:write(string.format("%s:%d:%d: %s: %s: %s\n", c.file or "?", c.line or 0,
          c.col or 0, c.level, c.subject, c.message))
      end
      io.stderr:write(string.format("zever breaking: %d change%s, %d breaking\n", #changes,
        #changes == 1 and "" or "s", n))
    end
    return n > 0 and 1 or 0
  end,
}
