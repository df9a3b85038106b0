-- zever check [paths...]: lexes, parses and resolves every .zen file under the paths (default
-- schema/) and prints the diagnostics, sorted, each with its source line and a caret. Exit 1 when
-- any is an error, 0 otherwise. It is diagnostics only: the resolver's IR is built and dropped,
-- nothing is generated or written (`zever gen` runs the backends). The steps are dsl.compile's.

local json = require "zever.json"

return {
  name = "check",
  json = true,
  dry_run = false,
  summary = "Check the .zen schema (syntax, names, types, relations, routes) and report problems",
  usage = "zever check [paths...] [--json]",
  help = "Paths are .zen files or folders searched for them (default: schema/). The first folder\n"
    .. "under schema/ is a file's module (schema/v1/iam/: iam, version v1; schema/x.zen: public).\n"
    .. "Runs the lexer, the parser and the resolver (names, types, relations,\n"
    .. "routes, auth, jobs, schedules); it only reports, it generates nothing.\n"
    .. "Exit codes: 0 no errors (warnings allowed), 1 any error, 2 usage.",
  flags = {
    { name = "json", summary = "print the diagnostics as a JSON array" },
  },
  run = function(args, flags)
    -- The compiler loads here, not at the top: `zever help` reads every command file.
    local compile = require "dsl.compile"
    local diagnostics = require "dsl.diagnostics"
    if #args == 0 then args = { "schema" } end
    -- The resolver sees every file at once (a module may span files, and modules refer to each
    -- other); it resolves trees with syntax errors as far as they go.
    -- brief: check exits right after, so the compile runs without collecting (dsl/compile.lua).
    local result, err = compile.compile(args, { brief = true })
    if not result then return 1, err end
    local all, files, errors, warnings = result.diags, result.files, result.errors, result.warnings
    if flags.json then
      local rows = {}
      for i, d in ipairs(all) do
        rows[i] = { file = d.file, line = d.line, col = d.col, phase = d.phase,
          severity = d.severity, message = d.message }
      end
      print(#rows == 0 and "[]" or json.encode(rows))
    else
      io.stdout:write(diagnostics.render(all, result.sources))
      io.stderr:write(string.format("zever check: %d file%s, %d error%s, %d warning%s\n", #files,
        #files == 1 and "" or "s", errors, errors == 1 and "" or "s", warnings,
        warnings == 1 and "" or "s"))
    end
    if #files == 0 then return 1, "no .zen files found in " .. table.concat(args, ", ") end
    return diagnostics.exit_code(all)
  end,
}
