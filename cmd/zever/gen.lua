-- zever gen [paths...]: compiles the .zen schema (default schema/) and runs the backends
-- (dsl/gen.lua does the work; this file parses, prints and picks exit codes). Files are written
-- under --out (default generated/) only when their bytes changed; "create once" files (handler
-- stubs) are never overwritten. With --update-golden it regenerates the committed goldens of the
-- compiler's fixtures instead (dsl/testdata/gen/<fixture>/<backend>/...).
-- Diagnostics go to stderr; the list of written files goes to stdout on a terminal only.

local sys = require "zever.sys"

local format = string.format

local function plural(n, word)
  return format("%d %s%s", n, word, n == 1 and "" or "s")
end

-- Every file under dir, relative to it, sorted.
local function tree(dir, prefix, out)
  for _, name in ipairs(sys.listdir(dir) or {}) do
    local full, rel = dir .. "/" .. name, prefix .. name
    if sys.isdir(full) then tree(full, rel .. "/", out) else out[#out + 1] = rel end
  end
  return out
end

local function update_goldens(flags)
  local gen = require "dsl.gen"
  local home = sys.home()
  local root = home .. "/dsl/testdata/gen"
  local count, fixtures = 0, 0
  local ran
  if flags.backend then
    ran = {}
    for _, name in ipairs(flags.backend) do ran[name] = true end
  end
  for _, fx in ipairs(gen.golden_fixtures(home)) do
    local f = assert(io.open(fx.path, "rb"))
    local src = f:read("*a")
    f:close()
    local files = gen.golden(fx.file, src, { backends = flags.backend })
    if files then
      fixtures = fixtures + 1
      local dir = root .. "/" .. fx.name
      -- Files no backend writes any more are removed, so that the goldens are exactly the output.
      for _, rel in ipairs(tree(dir, "", {})) do
        if not files[rel] and (not ran or ran[rel:match("^[^/]+")]) then
          os.remove(dir .. "/" .. rel)
        end
      end
      local report, err = gen.write(files, dir)
      if not report then return 1, tostring(err) end
      count = count + #report.written
    end
  end
  if sys.isatty(1) then
    print(format("updated %s in %s (%s)", plural(count, "golden file"), "dsl/testdata/gen",
      plural(fixtures, "fixture")))
  end
  return 0
end

return {
  name = "gen",
  summary = "Compile the .zen schema into models, migrations, routes, jobs and OpenAPI",
  usage = "zever gen [paths...] [--backend models,migrations,...] [--out DIR] [--allow-drop]"
    .. " [--update-golden]",
  help = "Paths are .zen files or folders searched for them (default: schema/). The schema is\n"
    .. "checked first (as by zever check); any error stops the run before anything is written.\n"
    .. "Backends run in the order models, migrations, routes, jobs, openapi (default: all that\n"
    .. "exist). A file is written only when its content changed. The migrations backend\n"
    .. "compares the schema with <out>/migrations/schema.snapshot.lua and writes the next\n"
    .. "migration; dropping a table or a column needs --allow-drop.\n"
    .. "Exit codes: 0 ok, 1 schema errors or a refused change, 2 usage.",
  flags = {
    { name = "backend", arg = "LIST", type = "list",
      summary = "backends to run, comma-separated (default: all available)" },
    { name = "out", arg = "DIR", summary = "output folder (default generated)" },
    { name = "allow-drop", summary = "let migrations drop tables and columns (data is lost)" },
    { name = "update-golden", summary = "regenerate dsl/testdata/gen from the compiler's fixtures" },
  },
  run = function(args, flags)
    local gen = require "dsl.gen"
    if flags.backend then
      local ok, err = gen.backends(flags.backend)
      if not ok then return err.code == "invalid" and 2 or 1, err.message end
    end
    if flags["update-golden"] then
      if #args > 0 or flags.out then return 2, "--update-golden takes no paths and no --out" end
      return update_goldens(flags)
    end
    if #args == 0 then args = { "schema" } end
    local report, err = gen.run(args, { backends = flags.backend, out = flags.out,
      allow_drop = flags["allow-drop"] })
    local result = report and report.result or (err and err.result)
    if result and #result.diags > 0 then
      io.stderr:write(require("dsl.diagnostics").render(result.diags, result.sources))
    end
    if not report then
      if err.code == "schema" then
        return 1, format("%s; nothing was generated (run zever check for the same report)",
          err.message)
      end
      return err.code == "invalid" and 2 or 1, err.message
    end
    local added = require("zever.cli.stubs").run(result, flags) -- h5-dev: handlers/ stubs
    if added ~= 0 then return added end
    if sys.isatty(1) then
      local out = (flags.out or "generated"):gsub("/+$", "")
      for _, path in ipairs(report.written) do print("wrote " .. out .. "/" .. path) end
      for _, path in ipairs(report.kept) do print("kept  " .. out .. "/" .. path .. " (yours)") end
      print(format("zever gen: %s, %s written, %d unchanged", plural(#result.files, "file"),
        plural(#report.written, "file"), #report.unchanged))
    end
    return 0
  end,
}
