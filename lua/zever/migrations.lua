-- zever.migrations: schema migrations. A migration is a file migrations/<NNNN>_<name>.lua
-- returning { up = function(db) ... end, down = function(db) ... end }. Applied versions are
-- recorded in a schema_migrations table. Each migration runs in its own transaction on a strict
-- handle (a failing statement raises even if the migration ignores its result), so a failure
-- rolls back that migration entirely and stops the run. The same code runs on sqlite and
-- postgres (DDL is transactional on both).
--
-- A migration that sets transaction = false (PostgreSQL's CREATE INDEX CONCURRENTLY cannot run
-- in a transaction; `zever gen` writes such files for index(...) @concurrently) runs statement
-- by statement on a strict handle, and its version is recorded after it returns: a failure
-- keeps what ran before it, so such a migration should hold one idempotent step
-- (IF NOT EXISTS).
--
--   migrations.list(dir)              -> { {version=, name=, file=}, ... } sorted | nil, err
--   migrations.status(db, dir)        -> { {version=, name=, applied=, applied_at=, missing=,
--                                          conflict= (the name recorded for its version)}, ... }
--   migrations.up(db, dir[, opts])    -> applied list   | nil, err, applied so far
--   migrations.down(db, dir, n[, o])  -> reverted list  | nil, err, reverted so far
--   migrations.new(dir, name)         -> path           | nil, err
--   migrations.next_path(dir, name)   -> the path new() would write | nil, err
--   migrations.conflict(m, row)       -> nil | err: file m's version recorded under another name
--   opts.progress(event, migration)   event: "up" | "down", called before each migration
--
-- A version is the key of schema_migrations: a file whose version is recorded under another name
-- is never taken as applied; up and down refuse to run while one exists.
--
-- err is a zever.db error; for a failed migration its message starts with the file name and
-- holds the SQL error. It must not print: the CLI (cmd/zever/migrate.lua) does.

local db_mod = require "zever.db"
local sys = require "zever.sys"
local assets = require "zever.assets" -- a bundle's migrations come from its payload

local type, pcall, tostring, error = type, pcall, tostring, error
local sort, format = table.sort, string.format

local M = {}

M.TABLE = "schema_migrations"

local function err(code, message)
  return db_mod.error(code, message)
end

