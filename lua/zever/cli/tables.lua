-- zever.cli.tables: the migrations `zever add` writes for the batteries that keep tables in the
-- app's database (cache, queue, jobs, scheduler, idempotency, session and outbox on their db
-- adapters; search and vectors on theirs). The statements come from each adapter's own schema function, so
-- a migration creates exactly what the adapter would create on first use (CREATE ... IF NOT
-- EXISTS: running it after the adapter already made its table changes nothing). A migration holds
-- both dialects' statements and picks by db.dialect when it runs, so the same file migrates a
-- SQLite development database and a PostgreSQL production one.
--
--   tables.for_battery(battery, adapter, cfg) -> nil | { name =, tables = { ... }, text = file }
--       cfg: the app's loaded configuration or nil (then the schema's default table names)
--   tables.existing(dir, battery) -> file name of the migration written for battery, or nil
--   tables.next_path(dir, battery) -> dir/NNNN_zever_<battery>.lua (the next free version)
--
-- It must not open a database: it only renders text.

local schema = require "zever.config.schema"

local format, concat = string.format, table.concat

local M = {}

-- The configured (or default) value of field in battery's section.
local function setting(cfg, battery, field, default)
  local section = cfg and cfg[battery]
  if section and section[field] ~= nil and section[field] ~= "" then return section[field] end
  local s = schema.by_name[battery]
  local f = s and s.by_name[field]
  return f and f.default or default
end

local function session_schema(dialect, t)
  local list = require("adapters.cache.db").schema(dialect, t)
  list[1] = list[1]:gsub("^CREATE UNLOGGED TABLE ", "CREATE TABLE ")
  return list
end

-- [battery] = { adapter = the adapter with tables, ddl = function(dialect, cfg) -> statements,
-- tables = function(cfg) -> names dropped by down } (literal DDL), or create = the Lua the
-- migration runs when the adapter renders its DDL only inside its constructor.
local BATTERIES = {
  cache = { adapter = "db",
    ddl = function(d, cfg) return require("adapters.cache.db").schema(d, setting(cfg, "cache", "table")) end,
    tables = function(cfg) return { setting(cfg, "cache", "table") } end },
  session = { adapter = "db",
    ddl = function(d, cfg) return session_schema(d, setting(cfg, "session", "table")) end,
    tables = function(cfg) return { setting(cfg, "session", "table") } end },
  queue = { adapter = "db",
    ddl = function(d, cfg) return require("adapters.queue.db").schema(d, setting(cfg, "queue", "table")) end,
    tables = function(cfg) return { setting(cfg, "queue", "table") } end },
  jobs = { adapter = "queue",
    ddl = function(d, cfg)
      return require("adapters.jobs.queue").schema(d, setting(cfg, "jobs", "failed_table"))
    end,
    tables = function(cfg) return { setting(cfg, "jobs", "failed_table") } end },
  scheduler = { adapter = "db",
    ddl = function(d, cfg)
      return require("adapters.scheduler.db").schema(d, setting(cfg, "scheduler", "table"))
    end,
    tables = function(cfg) return { setting(cfg, "scheduler", "table") } end },
  idempotency = { adapter = "db",
    ddl = function(d) return require("adapters.idempotency.db").schema(d, "idempotency_keys") end,
    tables = function() return { "idempotency_keys" } end },
  search = { adapter = "db",
    create = 'require("adapters.search.db").new(db, { fts = %q })',
    args = function(cfg) return setting(cfg, "search", "fts") end,
    tables = function() return { "zever_search_pending", "zever_search_fts", "zever_search" } end },
  vectors = { adapter = "db",
    create = 'require("adapters.vectors.db").new(db, {})',
    tables = function() return { "zever_vectors_version", "zever_vectors" } end },
  outbox = { adapter = "db",
    ddl = function(d, cfg)
      return require("adapters.outbox.db").schema(d, setting(cfg, "outbox", "table"))
    end,
    tables = function(cfg) return { setting(cfg, "outbox", "table") } end },
}
M.BATTERIES = BATTERIES

local function long_string(s)
  local eq = ""
  while s:find("]" .. eq .. "]", 1, true) do eq = eq .. "=" end
  return "[" .. eq .. "[" .. s .. "]" .. eq .. "]"
end

function M.for_battery(battery, adapter, cfg)
  local b = BATTERIES[battery]
  if not b or b.adapter ~= adapter then return nil end
  local names = b.tables(cfg)
  local lines = {
    format("-- The tables of %s (adapter %s), written by `zever add`. The statements are the",
      battery, adapter),
    "-- adapter's own (CREATE ... IF NOT EXISTS): running this after the adapter created its",
    "-- tables on first use changes nothing. down drops them (their data is lost).",
  }
  local up
  if b.ddl then
    lines[#lines + 1] = "local ddl = {"
    for _, dialect in ipairs({ "sqlite", "postgres" }) do
      lines[#lines + 1] = "  " .. dialect .. " = {"
      for _, sql in ipairs(b.ddl(dialect, cfg)) do
        lines[#lines + 1] = "    " .. long_string(sql) .. ","
      end
      lines[#lines + 1] = "  },"
    end
    lines[#lines + 1] = "}"
    up = "    for _, sql in ipairs(ddl[db.dialect] or ddl.sqlite) do db:exec(sql) end"
  else
    lines[#lines + 1] = "-- The adapter renders its schema (triggers, FTS5 or tsvector) when it opens:"
    lines[#lines + 1] = "-- it runs here, on the migration's transaction."
    up = "    " .. format(b.create, b.args and b.args(cfg) or nil)
  end
  local drops = {}
  for _, t in ipairs(names) do drops[#drops + 1] = format("    db:exec('DROP TABLE IF EXISTS \"%s\"')", t) end
  lines[#lines + 1] = "return {"
  lines[#lines + 1] = "  up = function(db)"
  lines[#lines + 1] = up
  lines[#lines + 1] = "  end,"
  lines[#lines + 1] = "  down = function(db)"
  lines[#lines + 1] = concat(drops, "\n")
  lines[#lines + 1] = "  end,"
  lines[#lines + 1] = "}"
  return { name = "zever_" .. battery, tables = names, text = concat(lines, "\n") .. "\n" }
end

function M.existing(dir, battery)
  for _, f in ipairs(require("zever.sys").listdir(dir) or {}) do
    if f:match("^%d+_zever_" .. battery .. "%.lua$") then return f end
  end
end

function M.next_path(dir, battery)
  local last = 0
  for _, f in ipairs(require("zever.sys").listdir(dir) or {}) do
    local v = tonumber(f:match("^(%d+)_[%w_%-]+%.lua$"))
    if v and v > last then last = v end
  end
  return format("%s/%04d_zever_%s.lua", dir, last + 1, battery)
end

return M
