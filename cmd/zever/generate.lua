-- zever generate entity|rpc|job|schedule|migration|spec NAME [field:type ...]: appends a .zen
-- declaration to the app's schema (schema/app.zen, or --schema FILE) or writes a file from the
-- templates `zever new` uses. A schema edit is compiled with the rest of the schema first and
-- written only when the result has no error (the diagnostics are printed otherwise, exit 1);
-- an RPC or a job then gets its handler stub in handlers/ at once (zever.cli.stubs, as
-- `zever gen` does). It never overwrites a file: a spec or migration that exists is an error.
-- --dry-run prints what it would write; --json prints one document instead of the lines
-- ({ kind, name, file, declaration, stubs, register_hint } or a dry run's actions).

local sys = require "zever.sys"
local cliapp = require "zever.cli.app"

local format, concat = string.format, table.concat

local KINDS = { "entity", "rpc", "job", "schedule", "migration", "spec" }
local USAGE = "zever generate entity|rpc|job|schedule|migration|spec NAME [field:type ...]" ..
  " [--schema FILE] [--http 'METHOD /path'] [--auth none|required] [--returns TYPE]" ..
  " [--cron SPEC] [--dispatch JOB] [--dry-run] [--json]"

local slurp = require("zever.file").read

local function write(path, text)
  local dir = path:match("^(.*)/[^/]*$")
  if dir and not sys.isdir(dir) then os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "'") end
  local f, err = io.open(path, "wb")
  if not f then return nil, err end
  f:write(text)
  f:close()
  return true
end

