-- adapters.db.postgres_decode: what adapters.db.postgres reads back: a libpq result decoded by
-- type OID through the FFI (pg_ffi.h) into Lua rows, and a server error into zever.db's
-- code, message and fields (SQLSTATE mapped to codes; never DETAIL, never a bound value).
--
--   decode.rows_of(conn, opts, all[, op[, node]]) -> rows (all) | the first row | nil
--   decode.changes_of(conn[, op]) -> the command's row count
--   (conn: the connection's zv_pg_t, from zever.pg's h:ptr(); op: a pipeline's op)
--   decode.server_error(h) -> code, message, fields;  decode.code_of(sqlstate) -> code
--
-- Split out of adapters/db/postgres.lua (#16): no connection handling here.

local ffi = require "ffi"
local pg = require "zever.pg"
local json = require "zever.json"
local tnew = require "table.new"

require "zever.cdef.pg"

local C = ffi.C
local NULL = pg.null
local tonumber, error, tostring, load = tonumber, error, tostring, load
local byte, sub, find, gsub, concat, format = string.byte, string.sub, string.find,
  string.gsub, table.concat, string.format
local ffi_string = ffi.string
local array_mt = json.array_mt
local json_decode = json.decode
local DQUOTE, DASH, BACKSLASH = 34, 45, 92

local M = {}

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

-- The failure of the last statement on raw: code, message, fields (no DETAIL: it holds values).
local function server_error(h, i)
  local state, msg, constraint, column, tbl, position = h:error(i)
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

-- Rows by fixed shape: a prepared statement's result always has the same columns (a plan that
-- would change them fails with 0A000 and is prepared again under a new node), so its row is
-- built by a function made for that shape (load()ed once per node): a table constructor with
-- the column names as constant keys (LuaJIT duplicates a template instead of inserting key by
-- key) and one decode per column chosen by its type (int2/int4: zv_pg_int, one FFI call).
-- Shapes it does not take (repeated names, more than MAX_SHAPED columns) use row_at.
local MAX_SHAPED = 64

local function shaped(nf, names, oids)
  if nf == 0 or nf > MAX_SHAPED then return false end
  local seen, keys = {}, tnew(nf, 1)
  for j = 0, nf - 1 do
    if seen[names[j]] then return false end
    seen[names[j]] = true
    keys[j] = format("%q", names[j])
  end
  local src = { "local C, ffi_string, decode_text, unescape_bytea = ...\n",
    "return function(r, i, opts)\n  local v\n  local row = {" }
  for j = 0, nf - 1 do src[#src + 1] = "[" .. keys[j] .. "] = false, " end
  src[#src + 1] = "}\n"
  for j = 0, nf - 1 do
    local oid, k = oids[j], keys[j]
    local line
    if oid == 23 or oid == 21 then
      line = "v = C.zv_pg_int(r, i, %d) if v ~= v then v = nil end"
    elseif FAST[oid] then
      line = "if C.PQgetisnull(r, i, %d) == 0 then v = ffi_string(C.PQgetvalue(r, i, %d), " ..
        "C.PQgetlength(r, i, %d)) else v = nil end"
    elseif oid == 17 then
      line = "if C.PQgetisnull(r, i, %d) == 0 then v = unescape_bytea(C.PQgetvalue(r, i, %d)) " ..
        "else v = nil end"
    else
      line = "if C.PQgetisnull(r, i, %d) == 0 then v = decode_text(ffi_string(C.PQgetvalue(r, " ..
        "i, %d), C.PQgetlength(r, i, %d)), " .. oid .. ", opts) else v = nil end"
    end
    src[#src + 1] = "  " .. gsub(line, "%%d", tostring(j)) .. " row[" .. k .. "] = v\n"
  end
  src[#src + 1] = "  return row\nend\n"
  return load(concat(src), "=postgres row", "t")(C, ffi_string, decode_text, unescape_bytea)
end

-- The result to decode: conn is the connection's zv_pg_t (h:ptr(), a cdata pointer), op a
-- pipeline's op (1-based; nil: the last statement's result). FFI calls, so that the decode
-- compiles (a light userdata cast to a pointer does not).
local function result_of(conn, op)
  if op then return C.zv_pg_pipeline_result(conn, op - 1) end
  return C.zv_pg_result(conn)
end

-- Rows (all) or the first row of conn's result. node: the prepared statement's node (the
-- adapter's LRU entry), whose result shape never changes (a plan that would change it fails
-- with 0A000 and is prepared again under a new node): its column names and types are read
-- from the first result and kept there, so later calls make no name strings and no tables.
local function rows_of(conn, opts, all, op, node)
  local r = result_of(conn, op)
  if r == nil then return all and {} or nil end
  local nt = C.PQntuples(r)
  if not all and nt == 0 then return nil end
  if all and nt == 0 then return tnew(0, 0) end
  local nf, names, oids
  if node then
    local build = node.build
    if build == nil then
      nf, names, oids = shape(r)
      build = shaped(nf, names, oids)
      node.build, node.nf, node.names, node.oids = build, nf, names, oids
    end
    if build then
      if not all then return build(r, 0, opts) end
      local rows = tnew(nt, 0)
      for i = 0, nt - 1 do rows[i + 1] = build(r, i, opts) end
      return rows
    end
    nf, names, oids = node.nf, node.names, node.oids
  else
    nf, names, oids = shape(r)
  end
  if not all then return row_at(r, 0, nf, names, oids, opts) end
  local rows = tnew(nt, 0)
  for i = 0, nt - 1 do rows[i + 1] = row_at(r, i, nf, names, oids, opts) end
  return rows
end

-- The command's row count (PQcmdTuples' digits, 0 for a command without one).
local function changes_of(conn, op)
  local r = result_of(conn, op)
  if r == nil then return 0 end
  return C.zv_pg_changes(r)
end

M.rows_of, M.changes_of, M.server_error, M.code_of = rows_of, changes_of, server_error, code_of

return M
