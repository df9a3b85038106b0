-- zever version: the version of zever and of the LuaJIT it embeds; from a bundle (zever bundle)
-- also the app's git revision and the bundle's content hash.

local sys = require "zever.sys"

return {
  name = "version",
  json = true,
  dry_run = false,
  summary = "Print the version of zever and of its LuaJIT",
  usage = "zever version [--json]",
  flags = {
    { name = "json", summary = "print a JSON object" },
  },
  run = function(_, flags)
    local bundle = require "zever.bundle"
    local info = bundle.info()
    local meta = {}
    for k, v in (bundle.read("meta/build") or ""):gmatch("([%w_]+)=([^\n]*)") do meta[k] = v end
    if flags.json and not info then
      print(string.format('{"version":"%s","luajit":"%s"}', sys.version, jit.version))
    elseif flags.json then
      local json = require "zever.json"
      print(json.encode({ version = sys.version, luajit = jit.version,
        revision = info and meta.revision or nil, hash = info and info.hash or nil }))
    else
      print(string.format("zever %s (%s)", sys.version, jit.version))
      if info then
        print(string.format("app revision %s", meta.revision or "unknown"))
        print(string.format("bundle %s (%d files, %d bytes)", info.hash, info.files, info.size))
      end
    end
    return 0
  end,
}
