-- zever graph [paths...] [--module m] [--er | --modules]: the schema as Mermaid diagrams
-- (dsl/graph.lua): an ER diagram of the entities and their relations, then the module
-- dependency graph. The schema must compile without errors (exit 1 with the diagnostics).

return {
  name = "graph",
  summary = "Draw the .zen schema as Mermaid diagrams: entities and relations, module dependencies",
  usage = "zever graph [paths...] [--module m] [--er | --modules]",
  help = "Paths are .zen files or folders (default: schema/). Prints a Mermaid erDiagram of the\n"
    .. "entities (columns with PK, FK, UK) and their relations, then a flowchart of the modules\n"
    .. "with an arrow where one refers to another (labelled with the number of references).\n"
    .. "Paste into any Mermaid renderer (GitHub renders ```mermaid blocks). --json: {er, modules}.\n"
    .. "Exit codes: 0 ok, 1 the schema has errors, 2 usage.",
  json = true,
  dry_run = false,
  flags = {
    { name = "module", arg = "NAME", summary = "only this module's entities (and what they point at)" },
    { name = "er", summary = "only the ER diagram" },
    { name = "modules", summary = "only the module graph" },
  },
  run = function(args, flags)
    local graph = require "dsl.graph"
    local result, err = require("dsl.compile").compile_clean(args)
    if not result then return 1, err end
    local ir = result.ir
    if flags.module then
      local known = false
      for _, m in ipairs(ir.modules) do known = known or m == flags.module end
      if not known then
        return 2, string.format("no module %s (modules: %s)", flags.module, table.concat(ir.modules, ", "))
      end
    end
    local parts, doc = {}, {}
    if not flags.modules then
      doc.er = graph.er(ir, flags.module)
      parts[#parts + 1] = doc.er
    end
    if not flags.er then
      doc.modules = graph.modules(ir)
      parts[#parts + 1] = doc.modules
    end
    if flags.json then
      require("zever.cli.output").emit(flags, doc)
    else
      io.stdout:write(table.concat(parts, "\n"))
    end
    return 0
  end,
}
