-- adapters.db.postgres_sql: what adapters.db.postgres sends: the `?` placeholders rewritten to
-- PostgreSQL's $n (outside quotes, dollar quotes and comments; cached per SQL text), and the
-- binds checked and turned into text parameters (integers exact, int64 cdata, booleans, NULL,
-- db.blob as bytea hex, Lua arrays as array literals, tables with json's marks as JSON).
--
--   sql.rewrite(s) -> s'            cached;  sql.rewrite_uncached(s) -> s'   (the golden rows)
--   sql.check_binds(binds, n) -> binds as text (raises on a value PostgreSQL cannot take)
--   sql.blob_bytes(v) -> the bytes of a db.blob, or nil; sql.scalar_text(v, where) -> text
--
-- Split out of adapters/db/postgres.lua (#16): pure functions, no connection.

local ffi = require "ffi"
local pg = require "zever.pg"
local json = require "zever.json"
local tnew = require "table.new"

local NULL = pg.null
local type, getmetatable, tostring, error, rawequal = type, getmetatable, tostring, error,
  rawequal
local byte, sub, find, format, gsub, concat = string.byte, string.sub, string.find,
  string.format, string.gsub, table.concat
local ffi_string, ffi_cast, ffi_istype = ffi.string, ffi.cast, ffi.istype
local json_encode = json.encode

local M = {}

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

-- Whether the C binding takes v as it is: a string, number, boolean, nil or NULL.
local function plain(v)
  local t = type(v)
  return t == "string" or t == "number" or t == "boolean" or t == "nil" or rawequal(v, NULL)
end

-- binds[1..n] as text where they are not plain (int64 cdata, db.blob, tables), in a new list.
local function converted(binds, n)
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

-- Binds the C binding takes as they are (strings, numbers, booleans, nil, NULL) pass through;
-- others (int64 cdata, db.blob, tables) become text in a new list. Raises on what cannot bind.
-- Up to four binds are checked without a loop (a loop on the statement path starts a trace of
-- its own and cuts the caller's).
local function check_binds(binds, n)
  if n <= 4 then
    if plain(binds[1]) and (n < 2 or plain(binds[2])) and (n < 3 or plain(binds[3])) and
        (n < 4 or plain(binds[4])) then
      return binds
    end
    return converted(binds, n)
  end
  for i = 1, n do
    if not plain(binds[i]) then return converted(binds, n) end
  end
  return binds
end


M.rewrite, M.rewrite_uncached, M.check_binds, M.blob_bytes, M.scalar_text = rewrite,
  rewrite_uncached, check_binds, blob_bytes, scalar_text

return M