-- "title:string" items -> { "title: string", ... } | nil, message. "name:type?" is optional.
local function fields(items)
  local out = {}
  for _, item in ipairs(items) do
    local name, ty = item:match("^([%a_][%w_]*):([%w_.%[%]?]+)$")
    if not name then return nil, format('want field:type items, got "%s"', item) end
    out[#out + 1] = { name = name, type = ty }
  end
  return out
end

local function snake(name)
  return require("dsl.ir").snake(name)
end

local function args_text(fs)
  local parts = {}
  for i, f in ipairs(fs) do parts[i] = f.name .. ": " .. f.type end
  return concat(parts, ", ")
end

-- The declaration text for entity, job and schedule; for rpc, the text and the service to put
-- it in (a new service block when the service is new). The text is in zever fmt's form
-- (dsl/format.lua: one member a line), so a schema grown by generate passes `zever fmt --check`.
local function declaration(kind, name, fs, flags)
  if kind == "entity" then
    local lines = { "entity " .. name .. " {" }
    local has_id = false
    for _, f in ipairs(fs) do has_id = has_id or f.name == "id" end
    if not has_id then lines[#lines + 1] = "  id: int64 @primary" end
    for _, f in ipairs(fs) do
      lines[#lines + 1] = format("  %s: %s%s", f.name, f.type, f.name == "id" and " @primary" or "")
    end
    lines[#lines + 1] = "}"
    return concat(lines, "\n") .. "\n"
  elseif kind == "job" then
    return format("job %s(%s) {\n  queue: default\n}\n", name, args_text(fs))
  elseif kind == "schedule" then
    if not flags.cron or not flags.dispatch then
      return nil, "schedule wants --cron 'SPEC' and --dispatch JOB"
    end
    local call = flags.dispatch:find("(", 1, true) and flags.dispatch or flags.dispatch .. "()"
    return format("schedule %s {\n  cron: %q\n  dispatch: %s\n}\n", name, flags.cron, call)
  end
  -- rpc: Service.Rpc
  local svc, rpc = name:match("^([%a_][%w_]*)%.([%a_][%w_]*)$")
  if not svc then return nil, "an rpc is named Service.Rpc (NoteService.GetNote)" end
  local method, path = (flags.http or ""):match("^(%u+)%s+(/%S*)$")
  if flags.http and not method then return nil, "--http wants 'METHOD /path'" end
  method = method or "POST"
  path = path or "/" .. snake(svc):gsub("_service$", "") .. "/" .. snake(rpc)
  local auth = flags.auth or "required"
  if auth ~= "none" and auth ~= "required" then return nil, "--auth wants none or required" end
  -- A path parameter is an input: say which field to add, before the compiler says it is
  -- missing (an id is an int64, as generate's entities' ids are).
  local given = {}
  for _, f in ipairs(fs) do given[f.name] = true end
  for param in path:gmatch("{([%a_][%w_]*)}") do
    if not given[param] then
      local hint = param:match("_id$") or param == "id" and true
      return nil, format("--http's path names {%s}: give it as a field too (%s:%s)", param, param,
        hint and "int64" or "string")
    end
  end
  local text = format("  rpc %s(%s)%s {\n    http: %s %q\n    auth: %s\n  }\n", rpc, args_text(fs),
    flags.returns and (" -> " .. flags.returns) or "", method, path, auth)
  return text, svc
end

-- src with an rpc line added to service svc (before its closing brace), or a new service.
local function add_rpc(src, svc, line)
  local s, e = src:find("\nservice%s+" .. svc .. "%s*{")
  if not s and src:find("^service%s+" .. svc .. "%s*{") then s, e = 1, src:find("{") end
  if not s then
    return src .. (src:match("\n\n$") and "" or "\n") .. "service " .. svc .. " {\n" .. line .. "}\n"
  end
  local close = src:find("\n}", e)
  if not close then return nil end
  return src:sub(1, close) .. line .. src:sub(close + 1)
end

local function compile_check(files, path, text)
  local compile = require "dsl.compile"
  local sources, names = {}, {}
  for _, f in ipairs(files) do
    sources[f] = slurp(f) or ""
    names[#names + 1] = f
  end
  if not sources[path] then names[#names + 1] = path end
  sources[path] = text
  local result = compile.compile_sources(sources, names)
  return result
end

-- What a run did (or would do, dry): lines on a terminal, one document under --json. doc has
-- kind, name, file (relative to the app), and for a schema edit declaration and stubs.
local function report(flags, doc, lines)
  local output = require "zever.cli.output"
  if flags["dry-run"] then
    local action = { action = doc.file:match("%.zen$") and "append" or "write", target = doc.file }
    if flags.json then
      output.would(flags, { action }, { kind = doc.kind, name = doc.name,
        declaration = doc.declaration, content = doc.content })
    else
      io.write(doc.declaration or doc.content)
    end
    return 0
  end
  if flags.json then
    local json = require "zever.json"
    doc.content = nil
    if doc.stubs then doc.stubs = json.array(doc.stubs) end
    output.emit(flags, doc)
    return 0
  end
  for _, l in ipairs(lines) do print(l) end
  return 0
end

local SPEC = [[
-- spec/%s_spec.lua: `zever test` runs it in the test environment, with a fresh database.
local testing = require "zever.testing"

local APP = debug.getinfo(1, "S").source:match("^@(.*)/spec/[^/]*$") or "."

describe("%s", function()
  local t
  before_each(function() t = testing.app(APP) end)
  after_each(function() t:close() end)

  it("answers /healthz", function()
    assert.are.equal(200, t:get("/healthz").status)
  end)
end)
]]

return {
  name = "generate",
  json = true,
  dry_run = true,
  summary = "Append a .zen declaration (entity, rpc, job, schedule) or write a migration or spec",
  usage = USAGE,
  flags = {
    cliapp.FLAG,
    { name = "schema", arg = "FILE", summary = "the .zen file to append to (default schema/app.zen)" },
    { name = "http", arg = "'METHOD /path'", summary = "rpc: its route (default POST /<service>/<rpc>)" },
    { name = "auth", arg = "none|required", summary = "rpc: who may call it (default required)" },
    { name = "returns", arg = "TYPE", summary = "rpc: its output type" },
    { name = "cron", arg = "SPEC", summary = "schedule: when" },
    { name = "dispatch", arg = "JOB", summary = "schedule: the job it dispatches (Job or 'Job(a: 1)')" },
    { name = "dry-run", summary = "print what would be written, write nothing" },
  },
  run = function(args, flags)
    local kind, name = args[1], args[2]
    if not kind then return 2, "usage: " .. USAGE end
    local known = false
    for _, k in ipairs(KINDS) do known = known or k == kind end
    if not known then
      local best = require("zever.text").closest(kind, KINDS)
      return 2, format('unknown kind "%s"%s (one of %s)', kind,
        best and format('; did you mean "%s"?', best) or "", concat(KINDS, ", "))
    end
    if not name then return 2, kind .. ": missing NAME; usage: " .. USAGE end
    local items = {}
    for i = 3, #args do items[#items + 1] = args[i] end
    local fs, ferr = fields(items)
    if not fs then return 2, ferr end
    local target, terr = cliapp.resolve(flags, nil, "generate")
    if not target then return 2, terr end
    -- --schema FILE names where to write; otherwise the folder must be an app.
    local is_app, nerr = cliapp.is_app(target)
    if not is_app and not flags.schema then return 1, nerr end
    local root = target.dir

    if kind == "spec" or kind == "migration" then
      if not name:match("^[%w_]+$") then return 2, kind .. ": a name is letters, digits and _" end
      if kind == "migration" then
        local cfg, cerr = cliapp.config(target)
        if not cfg then return 1, tostring(cerr) end
        local migrations = require "zever.migrations"
        local dry = flags["dry-run"]
        local path, merr = (dry and migrations.next_path or migrations.new)(cfg.db.migrations, name)
        if not path then return 1, merr.message end
        local rel = path:sub(1, #root + 1) == root .. "/" and path:sub(#root + 2) or path
        if dry and not flags.json then print("would write " .. rel) return 0 end
        return report(flags, { kind = kind, name = name, file = rel },
          { "wrote " .. rel })
      end
      local path = root .. "/spec/" .. name .. "_spec.lua"
      if slurp(path) then return 1, path .. " exists (generate never overwrites)" end
      local text = format(SPEC, name, name)
      local doc = { kind = kind, name = name, file = "spec/" .. name .. "_spec.lua", content = text }
      if not flags["dry-run"] then
        local ok, werr = write(path, text)
        if not ok then return 1, tostring(werr) end
      end
      return report(flags, doc, { "wrote " .. doc.file })
    end

    if kind ~= "rpc" and not name:match("^%u[%w_]*$") then
      return 2, kind .. ": a name is CamelCase (" .. (kind == "entity" and "Post" or "SendMail") .. ")"
    end
    local path = flags.schema or (root .. "/schema/app.zen")
    local src = slurp(path) or ""
    local text, svc = declaration(kind, name, fs, flags)
    if not text then return 2, svc end
    local new
    if kind == "rpc" then
      new = add_rpc(src, svc, text)
      if not new then return 1, "service " .. svc .. " has no closing brace at a line start" end
    else
      new = src .. ((src == "" or src:match("\n\n$")) and "" or "\n") .. text
    end
    local compile = require "dsl.compile"
    local files = compile.collect({ root .. "/schema" }) or {}
    local result = compile_check(files, path, new)
    if result.errors and result.errors > 0 then
      local diags = require("dsl.diagnostics").render(result.diags, result.sources)
      local msg = format("%s %s: the schema would have errors; %s is unchanged", kind, name, path)
      -- Under --json the diagnostics are in the one error document, not before it.
      if flags.json then return 1, diags .. msg end
      io.stderr:write(diags)
      return 1, msg
    end
    local rel = path:sub(1, #root + 1) == root .. "/" and path:sub(#root + 2) or path
    local doc = { kind = kind, name = name, file = rel, declaration = text }
    if flags["dry-run"] then return report(flags, doc) end
    local ok, werr = write(path, new)
    if not ok then return 1, tostring(werr) end
    local lines = { format("added %s %s to %s", kind, name, rel) }
    doc.stubs = {}
    if kind == "rpc" or kind == "job" then
      local added = require("zever.cli.stubs").sync(result.ir, root)
      for _, line in ipairs(added and added.added or {}) do
        doc.stubs[#doc.stubs + 1] = line
        lines[#lines + 1] = "added stub " .. line
      end
    end
    -- An entity's table comes as a migration zever gen writes into migrations/ (docs/generate.md).
    lines[#lines + 1] = kind == "entity" and "next: zever gen, then zever migrate up (its table)"
      or "next: zever gen"
    -- An app.lua that does not register the generated routes or jobs (an older zever new's):
    -- say how.
    local app_lua = (kind == "rpc" or kind == "job" or kind == "schedule") and slurp(root .. "/app.lua")
    if app_lua and kind == "rpc" and not app_lua:find("generated.routes", 1, true) then
      doc.register_hint = 'require("generated.routes").register(app, nil, ' ..
        "{ auth = function(req) ... end })"
      lines[#lines + 1] = "then in app.lua: " .. doc.register_hint
      lines[#lines + 1] = "  (an RPC wants a signed-in caller unless it says auth: none; docs/new.md)"
    elseif app_lua and kind ~= "rpc" and not app_lua:find("generated.jobs", 1, true) then
      doc.register_hint = 'require("generated.jobs").register(app)'
      lines[#lines + 1] = "then in app.lua: " .. doc.register_hint
    end
    return report(flags, doc, lines)
  end,
}
