-- adapters.db.postgres: the PostgreSQL adapter of zever.db, over the zever.pg binding (host/pg/,
-- libpq in non-blocking mode on the worker's event loop). It speaks the conn contract of
-- adapters/db/sqlite.lua: exec/query/first/each(sql, binds, n[, fn]) returning
-- nil, code, message, fields on failure (fields: sqlstate, constraint, column, table).
--
--   conn (a pool, one per zever.db.open: the container opens one per worker per DSN)
--   +-------------------------------------------------------------+
--   | idle: [raw, raw]   open: 3 of pool_size   waiters: FIFO     |
--   | listener: raw (LISTEN only, re-LISTENs after a reconnect)   |
--   +-------------------------------------------------------------+
--   raw = one libpq connection + its prepared statements (an LRU keyed by SQL text)
--
-- A statement acquires a raw connection (waiting in FIFO order when all are busy), sends
-- (yielding when called from a coroutine, pumping the loop otherwise: zever.sched's one way to
-- wait), decodes the text result by type OID through the FFI (pg_ffi.h) and gives the
-- connection back. conn:pin() keeps one raw connection for a transaction; unpin() returns it.
-- A connection that broke is dropped, and the next acquire opens a new one, after a backoff
-- when the last connect failed. Statements are never retried behind the caller's back, except
-- a cached prepared statement the server forgot (26000) or whose plan changed (0A000), which is
-- prepared again once outside a transaction.
--
-- It must not render SQL (zever.sql does, for the "postgres" dialect named here) nor require
-- its front-end. It must not keep a raw connection when a call raises: binds are checked before
-- one is acquired.

local pg = require "zever.pg"
local ffi = require "ffi"
local sched = require "zever.sched"
local loop = require "zever.loop"
local json = require "zever.json"
local sys = require "zever.sys"
local tnew = require "table.new"

require "zever.cdef.pg"

local C = ffi.C
local NULL = pg.null
local type, setmetatable, getmetatable, tonumber, tostring, error, pairs, ipairs, rawequal =
  type, setmetatable, getmetatable, tonumber, tostring, error, pairs, ipairs, rawequal
local byte, sub, find, format, gsub, concat = string.byte, string.sub, string.find,
  string.format, string.gsub, table.concat
local ffi_string, ffi_cast, ffi_istype = ffi.string, ffi.cast, ffi.istype
local await, token_of, complete = sched.await, sched.token, sched.complete
local now = sys.now
local array_mt = json.array_mt
local json_decode, json_encode = json.decode, json.encode

local M = {
  dialect = "postgres",
  begin_sql = "BEGIN",
  null = NULL,
}

-- --- ? placeholders -----------------------------------------------------------------------

local QUESTION, DOLLAR, QUOTE, DQUOTE, DASH, SLASH, STAR, BACKSLASH =
  63, 36, 39, 34, 45, 47, 42, 92

local function ident_byte(b)
  return b and ((b >= 48 and b <= 57) or (b >= 65 and b <= 90) or (b >= 97 and b <= 122) or
    b == 95 or b == DOLLAR or b >= 128)
end

-- Rewrites ? to $1..$n outside '...', E'...', "...", $tag$...$tag$, -- and /* */ comments;
-- ?? becomes ?. Text that already uses $n is returned unchanged. Returns the text.
local function rewrite_uncached(s)
  if not find(s, "?", 1, true) then return s end
  local out, nout, k = {}, 0, 0
  local i, n, last = 1, #s, 1
  while i <= n do
    local b = byte(s, i)
    if b == QUOTE then
      local escapes = i > 1 and (byte(s, i - 1) == 69 or byte(s, i - 1) == 101) and
        not ident_byte(byte(s, i - 2))
      i = i + 1
      while i <= n do
        local c = byte(s, i)
        if escapes and c == BACKSLASH then
          i = i + 2
        elseif c == QUOTE then
          if byte(s, i + 1) == QUOTE then i = i + 2 else break end
        else
          i = i + 1
        end
      end
      i = i + 1
    elseif b == DQUOTE then
      i = i + 1
      while i <= n do
        if byte(s, i) == DQUOTE then
          if byte(s, i + 1) == DQUOTE then i = i + 2 else break end
        else
          i = i + 1
        end
      end
      i = i + 1
    elseif b == DASH and byte(s, i + 1) == DASH then
      local e = find(s, "\n", i + 2, true)
      i = e and e + 1 or n + 1
    elseif b == SLASH and byte(s, i + 1) == STAR then
      local depth = 1
      i = i + 2
      while i <= n and depth > 0 do
        local c, d = byte(s, i), byte(s, i + 1)
        if c == SLASH and d == STAR then depth, i = depth + 1, i + 2
        elseif c == STAR and d == SLASH then depth, i = depth - 1, i + 2
        else i = i + 1 end
      end
    elseif b == DOLLAR and not ident_byte(byte(s, i - 1)) then
      local d = byte(s, i + 1)
      if d and d >= 48 and d <= 57 then return s end -- already $n
      local tag = s:match("^%$[%a_][%w_]*%$", i) or (d == DOLLAR and "$$")
      if tag then
        local e = find(s, tag, i + #tag, true)
        i = e and e + #tag or n + 1
      else
        i = i + 1
      end
    elseif b == QUESTION then
      nout = nout + 1
      out[nout] = sub(s, last, i - 1)
      if byte(s, i + 1) == QUESTION then
        nout = nout + 1
        out[nout] = "?"
        i = i + 2
      else
        k = k + 1
        nout = nout + 1
        out[nout] = "$" .. k
        i = i + 1
      end
      last = i
    else
      i = i + 1
    end
  end
  out[nout + 1] = sub(s, last)
  return concat(out)
end

local REWRITE_MAX = 2048
local rewritten, nrewritten = {}, 0

-- The rewrite of s, cached per SQL text (the cache is dropped whole when it is full).
local function rewrite(s)
  local r = rewritten[s]
  if r then return r end
  r = rewrite_uncached(s)
  if nrewritten >= REWRITE_MAX then rewritten, nrewritten = {}, 0 end
  rewritten[s] = r
  nrewritten = nrewritten + 1
  return r
end
M.rewrite = rewrite_uncached

-- --- binds --------------------------------------------------------------------------------

local blob_mt = debug.getregistry()["zever.sqlite.blob"]
local int64_t, uint64_t = ffi.typeof("int64_t"), ffi.typeof("uint64_t")
local size_ptr = ffi.typeof("size_t *")
local HEX = {}
for c = 0, 255 do HEX[c] = format("%02x", c) end

local function hex(s)
  local t = tnew(#s, 0)
  for i = 1, #s do t[i] = HEX[byte(s, i)] end
  return concat(t)
end

-- The bytes of a db.blob value (zever.sqlite's blob: a size_t length, then the bytes).
local function blob_bytes(v)
  if blob_mt == nil then blob_mt = debug.getregistry()["zever.sqlite.blob"] end
  if getmetatable(v) ~= blob_mt then return nil end
  local p = ffi_cast(size_ptr, v)
  return ffi_string(ffi_cast("const char *", p + 1), p[0])
end
M.blob_bytes = blob_bytes

local array_literal

local function scalar_text(v, where)
  local t = type(v)
  if t == "string" then return v end
  if t == "number" then
    if v ~= v then return "NaN" end
    if v == math.huge then return "Infinity" end
    if v == -math.huge then return "-Infinity" end
    if v % 1 == 0 and v > -9.2e18 and v < 9.2e18 then return format("%d", v) end
    return format("%.17g", v)
  end
  if t == "boolean" then return v and "t" or "f" end
  if t == "cdata" and (ffi_istype(int64_t, v) or ffi_istype(uint64_t, v)) then
    return (gsub(tostring(v), "U?LL$", ""))
  end
  if t == "userdata" then
    local b = blob_bytes(v)
    if b then return "\\x" .. hex(b) end
  end
  if t == "table" then
    local mt = getmetatable(v)
    if mt == nil then return array_literal(v, where) end
    return json_encode(v)
  end
  error(format("db: cannot bind a %s (parameter %s)", t, where), 0)
end

-- A Lua array as a PostgreSQL array literal: {"a","b",NULL}.
function array_literal(v, where)
  local parts = {}
  for i = 1, #v do
    local e = v[i]
    if e == nil or rawequal(e, NULL) then
      parts[i] = "NULL"
    else
      local s = scalar_text(e, where)
      parts[i] = '"' .. gsub(s, '(["\\])', "\\%1") .. '"'
    end
  end
  return "{" .. concat(parts, ",") .. "}"
end

-- Binds the C binding takes as they are (strings, numbers, booleans, nil, NULL) pass through;
-- others (int64 cdata, db.blob, tables) become text in a new list. Raises on what cannot bind.
local function check_binds(binds, n)
  for i = 1, n do
    local v = binds[i]
    local t = type(v)
    if not (t == "string" or t == "number" or t == "boolean" or t == "nil" or rawequal(v, NULL)) then
      local copy = tnew(n, 0)
      for j = 1, n do
        local w = binds[j]
        if w == nil or rawequal(w, NULL) then copy[j] = NULL
        else
          local tw = type(w)
          if tw == "number" or tw == "string" or tw == "boolean" then copy[j] = w
          else copy[j] = scalar_text(w, j) end
        end
      end
      return copy
    end
  end
  return binds
end

-- --- errors -------------------------------------------------------------------------------

local CODES = {
  ["42601"] = "syntax", ["42P01"] = "schema", ["42703"] = "schema", ["42883"] = "schema",
  ["42P07"] = "schema", ["42701"] = "schema", ["42704"] = "schema", ["3F000"] = "schema",
  ["40001"] = "busy", ["40P01"] = "busy", ["55P03"] = "busy", ["57014"] = "timeout",
  ["25P02"] = "aborted", ["42501"] = "permission", ["0A000"] = "unsupported",
  ["57P01"] = "unavailable", ["57P02"] = "unavailable", ["57P03"] = "unavailable",
  ["53300"] = "unavailable", ["3D000"] = "unavailable",
}
local CLASSES = { ["23"] = "constraint", ["08"] = "unavailable", ["22"] = "invalid",
  ["42"] = "syntax", ["53"] = "resource", ["28"] = "unavailable", ["40"] = "busy" }

local function code_of(state)
  if not state then return "error" end
  return CODES[state] or CLASSES[sub(state, 1, 2)] or "error"
end
M.code_of = code_of

-- The failure of the last statement on raw: code, message, fields (no DETAIL: it holds values).
local function server_error(h)
  local state, msg, constraint, column, tbl, position = h:error()
  msg = msg or "database error"
  if state and sub(state, 1, 2) == "22" then
    -- Data exceptions quote the offending input ('invalid input syntax for type integer: "x"').
    msg = gsub(msg, ': ".*"$', "")
  end
  return code_of(state), msg, { sqlstate = state, constraint = constraint, column = column,
    table = tbl, position = tonumber(position) }
end

-- --- decoding -----------------------------------------------------------------------------

local ARRAY_OF = {
  [1000] = 16, [1005] = 21, [1007] = 23, [1016] = 20, [1028] = 26, [1021] = 700, [1022] = 701,
  [1231] = 1700, [1009] = 25, [1015] = 1043, [1014] = 1042, [2951] = 2950, [1185] = 1184,
  [1115] = 1114, [1182] = 1082, [199] = 114, [3807] = 3802, [1001] = 17, [1002] = 18,
}

local function rfc3339(s)
  -- "2024-01-02 03:04:05.123456+00" (TimeZone=UTC, DateStyle=ISO) -> "2024-01-02T03:04:05.123456Z"
  local d, t = s:match("^(%d+%-%d%d%-%d%d) (%d%d:%d%d:%d%d[%.%d]*)%+00$")
  if d then return d .. "T" .. t .. "Z" end
  return s -- infinity, BC dates, a non-UTC offset: as the server wrote them
end

local EXACT = 2 ^ 53

local function int8(s)
  if #s < 16 then return tonumber(s) end
  local neg = byte(s, 1) == DASH
  local v = 0LL
  for i = neg and 2 or 1, #s do v = v * 10 - (byte(s, i) - 48) end
  if not neg then v = -v end
  if v >= -EXACT and v <= EXACT then return tonumber(v) end
  return v
end

local decode_text

local function unescape_bytea(p)
  local len = ffi.new("size_t[1]")
  local q = C.PQunescapeBytea(p, len)
  if q == nil then error("db: out of memory decoding bytea", 0) end
  local s = ffi_string(q, len[0])
  C.PQfreemem(q)
  return s
end

-- Parses a text array ({1,2,"a b",NULL}, nested for several dimensions) of element type oid.
local function parse_array(s, oid, opts)
  local pos = 1
  local function element()
    local b = byte(s, pos)
    if b == 123 then -- {
      local t = setmetatable({}, array_mt)
      pos = pos + 1
      if byte(s, pos) == 125 then pos = pos + 1 return t end
      while true do
        t[#t + 1] = element()
        local c = byte(s, pos)
        pos = pos + 1
        if c ~= 44 then break end -- ,
      end
      return t
    end
    local text
    if b == DQUOTE then
      local parts = {}
      pos = pos + 1
      while true do
        local c = byte(s, pos)
        if c == BACKSLASH then parts[#parts + 1] = sub(s, pos + 1, pos + 1) pos = pos + 2
        elseif c == DQUOTE or c == nil then pos = pos + 1 break
        else
          local e = find(s, '["\\]', pos)
          e = e or #s + 1
          parts[#parts + 1] = sub(s, pos, e - 1)
          pos = e
        end
      end
      text = concat(parts)
    else
      local e = find(s, "[,}]", pos) or #s + 1
      text = sub(s, pos, e - 1)
      pos = e
      if text == "NULL" then return NULL end
    end
    return decode_text(text, oid, opts)
  end
  if byte(s, 1) == 91 then pos = (find(s, "=", 1, true) or 0) + 1 end -- [1:2]={...}
  return element()
end

-- A text value of type oid as Lua.
function decode_text(s, oid, opts)
  if oid == 23 or oid == 21 or oid == 26 then return tonumber(s) end
  if oid == 20 then return int8(s) end
  if oid == 16 then return s == "t" end
  if oid == 700 or oid == 701 then return tonumber(s) end
  if oid == 1700 then
    if opts.numeric_number then return tonumber(s) end
    return s
  end
  if oid == 114 or oid == 3802 then
    local v, err = json_decode(s)
    if v == nil and err then error(err, 0) end
    return v
  end
  if oid == 1184 then return rfc3339(s) end
  if oid == 1114 then return (gsub(s, "^(%d+%-%d%d%-%d%d) ", "%1T", 1)) end
  if oid == 17 then return unescape_bytea(s) end
  local elem = ARRAY_OF[oid]
  if elem then return parse_array(s, elem, opts) end
  return s
end

local FAST = { [25] = true, [1043] = true, [1042] = true, [2950] = true, [1082] = true,
  [19] = true, [18] = true }

-- Column names and types of a result: names[j], oids[j] for j = 0..nf-1.
local function shape(r)
  local nf = C.PQnfields(r)
  local names, oids = tnew(nf, 1), tnew(nf, 1)
  for j = 0, nf - 1 do
    names[j] = ffi_string(C.PQfname(r, j))
    oids[j] = tonumber(C.PQftype(r, j))
  end
  return nf, names, oids
end

local function row_at(r, i, nf, names, oids, opts)
  local row = tnew(0, nf)
  for j = 0, nf - 1 do
    if C.PQgetisnull(r, i, j) == 0 then
      local oid = oids[j]
      local p = C.PQgetvalue(r, i, j)
      if oid == 23 or oid == 21 then
        -- digits straight from the buffer: no string for an int4
        local len, v, k, neg = C.PQgetlength(r, i, j), 0, 0, false
        if p[0] == DASH then neg, k = true, 1 end
        while k < len do v = v * 10 + (p[k] - 48) k = k + 1 end
        row[names[j]] = neg and -v or v
      elseif FAST[oid] then
        row[names[j]] = ffi_string(p, C.PQgetlength(r, i, j))
      elseif oid == 17 then
        row[names[j]] = unescape_bytea(p)
      else
        row[names[j]] = decode_text(ffi_string(p, C.PQgetlength(r, i, j)), oid, opts)
      end
    end
  end
  return row
end

local result_t = ffi.typeof("PGresult *")

local function rows_of(h, opts, all)
  local lud = h:result()
  if not lud then return all and {} or nil end
  local r = ffi_cast(result_t, lud)
  local nt = C.PQntuples(r)
  if not all then
    if nt == 0 then return nil end
    local nf, names, oids = shape(r)
    return row_at(r, 0, nf, names, oids, opts)
  end
  local rows = tnew(nt, 0)
  if nt > 0 then
    local nf, names, oids = shape(r)
    for i = 0, nt - 1 do rows[i + 1] = row_at(r, i, nf, names, oids, opts) end
  end
  return rows
end

local function changes_of(h)
  local lud = h:result()
  if not lud then return 0 end
  return tonumber(ffi_string(C.PQcmdTuples(ffi_cast(result_t, lud)))) or 0
end

-- --- raw connections ----------------------------------------------------------------------

local Raw = {}
Raw.__index = Raw

-- Runs one operation on raw and waits: true | nil, code, message, fields.
local function run(raw, mode, sql, binds, n, name)
  local token = token_of()
  local ok, code, message = raw.h:send(token, mode, sql, binds, n, name)
  if not ok then
    raw.broken = true
    return nil, code, message
  end
  ok, code, message = await(token)
  if ok then return true end
  if code == "server" then
    local fields
    code, message, fields = server_error(raw.h)
    -- An administrator shutdown or a terminated backend (57P01...): the session is gone.
    if code == "unavailable" then raw.broken = true end
    return nil, code, message, fields
  end
  raw.broken = true
  return nil, code, message
end

-- The LRU of prepared statements: stmts[sql] = node {sql, name, prev, next}; head is newest.
local function lru_touch(raw, node)
  if raw.head == node then return end
  local p, nx = node.prev, node.next
  if p then p.next = nx end
  if nx then nx.prev = p end
  if raw.tail == node then raw.tail = p end
  node.prev, node.next = nil, raw.head
  if raw.head then raw.head.prev = node end
  raw.head = node
  if not raw.tail then raw.tail = node end
end

local function lru_remove(raw, node)
  local p, nx = node.prev, node.next
  if p then p.next = nx else raw.head = nx end
  if nx then nx.prev = p else raw.tail = p end
  raw.stmts[node.sql] = nil
  raw.nstmts = raw.nstmts - 1
end

local function prepare(raw, sql)
  if raw.nstmts >= raw.max_stmts and raw.tail then
    local old = raw.tail
    lru_remove(raw, old)
    local ok, code, message, fields = run(raw, "simple", "DEALLOCATE " .. old.name, nil, 0)
    if not ok then return nil, code, message, fields end
  end
  raw.seq = raw.seq + 1
  local name = "zv" .. raw.seq
  local ok, code, message, fields = run(raw, "prepare", sql, nil, 0, name)
  if not ok then return nil, code, message, fields end
  local node = { sql = sql, name = name }
  raw.stmts[sql] = node
  raw.nstmts = raw.nstmts + 1
  lru_touch(raw, node)
  return node
end

-- Runs sql (already rewritten) with binds on raw: true | nil, code, message, fields.
local function execute(raw, sql, binds, n)
  raw.pool.statements = raw.pool.statements + 1
  if n == 0 then return run(raw, "simple", sql, nil, 0) end
  if raw.max_stmts <= 0 then return run(raw, "params", sql, binds, n) end
  local node = raw.stmts[sql]
  local code, message, fields
  if node then
    lru_touch(raw, node)
  else
    node, code, message, fields = prepare(raw, sql)
    if not node then return nil, code, message, fields end
  end
  local ok
  ok, code, message, fields = run(raw, "prepared", sql, binds, n, node.name)
  if ok then return true end
  local state = fields and fields.sqlstate
  if (state == "26000" or state == "0A000") and not raw.pinned then
    lru_remove(raw, node)
    if state == "0A000" then run(raw, "simple", "DEALLOCATE " .. node.name, nil, 0) end
    node, code, message, fields = prepare(raw, sql)
    if not node then return nil, code, message, fields end
    return run(raw, "prepared", sql, binds, n, node.name)
  end
  return nil, code, message, fields
end

local function close_raw(raw)
  if raw.h then
    raw.h:close()
    raw.h = nil
  end
end

-- --- the pool -----------------------------------------------------------------------------

local Pool = {}
Pool.__index = Pool

local function connect(pool)
  local wait = pool.next_try - now()
  if wait > 0 then sched.sleep(wait) end
  local token = token_of()
  local h = pg.connect(pool.uri, pool.options, pool.connect_timeout, token, complete)
  local ok, code, message = await(token)
  if not ok then
    h:close()
    pool.failures = pool.failures + 1
    pool.backoff = math.min(math.max(pool.backoff * 2, 0.05), 2)
    pool.next_try = now() + pool.backoff
    return nil, code or "unavailable", message
  end
  pool.backoff, pool.next_try = 0, 0
  pool.connects = pool.connects + 1
  local t = pool.now()
  return setmetatable({ h = h, pool = pool, born = t, used = t, stmts = {}, nstmts = 0,
    max_stmts = pool.max_stmts, seq = 0 }, Raw)
end

local function expired(pool, raw, t)
  return (pool.max_lifetime > 0 and t - raw.born > pool.max_lifetime) or
    (pool.idle_timeout > 0 and t - raw.used > pool.idle_timeout)
end

-- When idle raw turns expired (pool clock), or nil when neither limit is set.
local function deadline(pool, raw)
  local at
  if pool.idle_timeout > 0 then at = raw.used + pool.idle_timeout end
  if pool.max_lifetime > 0 then
    local d = raw.born + pool.max_lifetime
    if not at or d < at then at = d end
  end
  return at
end

-- The idle timer: armed while a connection sits idle, for the earliest deadline among them, so
-- idle_timeout and max_lifetime close connections nobody takes (a worker whose traffic fell
-- away gives its server slots back). It does not keep the loop running (timer:unref), so a
-- script ends as before. A connection is closed only from the idle stack, never while in use.
local function arm(pool, at)
  local tm = pool.timer
  if not tm or (pool.timer_at and pool.timer_at <= at) then return end
  pool.timer_at = at
  local wait = at - pool.now()
  tm:start(wait > 0 and wait or 0)
end

local function sweep_idle(pool)
  pool.timer_at = nil
  if pool.closed then return end
  local t, kept, next_at = pool.now(), 0, nil
  local idle = pool.idle
  for i = 1, pool.nidle do
    local raw = idle[i]
    idle[i] = nil
    -- deadline(...) <= t as well: the timer's millisecond rounding must not leave it armed.
    local at = deadline(pool, raw)
    if expired(pool, raw, t) or (at and at <= t) then
      close_raw(raw)
      pool.open = pool.open - 1
      pool.idle_closed = pool.idle_closed + 1
    else
      kept = kept + 1
      idle[kept] = raw
      if at and (not next_at or at < next_at) then next_at = at end
    end
  end
  pool.nidle = kept
  if next_at then arm(pool, next_at) end
end

-- A raw connection: from the idle stack (checked), a new one, or the next one released.
local function acquire(pool)
  if pool.closed then return nil, "closed", "the database is closed" end
  while true do
    while pool.nidle > 0 do
      local raw = pool.idle[pool.nidle]
      pool.idle[pool.nidle] = nil
      pool.nidle = pool.nidle - 1
      if not expired(pool, raw, pool.now()) and raw.h:check() then
        pool.busy = pool.busy + 1
        return raw
      end
      close_raw(raw)
      pool.open = pool.open - 1
    end
    if pool.open < pool.size then
      pool.open = pool.open + 1
      local raw, code, message = connect(pool)
      if raw then
        pool.busy = pool.busy + 1
        return raw
      end
      pool.open = pool.open - 1
      return nil, code, message
    end
    local token = token_of()
    local w = pool.waiters
    w.last = w.last + 1
    w[w.last] = token
    local raw = await(token)
    if raw then
      pool.busy = pool.busy + 1
      return raw
    end
    if pool.closed then return nil, "closed", "the database is closed" end
  end
end

-- Gives raw back: to the first waiter, to the idle stack, or closed when it broke.
local function release(pool, raw)
  pool.busy = pool.busy - 1
  local w = pool.waiters
  local waiter
  if w.first <= w.last then
    waiter = w[w.first]
    w[w.first] = nil
    w.first = w.first + 1
  end
  if raw.broken or pool.closed or not raw.h then
    close_raw(raw)
    pool.open = pool.open - 1
    if waiter then complete(waiter, nil) end -- it opens a new one
    return
  end
  raw.used = pool.now()
  if waiter then
    complete(waiter, raw)
  else
    pool.nidle = pool.nidle + 1
    pool.idle[pool.nidle] = raw
    local at = deadline(pool, raw)
    if at then arm(pool, at) end
  end
end

-- --- the conn of zever.db -----------------------------------------------------------------

local Conn = {}
Conn.__index = Conn

-- Runs one statement: acquires (unless pinned), executes, decodes with decode(h), releases.
local function statement(self, sql, binds, n, decode, all)
  if type(sql) ~= "string" then error("db: expects an SQL string", 3) end
  if binds == nil then n = 0
  elseif n == nil then n = binds.n or #binds end
  if n > 0 then binds = check_binds(binds, n) end
  sql = rewrite(sql)
  local pool = self.pool
  local raw = self.raw
  if raw == nil then
    local code, message
    raw, code, message = acquire(pool)
    if not raw then return nil, code, message end
  elseif raw == false then
    return nil, "closed", "this pinned connection was given back"
  elseif not raw.h then
    return nil, "unavailable", "the connection of this transaction was lost"
  end
  local ok, code, message, fields = execute(raw, sql, binds, n)
  local res
  if ok then
    res = decode(raw.h, pool.decode_opts, all)
    raw.h:clear()
  end
  if self.raw == nil then release(pool, raw) end
  if not ok then return nil, code, message, fields end
  return res
end

local function exec_decode(h)
  return changes_of(h)
end

function Conn:exec(sql, binds, n)
  local changes, code, message, fields = statement(self, sql, binds, n, exec_decode)
  if changes == nil then return nil, code, message, fields end
  return changes, nil
end

function Conn:query(sql, binds, n)
  return statement(self, sql, binds, n, rows_of, true)
end

function Conn:first(sql, binds, n)
  local row, code, message, fields = statement(self, sql, binds, n, rows_of, false)
  if row == nil and code then return nil, code, message, fields end
  return row
end

function Conn:each(sql, binds, n, fn)
  if type(fn) ~= "function" then error("each: expects a function", 2) end
  local rows, code, message, fields = statement(self, sql, binds, n, rows_of, true)
  if not rows then return nil, code, message, fields end
  for i = 1, #rows do fn(rows[i]) end
  return #rows
end

-- A conn bound to one raw connection until unpin() (a transaction's): same methods.
function Conn:pin()
  if self.raw then error("db: this connection is already pinned", 2) end
  local raw, code, message = acquire(self.pool)
  if not raw then return nil, code, message end
  raw.pinned = true
  return setmetatable({ pool = self.pool, raw = raw, parent = self }, Conn)
end

function Conn:unpin()
  local raw = self.raw
  if not raw then return end
  self.raw = false -- later calls fail instead of acquiring
  raw.pinned = nil
  release(self.pool, raw)
end

function Conn:is_open()
  return not self.pool.closed
end

function Conn:close()
  local pool = self.pool
  if self.raw ~= nil then return self:unpin() end
  if pool.closed then return end
  pool.closed = true
  if pool.timer then
    pool.timer:close()
    pool.timer, pool.timer_at = nil, nil
  end
  for i = 1, pool.nidle do close_raw(pool.idle[i]) pool.idle[i] = nil end
  pool.open = pool.open - pool.nidle
  pool.nidle = 0
  local w = pool.waiters
  while w.first <= w.last do
    local t = w[w.first]
    w[w.first] = nil
    w.first = w.first + 1
    complete(t, nil)
  end
  if pool.listener then
    close_raw(pool.listener)
    pool.listener = nil
  end
end

function Conn:pool_stats()
  local p = self.pool
  local w = p.waiters
  return { size = p.size, open = p.open, idle = p.nidle, busy = p.busy,
    waiting = w.last - w.first + 1, connects = p.connects, connect_failures = p.failures,
    statements = p.statements, listening = p.listener ~= nil,
    listener_connects = p.listener_connects, idle_closed = p.idle_closed }
end

-- The server's version: number (150004) and text ("15.4").
function Conn:server_version()
  local raw = self.raw
  if not raw then
    local code, message
    raw, code, message = acquire(self.pool)
    if not raw then return nil, code, message end
  end
  local _, _, v = raw.h:info()
  if not self.raw then release(self.pool, raw) end
  local major, minor = math.floor(v / 10000), v % 10000
  return v, major .. "." .. minor
end

-- --- COPY ---------------------------------------------------------------------------------

local function quote_ident(s)
  local parts = {}
  for part in s:gmatch("[^.]+") do parts[#parts + 1] = '"' .. gsub(part, '"', '""') .. '"' end
  return concat(parts, ".")
end
M.quote_ident = quote_ident

local COPY_ESC = { ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

local function copy_field(v)
  if v == nil or rawequal(v, NULL) then return "\\N" end
  return (gsub(scalar_text(v, "copy"), "[\\\n\r\t]", COPY_ESC))
end

-- Loads rows (arrays of values in columns' order) with COPY ... FROM STDIN: count | nil, ...
function Conn:copy_in(tbl, columns, rows)
  local cols = {}
  for i, c in ipairs(columns) do cols[i] = quote_ident(c) end
  local ncol = #columns
  local lines = tnew(#rows + 1, 0)
  for i, row in ipairs(rows) do
    local f = tnew(ncol, 0)
    for j = 1, ncol do f[j] = copy_field(row[j]) end
    lines[i] = concat(f, "\t")
  end
  lines[#lines + 1] = ""
  local data = #rows > 0 and concat(lines, "\n") or ""
  local sql = "COPY " .. quote_ident(tbl) .. " (" .. concat(cols, ", ") .. ") FROM STDIN"
  local pool = self.pool
  local raw = self.raw
  if not raw then
    local code, message
    raw, code, message = acquire(pool)
    if not raw then return nil, code, message end
  end
  local token = token_of()
  local ok, code, message = raw.h:copy(token, sql, data)
  local fields
  if ok then
    ok, code, message = await(token)
    if not ok and code == "server" then code, message, fields = server_error(raw.h)
    elseif not ok then raw.broken = true end
  else
    raw.broken = true
  end
  local n = ok and changes_of(raw.h)
  if raw.h then raw.h:clear() end
  if not self.raw then release(pool, raw) end
  if not ok then return nil, code, message, fields end
  return n
end

-- --- LISTEN / NOTIFY ----------------------------------------------------------------------

local Sub = {}
Sub.__index = Sub

local function listen_sql(verb, channel)
  return verb .. " " .. quote_ident(channel)
end

local start_listener

local function on_notify(pool)
  return function(channel, payload)
    if channel == nil then -- the connection broke: reconnect and LISTEN again
      if pool.listener then close_raw(pool.listener) end
      pool.listener = nil
      if not pool.closed and next(pool.channels) then sched.spawn(start_listener, pool) end
      return
    end
    local subs = pool.channels[channel]
    if not subs then return end
    for _, fn in ipairs(subs) do sched.spawn(fn, payload, channel) end
  end
end

-- Opens the listen connection and LISTENs on every channel (retrying with the pool's backoff).
function start_listener(pool)
  if pool.listener or pool.starting then return true end
  pool.starting = true
  local raw, code, message
  while not pool.closed do
    raw, code, message = connect(pool)
    if raw then break end
    if not pool.reconnecting then break end
  end
  pool.starting = false
  if not raw then return nil, code, message end
  if pool.closed then close_raw(raw) return nil, "closed", "the database is closed" end
  raw.h:listen(on_notify(pool))
  for channel in pairs(pool.channels) do
    local ok
    ok, code, message = run(raw, "simple", listen_sql("LISTEN", channel), nil, 0)
    if not ok then close_raw(raw) return nil, code, message end
  end
  pool.listener = raw
  pool.listener_connects = pool.listener_connects + 1
  pool.reconnecting = true
  return true
end

function Conn:listen(channel, fn)
  if type(channel) ~= "string" or channel == "" then error("listen: expects a channel name", 2) end
  if type(fn) ~= "function" then error("listen: expects a function", 2) end
  local pool = self.pool
  local subs = pool.channels[channel]
  local fresh = subs == nil
  if fresh then
    subs = {}
    pool.channels[channel] = subs
  end
  subs[#subs + 1] = fn
  local handle = setmetatable({ pool = pool, channel = channel, fn = fn }, Sub)
  if pool.listener then
    if fresh then
      local ok, code, message, fields = run(pool.listener, "simple", listen_sql("LISTEN", channel), nil, 0)
      if not ok then
        handle:close()
        return nil, code, message, fields
      end
    end
    return handle
  end
  local ok, code, message = start_listener(pool)
  if not ok then
    handle:close()
    return nil, code, message
  end
  return handle
end

function Sub:close()
  local pool, subs = self.pool, self.pool.channels[self.channel]
  if not subs or self.closed then return end
  self.closed = true
  for i = #subs, 1, -1 do
    if subs[i] == self.fn then table.remove(subs, i) break end
  end
  if #subs == 0 then
    pool.channels[self.channel] = nil
    if pool.listener and not pool.listener.broken then
      run(pool.listener, "simple", listen_sql("UNLISTEN", self.channel), nil, 0)
    end
  end
end

function Conn:notify(channel, payload)
  if type(channel) ~= "string" or channel == "" then error("notify: expects a channel name", 2) end
  if payload ~= nil and type(payload) ~= "string" then error("notify: payload must be a string", 2) end
  return self:first("SELECT pg_notify($1, $2)", { channel, payload or "" }, 2)
end

-- --- open ---------------------------------------------------------------------------------

-- The pool's clock: raw.born/used, expiry and the idle timer (opts.clock in specs:
-- spec/support/fake_clock.lua). The default timer is unref'd: see arm.
local LOOP_CLOCK = {
  now = now,
  timer = function(fn)
    local tm = loop.timer(fn)
    tm:unref()
    return tm
  end,
}

local function seconds(v, name, default)
  if v == nil then return default end
  if type(v) ~= "number" or v < 0 then
    error("db.open: " .. name .. " must be a non-negative number of seconds", 4)
  end
  return v
end

-- target: "//user:pw@host:port/db?..." (the part after "postgres:"). Returns conn | nil, code,
-- message. Nothing connects yet: the first statement opens the first connection.
function M.open(target, opts)
  opts = opts or {}
  local size = opts.pool_size or 10
  if type(size) ~= "number" or size < 1 or size % 1 ~= 0 then
    error("db.open: pool_size must be a positive integer", 3)
  end
  local stmts = opts.statements or 256
  local options = "-c TimeZone=UTC -c DateStyle=ISO -c IntervalStyle=iso_8601"
  local st = seconds(opts.statement_timeout, "statement_timeout", 0)
  if st > 0 then options = options .. format(" -c statement_timeout=%d", math.ceil(st * 1000)) end
  if type(target) ~= "string" or sub(target, 1, 2) ~= "//" then
    return nil, "invalid", "a postgres DSN looks like postgres://user:password@host:5432/db"
  end
  local pool = setmetatable({
    uri = "postgresql:" .. target,
    options = options,
    size = size,
    idle_timeout = seconds(opts.idle_timeout, "idle_timeout", 300),
    max_lifetime = seconds(opts.max_lifetime, "max_lifetime", 3600),
    connect_timeout = seconds(opts.connect_timeout, "connect_timeout", 10),
    max_stmts = stmts,
    decode_opts = { numeric_number = opts.numeric == "number" },
    idle = {}, nidle = 0, open = 0, busy = 0,
    waiters = { first = 1, last = 0 },
    backoff = 0, next_try = 0, connects = 0, failures = 0, statements = 0, listener_connects = 0,
    channels = {}, idle_closed = 0,
  }, Pool)
  local clock = opts.clock or LOOP_CLOCK
  if type(clock) ~= "table" or type(clock.now) ~= "function" or type(clock.timer) ~= "function" then
    error("db.open: clock must be a table with now and timer functions", 3)
  end
  pool.now = clock.now
  if pool.idle_timeout > 0 or pool.max_lifetime > 0 then
    pool.timer = clock.timer(function() sweep_idle(pool) end)
  end
  -- One connection now: a wrong host, user or password is an error of open, not of the
  -- first request.
  local raw, code, message = acquire(pool)
  if not raw then return nil, code, message end
  release(pool, raw)
  return setmetatable({ pool = pool }, Conn)
end

return M
