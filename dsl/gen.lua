-- dsl.gen: the driver of the schema compiler's backends. It compiles .zen sources
-- (dsl/compile.lua), runs the requested backends over the IR in a fixed order, merges their files
-- and writes them under an output folder, touching only files whose bytes changed.
--
--   gen.ORDER                         -> { "models", "migrations", "routes", "jobs", "openapi" }
--   gen.backends(names)               -> list of backend modules | nil, err   (names nil: default)
--   gen.generate(ir, opts)            -> files, by_backend | nil, err
--   gen.write(files, out)             -> report | nil, err
--   gen.load_snapshot(dir)            -> snapshot table or nil | nil, err (dir: migrations)
--   gen.migrations_dir(opts)          -> opts.migrations, else <opts.out>/migrations
--   gen.place(path, opts)             -> folder, path below it (migrations/* -> migrations_dir)
--   gen.last_version(dir)             -> the highest NNNN of dir's migration files, or 0
--   gen.run(paths, opts)              -> report | nil, err
--                                        opts.step(label): called as each phase starts
--                                        ("compile", then each backend's name; zever gen's bar)
--                                        opts.migrations: the migrations backend's folder
--   gen.literal(v[, indent])          -> v as deterministic Lua source (sorted keys)
--
-- A backend is a module dsl.backends.<name> returning { name =, generate = function(ir, opts) }
-- where generate returns files (relative path -> bytes, or -> { content =, once = true } for a
-- file written only when it does not exist yet, such as a handler stub), or nil, err. Backends are
-- pure: same IR and opts, same bytes; no clock, no file system. opts holds at least snapshot (the
-- previous schema snapshot, for migrations), allow_drop and out.
--
-- A default run (no names) skips backends whose module does not exist yet; naming a missing one
-- is an error. err is { code =, message = } with code "invalid" (bad request), "not_found" (no
-- .zen file under the paths), "schema" (the sources have errors; err.result holds the compile
-- result), "backend" (a backend refused) or "io". It must not print: cmd/zever/gen.lua does.

local compile = require "dsl.compile"

local concat, sort = table.concat, table.sort
local format = string.format
local type, pairs, ipairs, tostring, pcall, require = type, pairs, ipairs, tostring, pcall, require

local M = {}

M.ORDER = { "models", "migrations", "routes", "jobs", "openapi" }

local Error = { __tostring = function(e) return "gen: " .. e.code .. ": " .. e.message end }

local function fail(code, message, extra)
  local e = setmetatable({ code = code, message = message }, Error)
  for k, v in pairs(extra or {}) do e[k] = v end
  return nil, e
end

-- literal ---------------------------------------------------------------------------------------

local function quote(s)
  return (format("%q", s):gsub("\\\n", "\\n"))
end

local function number(v)
  if v == math.floor(v) and v > -2 ^ 53 and v < 2 ^ 53 then return format("%d", v) end
  local s = format("%.14g", v)
  if tonumber(s) ~= v then s = format("%.17g", v) end
  return s
end

local function key_text(k)
  if type(k) == "string" and k:match("^[%a_][%w_]*$") then return k end
  return "[" .. (type(k) == "string" and quote(k) or number(k)) .. "]"
end

-- True when t is a non-empty array 1..n with no other keys.
local function is_array(t)
  local n = #t
  if n == 0 then return false end
  for k in pairs(t) do
    if type(k) ~= "number" or k < 1 or k > n or k % 1 ~= 0 then return false end
  end
  return true
end

local function short(t)
  for _, v in pairs(t) do if type(v) == "table" then return false end end
  return true
end

-- v as Lua source: tables with sorted keys (arrays in order), one key a line when nested.
function M.literal(v, indent)
  indent = indent or ""
  local tv = type(v)
  if tv == "string" then return quote(v) end
  if tv == "number" then return number(v) end
  if tv == "boolean" or tv == "nil" then return tostring(v) end
  if tv ~= "table" then error("literal: cannot write a " .. tv, 2) end
  if next(v) == nil then return "{}" end
  local parts = {}
  if is_array(v) then
    for i, x in ipairs(v) do parts[i] = M.literal(x, indent .. "  ") end
  else
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    sort(keys, function(a, b)
      if type(a) ~= type(b) then return type(a) == "number" end
      return a < b
    end)
    for i, k in ipairs(keys) do parts[i] = key_text(k) .. " = " .. M.literal(v[k], indent .. "  ") end
  end
  local flat = "{ " .. concat(parts, ", ") .. " }"
  if short(v) and #flat + #indent <= 96 then return flat end
  return "{\n" .. indent .. "  " .. concat(parts, ",\n" .. indent .. "  ") .. ",\n" .. indent .. "}"
end

-- backends --------------------------------------------------------------------------------------

local KNOWN = {}
for i, name in ipairs(M.ORDER) do KNOWN[name] = i end

-- Loads dsl.backends.<name>: the module, or nil and why (false when the file does not exist).
local function load(name)
  local modname = "dsl.backends." .. name
  if package.loaded[modname] then return package.loaded[modname] end
  if not package.searchpath(modname, package.path) then return false end
  local ok, mod = pcall(require, modname)
  if not ok then return nil, tostring(mod) end
  if type(mod) ~= "table" or type(mod.generate) ~= "function" then
    return nil, modname .. " must return a table with a generate function"
  end
  return mod
end

function M.backends(names)
  local explicit = names ~= nil
  if type(names) == "string" then names = { names } end
  names = names or M.ORDER
  local wanted = {}
  for _, name in ipairs(names) do
    if not KNOWN[name] then
      local text = require "zever.text"
      local best = text.closest(name, M.ORDER)
      return fail("invalid", format("unknown backend %q%s (backends: %s)", name,
        best and format(" (did you mean %s?)", best) or "", concat(M.ORDER, ", ")))
    end
    wanted[name] = true
  end
  local out = {}
  for _, name in ipairs(M.ORDER) do
    if wanted[name] then
      local mod, why = load(name)
      if mod then
        out[#out + 1] = mod
      elseif mod == nil then
        return fail("backend", format("backend %s does not load: %s", name, why))
      elseif explicit then
        return fail("invalid", format("backend %s is not available yet (no dsl/backends/%s.lua)",
          name, name))
      end
    end
  end
  return out
end

-- Runs the backends over ir. files: path -> { content =, once =, backend = }; by_backend: name ->
-- the backend's own map (path -> bytes) for goldens.
function M.generate(ir, opts)
  opts = opts or {}
  local list, err = M.backends(opts.backends)
  if not list then return nil, err end
  local files, by_backend = {}, {}
  local bopts = { snapshot = opts.snapshot, allow_drop = opts.allow_drop and true or false,
    out = opts.out or "generated", floor = opts.floor }
  for _, backend in ipairs(list) do
    local name = backend.name
    if opts.step then opts.step(name) end -- progress (zever gen's bar): this backend runs now
    local ok, res, berr = pcall(backend.generate, ir, bopts)
    if not ok then return fail("backend", format("backend %s raised: %s", name, tostring(res))) end
    if not res then
      local msg = type(berr) == "table" and berr.message or tostring(berr)
      return fail("backend", format("%s: %s", name, msg), { backend = name, cause = berr })
    end
    local own = {}
    for path, v in pairs(res) do
      local content, once = v, false
      if type(v) == "table" then content, once = v.content, v.once and true or false end
      if type(path) ~= "string" or type(content) ~= "string" or path:find("%.%.") or
        path:sub(1, 1) == "/" then
        return fail("backend", format("backend %s returned a bad file %s", name, tostring(path)))
      end
      if files[path] then
        return fail("backend", format("backends %s and %s both write %s", files[path].backend,
          name, path))
      end
      files[path] = { content = content, once = once, backend = name }
      own[path] = content
    end
    by_backend[name] = own
  end
  return files, by_backend
end

-- writing ---------------------------------------------------------------------------------------

local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end
M.read = read

local function shell_quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

function M.mkdir_p(dir)
  local sys = require "zever.sys"
  if sys.isdir(dir) then return true end
  local ok = os.execute("mkdir -p " .. shell_quote(dir))
  if (ok ~= true and ok ~= 0) or not sys.isdir(dir) then
    return fail("io", "cannot create the folder " .. dir)
  end
  return true
end

local function write_file(path, content)
  local dir = path:match("^(.*)/[^/]*$")
  if dir and dir ~= "" then
    local ok, err = M.mkdir_p(dir)
    if not ok then return nil, err end
  end
  local tmp = path .. ".tmp"
  local f, oerr = io.open(tmp, "wb")
  if not f then return fail("io", tostring(oerr)) end
  f:write(content)
  f:close()
  local ok, rerr = os.rename(tmp, path)
  if not ok then
    os.remove(tmp)
    return fail("io", tostring(rerr))
  end
  return true
end

-- Writes files under out. A file whose bytes are unchanged is not touched; a "once" file that
-- exists is kept as it is. report = { written = {paths}, unchanged = {paths}, kept = {paths} },
-- each sorted (paths relative to out).
function M.write(files, out)
  if type(files) ~= "table" then error("gen.write: files must be a table", 2) end
  if type(out) ~= "string" or out == "" then error("gen.write: out must be a folder name", 2) end
  local paths = {}
  for path in pairs(files) do paths[#paths + 1] = path end
  sort(paths)
  local report = { written = {}, unchanged = {}, kept = {} }
  for _, path in ipairs(paths) do
    local f = files[path]
    local content = type(f) == "table" and f.content or f
    local full = out:gsub("/+$", "") .. "/" .. path
    local old = read(full)
    if old ~= nil and type(f) == "table" and f.once then
      report.kept[#report.kept + 1] = path
    elseif old == content then
      report.unchanged[#report.unchanged + 1] = path
    else
      local ok, err = write_file(full, content)
      if not ok then return nil, err end
      report.written[#report.written + 1] = path
    end
  end
  return report
end

-- The folder the migrations backend's files go to: opts.migrations, else <out>/migrations.
-- (`zever gen` passes the app's db.migrations: one sequence with the app's own migrations.)
function M.migrations_dir(opts)
  if opts.migrations then return (opts.migrations:gsub("/+$", "")) end
  return (opts.out or "generated"):gsub("/+$", "") .. "/migrations"
end

-- Where a file of the backends' map goes: the migrations backend's "migrations/..." under the
-- migrations folder, every other file under out. Returns the folder and the path below it.
function M.place(path, opts)
  local rest = path:match("^migrations/(.+)$")
  if rest then return M.migrations_dir(opts), rest end
  return (opts.out or "generated"):gsub("/+$", ""), path
end

-- The highest version of the migration files (NNNN_name.lua) in dir, 0 when none or no dir.
function M.last_version(dir)
  local last = 0
  for _, f in ipairs(require("zever.sys").listdir(dir) or {}) do
    local v = f:match("^(%d+)_[%w_%-]+%.lua$")
    if v and tonumber(v) > last then last = tonumber(v) end
  end
  return last
end

-- The previous schema snapshot in the migrations folder dir (written by the migrations
-- backend), or nil when none.
function M.load_snapshot(dir)
  local ok, migrations = pcall(require, "dsl.backends.migrations")
  if not ok then return nil end
  local path = dir:gsub("/+$", "") .. "/" .. migrations.SNAPSHOT:match("[^/]+$")
  local src = read(path)
  if not src then return nil end
  local chunk, err = loadstring(src, "=" .. path)
  if not chunk then return fail("io", "cannot read the snapshot " .. path .. ": " .. err) end
  setfenv(chunk, {})
  local okr, snap = pcall(chunk)
  if not okr or type(snap) ~= "table" then
    return fail("io", "the snapshot " .. path .. " does not return a table")
  end
  return snap
end

-- goldens ---------------------------------------------------------------------------------------

-- The golden fixtures: dsl/testdata/*.zen and spec/fixtures/zen/*.zen under home, as
-- { {name =, file = (relative to home), path = (absolute)} } sorted by name.
function M.golden_fixtures(home)
  local sys = require "zever.sys"
  local out = {}
  for _, dir in ipairs({ "dsl/testdata", "spec/fixtures/zen" }) do
    for _, f in ipairs(sys.listdir(home .. "/" .. dir) or {}) do
      local name = f:match("^(.+)%.zen$")
      if name then
        out[#out + 1] = { name = name, file = dir .. "/" .. f, path = home .. "/" .. dir .. "/" .. f }
      end
    end
  end
  sort(out, function(a, b) return a.name < b.name end)
  return out
end

-- The golden output of one fixture from an empty snapshot: { ["<backend>/<path>"] = bytes },
-- or nil plus the compile result when the fixture has errors (such fixtures have no goldens).
-- opts.backends as for generate (default: every backend that exists).
function M.golden(file, src, opts)
  local result = compile.compile_sources({ [file] = src }, { file })
  if result.errors > 0 then return nil, result end
  local files, by_backend = M.generate(result.ir, { backends = opts and opts.backends })
  if not files then error("golden " .. file .. ": " .. tostring(by_backend), 2) end
  local out = {}
  for name, own in pairs(by_backend) do
    for path, content in pairs(own) do out[name .. "/" .. path] = content end
  end
  return out
end

-- Compiles paths and runs the backends, writing under opts.out (default "generated").
-- opts: backends (list or nil), out, allow_drop, dry_run (generate only). report = the write
-- report plus result (the compile result) and files.
function M.run(paths, opts)
  opts = opts or {}
  local out = opts.out or "generated"
  if opts.step then opts.step("compile") end
  local result, cerr = compile.compile(paths)
  if not result then return fail("io", cerr) end
  if #result.files == 0 then
    return fail("not_found", "no .zen files found in " .. concat(type(paths) == "table" and paths
      or { paths }, ", "), { result = result })
  end
  if result.errors > 0 then
    return fail("schema", format("the schema has %d error%s", result.errors,
      result.errors == 1 and "" or "s"), { result = result })
  end
  local mdir = M.migrations_dir(opts)
  local snapshot, serr = M.load_snapshot(mdir)
  if serr then return nil, serr end
  local floor = M.last_version(mdir)
  local files, gerr = M.generate(result.ir, { backends = opts.backends, snapshot = snapshot,
    allow_drop = opts.allow_drop, out = out, step = opts.step, floor = floor })
  if not files then
    gerr.result = result
    return nil, gerr
  end
  local report = { written = {}, unchanged = {}, kept = {} }
  if not opts.dry_run then
    -- Each file under its folder (M.place); the report's paths are the backends' own.
    local names = {}
    for path in pairs(files) do names[#names + 1] = path end
    sort(names)
    for _, path in ipairs(names) do
      local dir, rel = M.place(path, opts)
      local r, werr = M.write({ [rel] = files[path] }, dir)
      if not r then return nil, werr end
      for k, list in pairs(report) do
        if #r[k] > 0 then list[#list + 1] = path end
      end
    end
  end
  report.result, report.files = result, files
  return report
end

return M
