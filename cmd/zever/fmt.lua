-- zever fmt [paths...] [-l | --check | --write]: formats .zen files into their canonical form
-- (dsl/format.lua). By default it prints each formatted file to stdout; -l lists the files whose
-- text would change; --check lists them too and exits 1 when there is any (for CI, as prettier,
-- black and rustfmt --check do); --write rewrites those files in place (through a temporary
-- file and a rename, so a failed write leaves the original). A file that does not lex or parse
-- cleanly is refused: its diagnostics go to stderr, it is left alone, the other files are still
-- done, and the exit code is 1. It must not touch a file whose text is already canonical.

local function read(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local s = f:read("*a")
  f:close()
  return s
end

-- Replaces path's content with text: write a sibling temporary file, then rename it over path.
local function rewrite(path, text)
  local tmp = path .. ".zever-fmt.tmp"
  local f, err = io.open(tmp, "wb")
  if not f then return nil, err end
  local ok, werr = f:write(text)
  f:close()
  if not ok then
    os.remove(tmp)
    return nil, werr
  end
  local moved, merr = os.rename(tmp, path)
  if not moved then
    os.remove(tmp)
    return nil, merr
  end
  return true
end

return {
  name = "fmt",
  summary = "Format .zen schema files into their canonical form",
  usage = "zever fmt [paths...] [-l] [--check] [--write] [--go]",
  help = "Paths are .zen files or folders searched for them (default: schema/). Without flags\n"
    .. "the formatted text is printed to stdout. The form: 2-space indent, one member a line,\n"
    .. "one blank line between declarations, comments kept. Files that do not lex or parse\n"
    .. "cleanly are refused with their diagnostics.\n"
    .. "--go writes the Go framework's form (@validate(format: \"email\") quoted) and refuses,\n"
    .. "with a diagnostic each, the forms of this dialect its compiler does not read ([T] lists,\n"
    .. "module.Type, @default(true), backoff other than exponential, prefix:, timeout:, ...).\n"
    .. "--json: [{file, differs, text?}] (text unless -l or --write); --write --dry-run (or\n"
    .. "--dry-run alone) lists the files --write would rewrite and writes nothing.\n"
    .. "--check lists the files whose formatting differs, as -l, and exits 1 when there is any.\n"
    .. "Exit codes: 0 ok (also when -l lists files), 1 a file refused or unreadable (or, with\n"
    .. "--check, a file not formatted), 2 usage.",
  json = true,
  dry_run = true,
  flags = {
    { name = "l", summary = "list the files whose formatting differs instead of printing them" },
    { name = "check", summary = "list the files whose formatting differs; exit 1 when there is any" },
    { name = "write", summary = "rewrite the files whose formatting differs in place" },
    { name = "go", summary = "write the Go framework's form; refuse what its compiler does not read" },
  },
  run = function(args, flags)
    -- The compiler loads here, not at the top: `zever help` reads every command file.
    local format = require "dsl.format"
    local diagnostics = require "dsl.diagnostics"
    local output = require "zever.cli.output"
    local json = require "zever.json"
    if flags.check and flags.write then return 2, "--check and --write: choose one" end
    if flags.check then flags.l = true end
    if #args == 0 then args = { "schema" } end
    local files, cerr = require("dsl.compile").collect(args)
    if not files then return 1, cerr end
    if #files == 0 then return 1, "no .zen files found in " .. table.concat(args, ", ") end
    local code = 0
    local dry = flags["dry-run"]
    local rows, actions = {}, {}
    local unformatted = 0
    for _, file in ipairs(files) do
      local src, rerr = read(file)
      local out, err
      if src then out, err = format.format(src, file, { go = flags.go }) end
      if not src then
        io.stderr:write("zever fmt: ", rerr, "\n")
        code = 1
      elseif not out then
        io.stderr:write(diagnostics.render(err.diagnostics, { [file] = src }))
        io.stderr:write("zever fmt: ", err.message, "\n")
        code = 1
      else
        local differs = out ~= src
        if differs then unformatted = unformatted + 1 end
        if dry then
          if differs then actions[#actions + 1] = { action = "rewrite", target = file } end
        elseif flags.json then
          rows[#rows + 1] = { file = file, differs = differs,
            text = not (flags.l or flags.write) and out or nil }
        elseif flags.l and differs then
          io.stdout:write(file, "\n")
        end
        if flags.write and not dry then
          if differs then
            local ok, werr = rewrite(file, out)
            if not ok then
              io.stderr:write("zever fmt: ", werr, "\n")
              code = 1
            end
          end
        elseif not flags.l and not dry and not flags.json then
          io.stdout:write(out)
        end
      end
    end
    if dry then
      output.would(flags, actions)
    elseif flags.json then
      output.emit(flags, json.array(rows))
    end
    if flags.check and unformatted > 0 and not dry then
      if not flags.json then
        io.stderr:write(("zever fmt: %d file%s not formatted (zever fmt --write formats them)\n")
          :format(unformatted, unformatted == 1 and " is" or "s are"))
      end
      if code == 0 then code = 1 end
    end
    return code
  end,
}
