-- zever.request: the request object handlers see.
--
--   req.method, req.path, req.params, req.query, req.id, req.body
--   req:header(name)   case-insensitive, nil when absent
--   req:headers()      a table of lower-case names
--   req:json()         the body decoded, or nil, err (code "invalid") when it is not JSON
--   req:form()         the fields of an urlencoded or multipart/form-data body, or nil, err
--   req:files()        the files of a multipart body: { name, filename, content_type, size,
--                      data (in memory) | path (spooled) } with f:read(); docs/forms.md
--   req:accepts("json", "html")            the best offer for Accept (q-values, wildcards), or
--                                          nil; no arguments: the accepted types, best first
--   req:accepts_language("en", "fr-CA")    the same for Accept-Language
--   req:accepts_encoding("br", "gzip")     the same for Accept-Encoding (identity rules)
--   req:is("json", "html")                 the offer the Content-Type matches, or false
--   (docs/negotiation.md; the grammars are LPeg, in zever.accept)
--   req.cookies        the Cookie header as a table (zever.cookie; first of a name wins)
--   req:cookie(name[, {signed = true} | {encrypted = true}[, crypto = keyring]])
--                      one cookie's value, or nil; a signed or encrypted one that does not
--                      verify is nil, err (code "invalid")
--
-- A request wraps a source: the C request of zever.http, or a table-backed one from
-- zever.testing. Both answer header(name), headers() and body(). query, body and id are
-- computed on first use, so a handler that reads none of them costs none of them.

local json = require "zever.json"

local char, tonumber, setmetatable, rawget, rawset = string.char, tonumber, setmetatable, rawget, rawset
local format, gsub, find, sub = string.format, string.gsub, string.find, string.sub
local type, ipairs, pairs, tostring = type, ipairs, pairs, tostring

local M = {}

