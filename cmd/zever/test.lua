-- zever test [paths...]: runs busted specs inside the host, so specs require zever's C modules
-- exactly as applications do. Prints failures as they happen and ends with one summary line,
-- "N passed, M failed" (", K skipped" when any are); exits 1 when anything failed.

local reporter = require "zever.testing.reporter"

local function add(argv, ...)
  for i = 1, select("#", ...) do argv[#argv + 1] = select(i, ...) end
end

return {
  name = "test",
  summary = "Run busted specs inside the host (default: the spec folder)",
  usage = "zever test [paths...] [--tags a,b] [--exclude-tags a,b] [--filter PATTERN]",
  flags = {
    { name = "tags", arg = "LIST", summary = "run only specs tagged with one of these (#redis)" },
    { name = "exclude-tags", arg = "LIST", summary = "skip specs tagged with one of these" },
    { name = "filter", arg = "PATTERN", summary = "run only specs whose full name matches" },
    { name = "pattern", arg = "PATTERN", summary = "file name pattern (default _spec)" },
    { name = "seed", arg = "N", type = "number", summary = "shuffle files and tests with this seed" },
    { name = "verbose", summary = "print every spec's name and tracebacks of failures" },
  },
  run = function(args, flags)
    local argv = { "--output=zever.testing.reporter" }
    if flags.tags then add(argv, "--tags=" .. flags.tags) end
    if flags["exclude-tags"] then add(argv, "--exclude-tags=" .. flags["exclude-tags"]) end
    if flags.filter then add(argv, "--filter=" .. flags.filter) end
    if flags.pattern then add(argv, "--pattern=" .. flags.pattern) end
    if flags.seed then add(argv, "--shuffle", "--seed=" .. math.floor(flags.seed)) end
    if flags.verbose then add(argv, "--verbose") end
    if #args == 0 then args = { "spec" } end
    add(argv, unpack(args))
    rawset(_G, "arg", argv)
    reporter.reset()
    require("zever.app").testing = true
    -- busted's runner raises an empty error instead of exiting when something failed (it
    -- believes it was not run from its own script); the reporter has the counts either way.
    local ok, err = pcall(require("busted.runner"), { standalone = false, output = "zever.testing.reporter" })
    if not ok and err ~= nil then return 1, tostring(err) end
    local counts = reporter.counts()
    return (counts.failed > 0 or counts.ran == 0) and 1 or 0
  end,
}
