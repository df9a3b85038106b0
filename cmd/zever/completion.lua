-- zever completion bash|zsh|fish: prints a completion script generated from the command files
-- (zever.cli.completion). `--words KIND` is what the scripts call while completing, for values
-- only the app or the build knows: commands, batteries (and battery/adapter pairs), explain
-- (the Service.Rpc names of schema/), jobs (the ids of the app's failed jobs). --words fails
-- silently (no output, exit 0): a completion must never print an error into the command line.

local format = string.format

local function words(kind)
  if kind == "commands" then
    return require("cmd.zever").names()
  elseif kind == "batteries" then
    local scaffold = require "zever.cli.scaffold"
    local out = {}
    for _, b in ipairs(scaffold.batteries()) do
      out[#out + 1] = b
      for _, a in ipairs(scaffold.adapters(b)) do out[#out + 1] = b .. "/" .. a end
    end
    return out
  elseif kind == "explain" then
    local result = require("dsl.compile").compile({ "schema" })
    local out = {}
    for _, svc in ipairs(result and result.ir and result.ir.services or {}) do
      for _, rpc in ipairs(svc.rpcs or {}) do out[#out + 1] = svc.name .. "." .. rpc.name end
    end
    return out
  elseif kind == "jobs" then
    local cliapp = require "zever.cli.app"
    local target = cliapp.resolve({}, nil, "completion")
    local app = target and cliapp.load(target)
    local rows = app and app.jobs:failed({ limit = 100 }) or {}
    local out = { "--all" }
    for _, r in ipairs(rows) do out[#out + 1] = tostring(r.id) end
    if app then app:close() end
    return out
  end
  return {}
end

return {
  name = "completion",
  json = false,
  dry_run = false,
  why = "prints a shell script, not data; writes nothing",
  summary = "Print a shell completion script (bash, zsh or fish)",
  usage = "zever completion bash|zsh|fish",
  help = "bash: source <(zever completion bash)\n" ..
    "zsh:  source <(zever completion zsh)\n" ..
    "fish: zever completion fish | source",
  flags = {
    { name = "words", arg = "KIND", summary = "print completion words: commands, batteries, explain, jobs" },
  },
  run = function(args, flags)
    if flags.words then
      local ok, list = pcall(words, flags.words)
      if ok then
        for _, w in ipairs(list) do print(w) end
      end
      return 0
    end
    if #args ~= 1 then return 2, "want one shell; usage: zever completion bash|zsh|fish" end
    local completion = require "zever.cli.completion"
    local text, err = completion.script(args[1])
    if not text then
      local best = require("zever.text").closest(args[1], { "bash", "zsh", "fish" })
      return 2, err .. (best and format('; did you mean "%s"?', best) or "")
    end
    io.write(text)
    return 0
  end,
}
