-- bench/tfb/nginx/tfb.lua: the nginx + ngx_lua peer of bench/tfb: the six TechEmpower test types
-- as an OpenResty application writes them, with libsqlite3 called through LuaJIT's FFI (one
-- connection per worker, opened in init_worker_by_lua; each SQL text prepared once per worker and
-- reset after use), lua-cjson for JSON, and the fortunes page built with a gsub escape and
-- table.sort, as the TFB OpenResty entry does. nginx.conf.in routes each location to one
-- function here. It must answer exactly what bench/tfb/app answers (check.py compares them).

local ffi = require "ffi"
local cjson = require "cjson"

local random, floor, tonumber, sort, concat = math.random, math.floor, tonumber, table.sort,
  table.concat
local ngx = ngx -- luacheck: globals ngx (ngx_lua's API table)

ffi.cdef [[
typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
int sqlite3_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs);
int sqlite3_prepare_v2(sqlite3 *db, const char *sql, int n, sqlite3_stmt **st, const char **tail);
int sqlite3_exec(sqlite3 *db, const char *sql, void *cb, void *arg, char **err);
int sqlite3_busy_timeout(sqlite3 *db, int ms);
int sqlite3_bind_int(sqlite3_stmt *st, int i, int v);
int sqlite3_step(sqlite3_stmt *st);
int sqlite3_reset(sqlite3_stmt *st);
int sqlite3_column_int(sqlite3_stmt *st, int i);
const unsigned char *sqlite3_column_text(sqlite3_stmt *st, int i);
int sqlite3_column_bytes(sqlite3_stmt *st, int i);
const char *sqlite3_errmsg(sqlite3 *db);
]]

local lib = ffi.load("libsqlite3.so.0")
local ROW, DONE = 100, 101
local OPEN_READWRITE, OPEN_NOMUTEX = 0x02, 0x8000

local M = {}
local db, select_world, update_world, select_fortunes, begin_st, commit_st

local function check(rc, what)
  if rc ~= 0 then error(what .. ": " .. ffi.string(lib.sqlite3_errmsg(db)), 2) end
end

local function prepare(sql)
  local p = ffi.new("sqlite3_stmt *[1]")
  check(lib.sqlite3_prepare_v2(db, sql, #sql, p, nil), sql)
  return p[0]
end

-- Opens the worker's connection (init_worker_by_lua): the same settings zever's adapter uses
-- (WAL, synchronous NORMAL, a busy timeout).
function M.init(path)
  local p = ffi.new("sqlite3 *[1]")
  if lib.sqlite3_open_v2(path, p, OPEN_READWRITE + OPEN_NOMUTEX, nil) ~= 0 then
    error("cannot open " .. path)
  end
  db = p[0]
  check(lib.sqlite3_busy_timeout(db, 5000), "busy_timeout")
  check(lib.sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL", nil, nil,
    nil), "pragma")
  select_world = prepare("SELECT id, randomNumber FROM World WHERE id = ?")
  update_world = prepare("UPDATE World SET randomNumber = ? WHERE id = ?")
  select_fortunes = prepare("SELECT id, message FROM Fortune")
  begin_st = prepare("BEGIN IMMEDIATE")
  commit_st = prepare("COMMIT")
  math.randomseed(ngx.now() * 1000 + ngx.worker.pid())
end

local function run(st)
  local rc = lib.sqlite3_step(st)
  lib.sqlite3_reset(st)
  if rc ~= DONE then error("step: " .. ffi.string(lib.sqlite3_errmsg(db))) end
end

local function world(id)
  local st = select_world
  lib.sqlite3_bind_int(st, 1, id)
  if lib.sqlite3_step(st) ~= ROW then
    lib.sqlite3_reset(st)
    error("no World row " .. id)
  end
  local row = { id = lib.sqlite3_column_int(st, 0), randomNumber = lib.sqlite3_column_int(st, 1) }
  lib.sqlite3_reset(st)
  return row
end

local function count()
  local n = tonumber(ngx.var.arg_queries)
  if not n or n < 1 then return 1 end
  if n > 500 then return 500 end
  return floor(n)
end

local function send(ctype, body)
  ngx.header["Content-Type"] = ctype
  ngx.header["Content-Length"] = #body
  ngx.print(body)
end

function M.plaintext()
  send("text/plain; charset=utf-8", "Hello, World!")
end

function M.json()
  send("application/json", cjson.encode({ message = "Hello, World!" }))
end

function M.db()
  send("application/json", cjson.encode(world(random(1, 10000))))
end

function M.queries()
  local n = count()
  local rows = {}
  for i = 1, n do rows[i] = world(random(1, 10000)) end
  send("application/json", cjson.encode(rows))
end

function M.updates()
  local n = count()
  local rows = {}
  for i = 1, n do
    local row = world(random(1, 10000))
    row.randomNumber = random(1, 10000)
    rows[i] = row
  end
  run(begin_st)
  local st = update_world
  for i = 1, n do
    local row = rows[i]
    lib.sqlite3_bind_int(st, 1, row.randomNumber)
    lib.sqlite3_bind_int(st, 2, row.id)
    run(st)
  end
  run(commit_st)
  send("application/json", cjson.encode(rows))
end

local ESC = { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;" }

local function escape(s)
  return (s:gsub("[&<>\"']", ESC))
end

local function by_message(a, b)
  return a.message < b.message
end

local HEAD = "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>" ..
  "<tr><th>id</th><th>message</th></tr>"
local TAIL = "</table></body></html>\n"

function M.fortunes()
  local st = select_fortunes
  local rows, n = {}, 0
  while lib.sqlite3_step(st) == ROW do
    n = n + 1
    rows[n] = { id = lib.sqlite3_column_int(st, 0),
      message = ffi.string(lib.sqlite3_column_text(st, 1), lib.sqlite3_column_bytes(st, 1)) }
  end
  lib.sqlite3_reset(st)
  rows[n + 1] = { id = 0, message = "Additional fortune added at request time." }
  sort(rows, by_message)
  local out = { HEAD }
  for i = 1, n + 1 do
    local f = rows[i]
    out[#out + 1] = "<tr><td>" .. f.id .. "</td><td>" .. escape(f.message) .. "</td></tr>"
  end
  out[#out + 1] = TAIL
  send("text/html; charset=utf-8", concat(out))
end

return M
