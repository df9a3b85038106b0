-- zever check-boundaries [paths...]: the references of the schema that cross module boundaries
-- against the Go framework's rules (dsl/graph.lua crossings): a relation, an rpc's output or a
-- permission resource in another module. Saga steps may cross by design. Exit 1 when any does.

return {
  name = "check-boundaries",
  json = true,
  dry_run = false,
  summary = "Report relations, RPC outputs and permission resources that cross .zen modules",
  usage = "zever check-boundaries [paths...] [--json]",
  help = "Paths are .zen files or folders (default: schema/). Each crossing prints as\n"
    .. "file:line:col: [boundaries] message. Types of fields and inputs from another module\n"
    .. "and saga steps are allowed.\n"
    .. "Exit codes: 0 no crossing, 1 a crossing or a schema with errors, 2 usage.",
  flags = {
    { name = "json", summary = "print the crossings as a JSON array" },
  },
  run = function(args, flags)
    local graph = require "dsl.graph"
    local result, err = require("dsl.compile").compile_clean(args)
    if not result then return 1, err end
    local list = graph.crossings(result.ir)
    if flags.json then
      print(#list == 0 and "[]" or require("zever.json").encode(list))
    else
      local diags = {}
      for i, c in ipairs(list) do
        diags[i] = { file = c.file, line = c.line, col = c.col, phase = "boundaries",
          severity = "error", message = c.message }
      end
      io.stdout:write(require("dsl.diagnostics").render(diags, result.sources))
      io.stderr:write(string.format("zever check-boundaries: %d crossing%s\n", #list,
        #list == 1 and "" or "s"))
    end
    return #list > 0 and 1 or 0
  end,
}
