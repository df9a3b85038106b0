-- zever bundle [app] [-o FILE] [--exclude GLOBS] [--include GLOBS]: writes one executable file
-- that carries the zever host, the framework's bytecode, the LAZY modules and the app folder
-- (zever.bundle_build; the format: host/sys/bundle.h; docs/deploy.md). The file runs like
-- `zever <command> app` from a checkout: `./dist/app serve`, `./dist/app migrate up`, ...
-- --dry-run builds the payload in memory and says what it would write; --json prints the report.

local sys = require "zever.sys"
local cliapp = require "zever.cli.app"
local build = require "zever.bundle_build"
local output = require "zever.cli.output"

local format = string.format

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- The app's git revision ("<sha>" or "<sha>-dirty"), or "unknown" outside a repository.
local function revision(dir)
  local q = shell_quote(dir)
  local f = io.popen("git -C " .. q .. " rev-parse HEAD 2>/dev/null")
  local rev = f and f:read("*l")
  if f then f:close() end
  if not rev or not rev:match("^%x+$") then return "unknown" end
  f = io.popen("git -C " .. q .. " status --porcelain -- . 2>/dev/null")
  local dirty = f and f:read("*l")
  if f then f:close() end
  return dirty and (rev .. "-dirty") or rev
end

return {
  name = "bundle",
  summary = "Build one executable file holding zever and the app",
  usage = "zever bundle [app] [-o FILE] [--exclude GLOBS] [--include GLOBS] [--dry-run] [--json]",
  -- --json: {path, files, bytes, host_bytes, hash}; --dry-run: the same, computed (the payload
  -- is packed in memory, so the hash is the file's), and nothing written, no folder made.
  json = true,
  dry_run = true,
  help = "The file runs every command on the app it carries (./dist/app serve, migrate up,\n" ..
    "worker, version); the app folder it stands for is the working directory, where its\n" ..
    "SQLite file lives. Left out unless --include names them: " ..
    table.concat(build.DEFAULT_EXCLUDE, " ") .. ".",
  flags = {
    cliapp.FLAG,
    { name = "o", arg = "FILE", summary = "the file to write (default: dist/<app folder name>)" },
    { name = "exclude", arg = "GLOBS", type = "list", summary = "leave these files out (a,b)" },
    { name = "include", arg = "GLOBS", type = "list",
      summary = "keep these files that the defaults leave out (a,b)" },
    { name = "keep-debug", summary = "keep the host's and modules' debug info (for gdb)" },
  },
  run = function(args, flags)
    if args[2] then return 2, "one app only; usage: zever bundle [app] [-o FILE]" end
    local target, terr = cliapp.resolve(flags, args[1], "bundle")
    if not target then return 2, terr end
    local out = flags.o or ("dist/" .. (target.dir:match("([^/]+)$") or "app"))
    if out == "" then return 2, "-o wants a file name" end
    local bundle = require "zever.bundle"
    local files, err = build.collect({ home = not bundle.active and sys.home() or nil,
      app = target.dir, exclude = flags.exclude, include = flags.include,
      revision = revision(target.dir), keep_debug = flags["keep-debug"] })
    if not files then return 1, err end
    local host, herr = build.host(flags["keep-debug"])
    if not host then return 1, herr end
    local bytes, hash = build.pack(host, files)
    local count = 0
    for _ in pairs(files) do count = count + 1 end
    local report = { path = out, files = count, bytes = #bytes, host_bytes = #host, hash = hash }
    if flags["dry-run"] then
      output.would(flags, { { action = "write", target = format("%s (%d files, %d bytes, content hash %s)",
        out, count, #bytes, hash), path = out, files = count, bytes = #bytes, hash = hash } })
      return 0
    end
    local dir = out:match("^(.*)/[^/]*$")
    if dir and dir ~= "" and not sys.isdir(dir) then
      os.execute("mkdir -p " .. shell_quote(dir))
    end
    local ok, werr = build.write(out, bytes)
    if not ok then return 1, format("cannot write %s: %s", out, tostring(werr)) end
    output.emit(flags, report, format("%s: %d files, %d bytes (host %d), content hash %s", out, count,
      #bytes, #host, hash))
    return 0
  end,
}