-- req:header through LuaJIT's FFI (zv_http_header_ffi, host/http/http_ffi.h) when the source is
-- zever.http's C request, so that a middleware reading a header (req.id, an auth check) stays
-- in the request's compiled trace: the classic source:header call stopped it ("stitch"),
-- ~5,000 instructions a request for a middleware setting X-Request-Id (BENCHMARKS.md "Session
-- 12"). The source is that C request when its metatable is one of the two zever.http registers
-- (lx_http.h's REQ_MT and GUARD_MT); a table-backed source (zever.testing) and every case the
-- FFI leaves to it (repeated headers, an answered or closed request) take source:header.
local ffi = require "ffi"
require "zever.cdef.http"
local registry = debug.getregistry()
local header_ffi
do
  local ok, fn = pcall(function() return ffi.C.zv_http_header_ffi end)
  if ok then header_ffi = fn end
end
local hval, hlen = ffi.new("const char *[1]"), ffi.new("size_t[1]")
local ffi_string, getmetatable = ffi.string, getmetatable

local function source_header(src, name)
  local mt = getmetatable(src)
  if header_ffi and mt and (mt == registry["zever.http.request"] or
      mt == registry["zever.http.request (guarded)"]) then
    local rc = header_ffi(src, name, #name, hval, hlen)
    if rc == 1 then return ffi_string(hval[0], hlen[0]) end
    if rc == 0 then return nil end
  end
  return src:header(name)
end

local function hex_byte(h)
  return char(tonumber(h, 16))
end

-- Percent-decodes s; with plus = true, "+" is a space too (form and query encoding). Plain
-- finds first: they are compiled, where gsub is not (LuaJIT's NYI), and most keys and values
-- hold neither "+" nor "%".
function M.unescape(s, plus)
  if plus and find(s, "+", 1, true) then s = gsub(s, "+", " ") end
  if find(s, "%", 1, true) then s = gsub(s, "%%(%x%x)", hex_byte) end
  return s
end

-- Adds value under key with the query string's rules: "k[]" collects a list, else the last wins.
local function put(out, k, v)
  if sub(k, -2) == "[]" then
    k = sub(k, 1, -3)
    local list = out[k]
    if type(list) ~= "table" then
      list = {}
      out[k] = list
    end
    list[#list + 1] = v
  elseif k ~= "" then
    out[k] = v
  end
end

-- Parses a query string: "a=1&b=x+y" -> { a = "1", b = "x y" }. A repeated key keeps the last
-- value, as Lapis and Laravel do; "k[]=1&k[]=2" collects an array; a key without "=" is "".
-- Pairs are split at "&" and ";" (empty pieces skipped) by plain finds, which LuaJIT compiles:
-- gmatch and gsub are NYI, and "queries=20" cost ~5,500 instructions through them (callgrind,
-- BENCHMARKS.md "Session 15"). The next position of each separator (and of "=") is kept, so a
-- string of many pairs is scanned once.
function M.parse_query(qs)
  local out = {}
  if not qs or qs == "" then return out end
  local n, i = #qs, 1
  local amp, semi, eqs = find(qs, "&", 1, true), find(qs, ";", 1, true), find(qs, "=", 1, true)
  while i <= n do
    if amp and amp < i then amp = find(qs, "&", i, true) end
    if semi and semi < i then semi = find(qs, ";", i, true) end
    if eqs and eqs < i then eqs = find(qs, "=", i, true) end
    local stop = amp or n + 1
    if semi and semi < stop then stop = semi end
    if stop > i then
      local eq = eqs and eqs < stop and eqs or nil
      local k = M.unescape(sub(qs, i, (eq or stop) - 1), true)
      local v = eq and M.unescape(sub(qs, eq + 1, stop - 1), true) or ""
      put(out, k, v)
    end
    i = stop + 1
  end
  return out
end

local counter = 0
local prefix = format("%08x", (os.time() * 65536 + math.floor(os.clock() * 1e6)) % 0x100000000)

-- A request id unique within this process: the incoming X-Request-Id when it is sane, or
-- "<start stamp>-<counter>".
local function new_id(req)
  local given = source_header(req.source, "x-request-id")
  if given and #given <= 128 and not find(given, "[^%w%-_.:]") then return given end
  counter = counter + 1
  return prefix .. "-" .. counter
end

local lazy = {
  query = function(req) return M.parse_query(rawget(req, "query_string")) end,
  body = function(req) return req.source:body() or "" end,
  id = new_id,
}

local Request = {}

-- The methods a request seldom needs live in modules of their own, installed into Request by
-- the first request that calls one of them (zever.multipart and zever.accept, whose LPeg
-- grammars cost ~0.9 M instructions to build, load later still: on the first form parsed or
-- header negotiated). A worker whose app never calls them holds none of their code
-- (docs/app.md, "Start-up heap").
local COLD = { form = "body", files = "body", read = "body", body_reader = "body",
  accepts = "negotiate", accepts_language = "negotiate", accepts_encoding = "negotiate",
  is = "negotiate" }

local function install(part)
  if part == "body" then
    require("zever.request.body").install(Request, M, put)
  else
    require("zever.request.negotiate").install(Request)
  end
  for k, p in pairs(COLD) do
    if p == part then COLD[k] = nil end
  end
end

function Request.__index(req, key)
  local method = Request[key]
  if method then return method end
  local make = lazy[key]
  if make then
    local v = make(req)
    rawset(req, key, v)
    return v
  end
  local part = COLD[key]
  if part then
    install(part)
    return Request[key]
  end
end

function Request:header(name)
  if type(name) ~= "string" then error("req:header(name) wants a string", 2) end
  return source_header(self.source, name)
end

function Request:headers()
  return self.source:headers()
end

-- --- forms -------------------------------------------------------------------------------------

-- The limits of req:form(); an app may change them (zever.request.form_limits.max_parts = 50).
M.form_limits = {
  max_parts = 1000,            -- fields + files of one body (urlencoded: fields); over: 413
  max_field_bytes = 1048576,   -- one field's value; over: 413
  max_file_bytes = nil,        -- one file (nil: only the server's max_body_bytes bounds it)
  spool_bytes = 65536,         -- a file larger than this goes to a temporary file
  tmpdir = os.getenv("TMPDIR") or "/tmp",
}

-- req:form(), req:files(), req:read(n), req:body_reader(n): zever.request.body.
-- req:accepts(...), req:accepts_language(...), req:accepts_encoding(...), req:is(...):
-- zever.request.negotiate. Both are installed on first use (COLD above).

-- Removes the temporary files of the request's uploads (zever.app calls it after the response).
function M.cleanup(req)
  local list = rawget(req, "_tempfiles")
  if list then
    for _, path in ipairs(list) do os.remove(path) end
    rawset(req, "_tempfiles", nil)
  end
end

-- --- content negotiation -------------------------------------------------------------------------


function Request:json()
  local body = self.body
  local v, err = json.decode(body)
  if v == nil then
    return nil, require("zever.errors").new(nil, "invalid", "request body is not JSON: " ..
      tostring(err))
  end
  return v
end

-- Builds a request: method, raw path (no query), raw query string or nil, params, source.
-- The constructor's five keys all have constant values (false): `luajit -b` keeps only the keys
-- of a template whose value is a constant (a key given a variable, or an expression such as
-- `x or false`, is dropped from the precompiled template), so only this way is the table
-- duplicated with its hash part sized at 8 and the stores below find their keys. The fields a
-- request commonly gains (req.session from its middleware, the lazy id and query, ...) then
-- find free slots too; before, the precompiled table started with no hash part and rehashed on
-- its 1st, 2nd, 3rd and 5th key (3,129 -> 1,310 instructions a request.new, callgrind). A key
-- set to nil keeps its slot.
function M.new(method, path, query_string, params, source)
  local req = { method = false, path = false, params = false, source = false,
    query_string = false }
  req.method, req.path, req.params, req.source = method, path, params, source
  if query_string then req.query_string = query_string else req.query_string = nil end
  setmetatable(req, Request) -- not a tail call: see zever.response's new
  return req
end

-- --- cookies (zever.cookie; signed and encrypted ones through zever.crypto) ----------------

-- zever.cookie loads with the first request that reads a cookie.
local cookie = setmetatable({}, { __index = function(t, k)
  local m = require "zever.cookie"
  setmetatable(t, { __index = m })
  return m[k]
end })

lazy.cookies = function(req) return cookie.parse(req.source:header("cookie")) end

local function keyring(opts)
  local c = opts.crypto
  if c == nil then return require("zever.crypto").default() end
  return c
end

function Request:cookie(name, opts)
  if type(name) ~= "string" then error("req:cookie(name) wants a string", 2) end
  local all = rawget(self, "cookies")
  local v
  if all then v = all[name] else v = cookie.get(self.source:header("cookie"), name) end
  if opts == nil then return v end
  if type(opts) ~= "table" then error("req:cookie: opts must be a table", 2) end
  if v == nil then return nil end
  if opts.encrypted then return keyring(opts):decrypt_cookie(name, v) end
  if opts.signed then return keyring(opts):verify_cookie(name, v) end
  return v
end

M.Request = Request
return M
