-- zever.config.paths: relative paths in a configuration are relative to the app folder (the
-- folder of zever.yaml), never to the directory zever was started from: a worker started from
-- /tmp must write mailer.log_file and open db.dsn where `zever serve` in the app folder does.
-- The schema marks such fields with relative = "file" or relative = "dsn" (the file of a sqlite: DSN);
-- after every layer is in, resolve() makes their relative values absolute. It must not read
-- the environment or open files.
--
--   paths.cwd()               -> the current directory (getcwd), or nil when it cannot be read
--   paths.absolute(p[, base]) -> p when absolute, else base (default: cwd) .. "/" .. p, with
--                                "./" segments and a trailing "/" removed
--   paths.relative(p)         -> absolute p relative to cwd when below it ("." for cwd), else p
--   paths.dirname(p)          -> the folder of p ("." for a bare name)
--   paths.resolve(cfg, dir)   -> cfg, its marked fields absolute against dir (made absolute)

local ffi = require "ffi"

local type, ipairs, sub, find, gsub, match = type, ipairs, string.sub, string.find, string.gsub,
  string.match

local M = {}

require "zever.cdef.libc" -- getcwd

local buf = ffi.new("char[?]", 4096)   -- PATH_MAX; reused: config.load calls cwd() each time

function M.cwd()
  local p = ffi.C.getcwd(buf, 4096)
  if p == nil then return nil end
  return ffi.string(p)
end

local function tidy(p)
  -- Patterns run in LuaJIT's interpreter (~1 us each): most paths need none of them.
  if not find(p, "//", 1, true) and not find(p, "/.", 1, true) and (#p == 1 or sub(p, -1) ~= "/") then
    return p
  end
  p = gsub(p, "/%./", "/")
  p = gsub(p, "/%./", "/")
  p = gsub(p, "//+", "/")
  p = gsub(p, "/%.$", "")
  if #p > 1 then p = gsub(p, "/$", "") end
  return p
end

function M.absolute(p, base)
  if type(p) ~= "string" then error("paths.absolute: expects a string path", 2) end
  if sub(p, 1, 1) == "/" then return tidy(p) end
  base = base or M.cwd() or "."
  if p == "." or p == "" then return tidy(base) end
  if sub(p, 1, 2) == "./" then p = sub(p, 3) end
  return tidy(base .. "/" .. p)
end

-- p (absolute) relative to the current directory when it is the current directory or below
-- it ("." or "sub/file"), else p: what messages show.
function M.relative(p)
  local cwd = M.cwd()
  if not cwd then return p end
  if p == cwd then return "." end
  if cwd == "/" then return sub(p, 2) end
  if sub(p, 1, #cwd + 1) == cwd .. "/" then return sub(p, #cwd + 2) end
  return p
end

function M.dirname(p)
  local d = match(p, "^(.*)/[^/]*$")
  if d == nil then return "." end
  if d == "" then return "/" end
  return d
end

-- The sqlite: DSN with its file absolute: "sqlite:data/app.db" -> "sqlite:/app/data/app.db".
-- ":memory:", "file:" URIs and absolute paths ("sqlite:/x", "sqlite:///x") are left alone.
local function resolve_dsn(dsn, dir)
  if sub(dsn, 1, 7) ~= "sqlite:" then return dsn end
  local target = sub(dsn, 8)
  if target == "" or target == ":memory:" or sub(target, 1, 1) == "/" or sub(target, 1, 5) == "file:" then
    return dsn
  end
  return "sqlite:" .. M.absolute(target, dir)
end
M.resolve_dsn = resolve_dsn

-- The fields the schema marks, found on the first resolve: absolute() and cwd() do not load the
-- schema (a bundle's worker names its app files with them; zever.assets).
local RELATIVE

-- RESOLVED[kind][dir][value]: the resolved value (a pure function of the three strings). An app loads
-- its configuration from one folder, with the same relative values each time (mostly the
-- defaults: app.lua, views, db/migrations), so a load looks them up instead of joining and
-- tidying each again (~2% of a load's instructions). Bounded: past MAX_RESOLVED entries,
-- values are resolved without being kept.
local RESOLVED, nresolved, MAX_RESOLVED = {}, 0, 256

local function resolve_one(kind, v, dir)
  local by_dir = RESOLVED[kind]
  if not by_dir then
    by_dir = {}
    RESOLVED[kind] = by_dir
  end
  local memo = by_dir[dir]
  local r = memo and memo[v]
  if r then return r end
  if kind == "dsn" then
    r = resolve_dsn(v, dir)
  elseif sub(v, 1, 1) ~= "/" then
    r = M.absolute(v, dir)
  else
    r = v
  end
  -- Only what changed is kept: an absolute value or a postgres DSN (which may hold a password)
  -- is never stored here.
  if r ~= v and nresolved < MAX_RESOLVED then
    if not memo then
      memo = {}
      by_dir[dir] = memo
    end
    memo[v] = r
    nresolved = nresolved + 1
  end
  return r
end

function M.resolve(cfg, dir)
  if not RELATIVE then
    RELATIVE = {}
    for _, s in ipairs(require("zever.config.schema").sections) do
      for _, f in ipairs(s.fields) do
        if f.relative then RELATIVE[#RELATIVE + 1] = f end
      end
    end
  end
  dir = M.absolute(dir or ".")
  for i = 1, #RELATIVE do
    local f = RELATIVE[i]
    local section = cfg[f.section]
    local v = section and section[f.name]
    if type(v) == "string" and v ~= "" then section[f.name] = resolve_one(f.relative, v, dir) end
  end
  return cfg
end

return M