-- Migration files in dir, sorted by version (numerically).
function M.list(dir)
  if not (assets.bundled and assets.exists(dir) or sys.isdir(dir)) then
    return nil, err("not_found", "no migrations folder '" .. dir .. "'")
  end
  local names, lerr = (assets.bundled and assets.listdir or sys.listdir)(dir)
  if not names then return nil, err("io", tostring(lerr)) end
  local out, seen = {}, {}
  for _, f in ipairs(names) do
    local version, name = f:match("^(%d+)_([%w_%-]+)%.lua$")
    if version then
      if seen[tonumber(version)] then
        return nil, err("invalid", "two migrations have version " .. version .. ": "
          .. seen[tonumber(version)] .. ", " .. f)
      end
      seen[tonumber(version)] = f
      out[#out + 1] = { version = version, name = name, file = dir .. "/" .. f }
    end
  end
  sort(out, function(a, b) return tonumber(a.version) < tonumber(b.version) end)
  return out
end

-- zever.db raises on SQL errors; migrations report them as values (nil, err).
local function soft(db)
  return db.try_handle and db:try_handle() or db
end

function M.ensure_table(db)
  local ok, e = soft(db):exec("CREATE TABLE IF NOT EXISTS " .. M.TABLE ..
    " (version TEXT PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
  if not ok then return nil, e end
  return true
end

-- Whether schema_migrations exists (read only: a catalog query), or nil and the error.
function M.has_table(db)
  local rows, e
  if db.dialect == "postgres" then
    rows, e = soft(db):query("SELECT to_regclass('" .. M.TABLE .. "') IS NOT NULL AS t")
    if not rows then return nil, e end
    local t = rows[1] and rows[1].t
    return t == true or t == 1 or t == "t"
  end
  rows, e = soft(db):query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?", M.TABLE)
  if not rows then return nil, e end
  return rows[1] ~= nil
end

-- version -> row of every applied migration, and the rows in order. read_only: a database
-- without schema_migrations has applied nothing, and the table is not created (status).
local function applied_map(db, read_only)
  if read_only then
    local exists, e = M.has_table(db)
    if exists == nil then return nil, e end
    if not exists then return {}, {} end
  else
    local ok, e = M.ensure_table(db)
    if not ok then return nil, e end
  end
  local rows, qe = soft(db):from(M.TABLE):order_by("version"):all()
  if not rows then return nil, qe end
  local map = {}
  for _, r in ipairs(rows) do map[tonumber(r.version)] = r end
  return map, rows
end

function M.status(db, dir)
  local files, e = M.list(dir)
  if not files then return nil, e end
  local map, rows = applied_map(db, true)
  if not map then return nil, rows end
  local out, known = {}, {}
  for _, m in ipairs(files) do
    local r = map[tonumber(m.version)]
    -- A record of another name under this version is not this file's: the file is pending,
    -- and the record is listed below as one whose file is missing.
    local same = r ~= nil and r.name == m.name
    known[tonumber(m.version)] = same
    out[#out + 1] = { version = m.version, name = m.name, file = m.file, applied = same,
      applied_at = same and r.applied_at or nil, conflict = (r and not same) and r.name or nil }
  end
  -- Applied versions whose file is gone are listed too, so nobody is surprised by them.
  for _, r in ipairs(rows) do
    if not known[tonumber(r.version)] then
      out[#out + 1] = { version = r.version, name = r.name, applied = true, applied_at = r.applied_at,
        missing = true }
    end
  end
  sort(out, function(a, b) return tonumber(a.version) < tonumber(b.version) end)
  return out
end

local function load_migration(m)
  local chunk, lerr = (assets.bundled and assets.loadfile or loadfile)(m.file)
  if not chunk then return nil, err("invalid", lerr) end
  local ok, mod = pcall(chunk)
  if not ok then return nil, err("invalid", m.file .. ": " .. tostring(mod)) end
  if type(mod) ~= "table" or type(mod.up) ~= "function" then
    return nil, err("invalid", m.file .. ": must return { up = function(db) ... end, down = ... }")
  end
  if mod.transaction ~= nil and mod.transaction ~= false and mod.transaction ~= true then
    return nil, err("invalid", m.file .. ": transaction must be true or false")
  end
  return mod
end

-- Runs fn(strict_tx) in a transaction (or, for a migration with transaction = false, on a
-- strict handle outside one); turns any failure into an error naming the file.
local function run_one(db, m, fn, mod)
  local ok, e
  if mod.transaction == false then
    ok, e = pcall(fn, db:strict_handle())
    if not ok then
      local note = " (it ran outside a transaction: the statements before the failure stay)"
      if db_mod.is_error(e) then return nil, err(e.code, m.file .. ": " .. e.message .. note) end
      return nil, err("migration", m.file .. ": " .. tostring(e) .. note)
    end
    return true
  end
  ok, e = pcall(db.transaction, db, function(tx) fn(tx:strict_handle()) end)
  if ok then return true end
  if db_mod.is_error(e) then return nil, err(e.code, m.file .. ": " .. e.message) end
  return nil, err("migration", m.file .. ": " .. tostring(e))
end

local function now()
  return os.date("!%Y-%m-%dT%H:%M:%SZ")
end

-- A file whose version schema_migrations records under another name (two folders numbered
-- alike, a renamed or renumbered file): nil, or the error that stops up and down before they
-- run anything. Versions are the key, so without this check the file would count as applied
-- and never run.
function M.conflict(m, r)
  if r == nil or r.name == m.name then return nil end
  return err("invalid", format("%s: version %s is recorded as applied by %s_%s in %s: two " ..
    "migrations share the version (renumber one; a renamed file: rename it back)",
    m.file, m.version, r.version, r.name, M.TABLE))
end

function M.up(db, dir, opts)
  opts = opts or {}
  local files, e = M.list(dir)
  if not files then return nil, e, {} end
  local map, me = applied_map(db)
  if not map then return nil, me, {} end
  for _, m in ipairs(files) do
    local ce = M.conflict(m, map[tonumber(m.version)])
    if ce then return nil, ce, {} end
  end
  local done = {}
  for _, m in ipairs(files) do
    if not map[tonumber(m.version)] then
      local mod, le = load_migration(m)
      if not mod then return nil, le, done end
      if opts.progress then opts.progress("up", m) end
      local ok, re = run_one(db, m, function(tx)
        mod.up(tx)
        tx:insert_into(M.TABLE):values { version = m.version, name = m.name, applied_at = now() }:exec()
      end, mod)
      if not ok then return nil, re, done end
      done[#done + 1] = m
    end
  end
  return done
end

function M.down(db, dir, n, opts)
  opts = opts or {}
  n = n or 1
  if type(n) ~= "number" or n < 1 or n % 1 ~= 0 then
    error("migrations.down: n must be a positive integer", 2)
  end
  local files, e = M.list(dir)
  if not files then return nil, e, {} end
  local map, rows = applied_map(db)
  if not map then return nil, rows, {} end
  local by_version = {}
  for _, m in ipairs(files) do
    by_version[tonumber(m.version)] = m
    local ce = M.conflict(m, map[tonumber(m.version)])
    if ce then return nil, ce, {} end
  end
  local done = {}
  for i = #rows, 1, -1 do
    if #done >= n then break end
    local r = rows[i]
    local m = by_version[tonumber(r.version)]
    if not m then
      local msg = format("migration %s_%s is applied but its file is missing", r.version, r.name)
      return nil, err("not_found", msg), done
    end
    local mod, le = load_migration(m)
    if not mod then return nil, le, done end
    if type(mod.down) ~= "function" then
      return nil, err("invalid", m.file .. ": has no down function"), done
    end
    if opts.progress then opts.progress("down", m) end
    local ok, re = run_one(db, m, function(tx)
      mod.down(tx)
      tx:delete_from(M.TABLE):where("version", r.version):exec()
    end, mod)
    if not ok then return nil, re, done end
    done[#done + 1] = m
  end
  return done
end

local TEMPLATE = [[
-- Migration %s_%s. up applies it, down reverts it; each runs in its own transaction, and a
-- failing statement raises (the migration stops and rolls back).
return {
  up = function(db)
    -- db:exec("CREATE TABLE ...")
  end,
  down = function(db)
    -- db:exec("DROP TABLE ...")
  end,
}
]]

-- The path M.new(dir, name) would write (the next version after the folder's last), without
-- creating anything: path | nil, err (an invalid name; a folder that cannot be listed).
function M.next_path(dir, name)
  if type(name) ~= "string" or not name:match("^[%w_]+$") then
    return nil, err("invalid", "a migration name is letters, digits and underscores, got '"
      .. tostring(name) .. "'")
  end
  local files, e = {}, nil
  if sys.isdir(dir) then files, e = M.list(dir) end
  if not files then return nil, e end
  local last = files[#files]
  return format("%s/%04d_%s.lua", dir, last and tonumber(last.version) + 1 or 1, name)
end

function M.new(dir, name)
  local path, e = M.next_path(dir, name)
  if not path then return nil, e end
  if not sys.isdir(dir) then
    local ok = os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "'")
    if ok ~= 0 and ok ~= true then return nil, err("io", "cannot create folder " .. dir) end
  end
  local version = path:match("/(%d+)_[%w_]+%.lua$")
  local f, oe = io.open(path, "wb")
  if not f then return nil, err("io", tostring(oe)) end
  f:write(format(TEMPLATE, version, name))
  f:close()
  return path
end

return M
