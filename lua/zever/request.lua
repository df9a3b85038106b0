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
local errors = require "zever.errors"
-- zever.multipart and zever.accept (whose LPeg grammars cost ~0.9 M instructions to build) load
-- on the first request that parses a form or negotiates, not with every worker's app.
local multipart = setmetatable({}, { __index = function(t, k)
  local m = require "zever.multipart"
  setmetatable(t, { __index = m })
  return m[k]
end })
local accept = setmetatable({}, { __index = function(t, k)
  local m = require "zever.accept"
  setmetatable(t, { __index = m })
  return m[k]
end })

local char, tonumber, setmetatable, rawget, rawset = string.char, tonumber, setmetatable, rawget, rawset
local format, gsub, find, sub = string.format, string.gsub, string.find, string.sub
local type, select, ipairs, pairs, tostring = type, select, ipairs, pairs, tostring

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

-- Percent-decodes s; with plus = true, "+" is a space too (form and query encoding).
function M.unescape(s, plus)
  if plus then s = gsub(s, "+", " ") end
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
function M.parse_query(qs)
  local out = {}
  if not qs or qs == "" then return out end
  for pair in qs:gmatch("[^&;]+") do
    local eq = find(pair, "=", 1, true)
    local k = M.unescape(eq and sub(pair, 1, eq - 1) or pair, true)
    local v = eq and M.unescape(sub(pair, eq + 1), true) or ""
    put(out, k, v)
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

function Request.__index(req, key)
  local method = Request[key]
  if method then return method end
  local make = lazy[key]
  if make then
    local v = make(req)
    rawset(req, key, v)
    return v
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

local STATUS = { too_large = 413, invalid = 400, unsupported = 415, unavailable = 500 }

local function form_error(code, message)
  return errors.new("form", code, message, { status = STATUS[code] or 400 })
end

local File = {}
File.__index = File

-- The file's bytes (from memory or from its temporary file).
function File:read()
  if self.data then return self.data end
  local f, err = io.open(self.path, "rb")
  if not f then return nil, form_error("unavailable", "cannot read an upload: " .. tostring(err)) end
  local s = f:read("*a")
  f:close()
  return s
end

-- A client's file name without any folder part ("C:\a\b.txt" -> "b.txt"): never a path.
local function base_name(name)
  return (name:match("([^/\\]*)$"))
end

local LIMIT_KEYS = { max_parts = true, max_field_bytes = true, max_file_bytes = true,
  spool_bytes = true, tmpdir = true }

-- The body of a stream_body route comes from the socket (zever.stream): a form reads it piece
-- by piece; a multipart body's files are spooled as they arrive, never held whole.
local function is_streamed(req)
  local src = req.source
  local f = type(src) == "userdata" and src.streamed
  return f and f(src) or false
end

local READ_PIECE = 256 * 1024

local function body_kind(err)
  return err.status == 413 and "too_large" or "invalid"
end

local function read_all(req)
  local parts = {}
  while true do
    local chunk, err = req:read(READ_PIECE)
    if chunk == nil then
      if err then return nil, err end
      return table.concat(parts)
    end
    parts[#parts + 1] = chunk
  end
end

local function stream_multipart(req, ctype, limits)
  local p, msg, kind = multipart.new(ctype, limits)
  if not p then return nil, msg, kind end
  -- The parser's live list of temporary files: removed after the response (zever.app), even
  -- when the upload breaks off midway.
  rawset(req, "_tempfiles", p:spooled())
  while true do
    local chunk, err = req:read(READ_PIECE)
    if chunk == nil then
      if err then return nil, err.message, body_kind(err) end
      return p:finish()
    end
    local ok
    ok, msg, kind = p:feed(chunk)
    if not ok then return nil, msg, kind end
  end
end

local function parse_form(req, opts)
  local ctype = req.source:header("content-type") or ""
  local mtype = ctype:match("^%s*([^;%s]*)"):lower()
  local limits = M.form_limits
  if opts then
    local merged = {}
    for k, v in pairs(limits) do merged[k] = v end
    for k, v in pairs(opts) do merged[k] = v end
    limits = merged
  end
  local streamed = is_streamed(req)
  local body = not streamed and req.body
  if mtype == "application/x-www-form-urlencoded" then
    if streamed then
      local err
      body, err = read_all(req)
      if not body then return nil, form_error(body_kind(err), err.message) end
    end
    local n = select(2, gsub(body, "[&;]", "")) + 1
    if n > limits.max_parts then
      return nil, form_error("too_large", format("more than %d fields", limits.max_parts))
    end
    return M.parse_query(body), {}
  elseif mtype == "multipart/form-data" then
    local parts, msg, kind
    if streamed then
      parts, msg, kind = stream_multipart(req, ctype, limits)
    else
      parts, msg, kind = multipart.parse(body, ctype, limits)
    end
    if not parts then return nil, form_error(kind, msg) end
    local fields, files = {}, {}
    for _, p in ipairs(parts) do
      if p.filename then
        if p.path and not streamed then
          local list = rawget(req, "_tempfiles") or {}
          list[#list + 1] = p.path
          rawset(req, "_tempfiles", list)
        end
        -- An empty file input sends a part with filename="" and no bytes: not a file.
        if p.filename ~= "" or p.size > 0 then
          p.filename = base_name(p.filename)
          files[#files + 1] = setmetatable(p, File)
        end
      else
        put(fields, p.name, p.data)
      end
    end
    return fields, files
  elseif body == "" or streamed and req:read(1) == nil then
    return {}, {}
  end
  return nil, form_error("unsupported", "the body is " .. (mtype ~= "" and mtype or "untyped")
    .. ", not a form")
end

-- The form's fields: { name = value } (a "name[]" field is a list). nil, err when the body is
-- malformed or over a limit: err.status is the status to answer (400, 413, 415). opts
-- overrides M.form_limits for this request (the first call parses; later calls reuse it).
function Request:form(opts)
  if opts ~= nil and type(opts) ~= "table" then error("req:form(opts) wants a table", 2) end
  if opts then
    for k in pairs(opts) do
      if not LIMIT_KEYS[k] then error("req:form: unknown option '" .. tostring(k) .. "'", 2) end
    end
  end
  local form = rawget(self, "_form")
  if form == nil then
    local files
    form, files = parse_form(self, opts)
    if form == nil then
      rawset(self, "_form", false)
      rawset(self, "_form_err", files)
      return nil, files
    end
    rawset(self, "_form", form)
    rawset(self, "_files", files)
  elseif form == false then
    return nil, rawget(self, "_form_err")
  end
  return form
end

-- The uploaded files, in body order (an empty list for a form without files).
function Request:files()
  local form, err = self:form()
  if form == nil then return nil, err end
  return rawget(self, "_files")
end

-- --- reading the body piece by piece (docs/streaming.md, "Request bodies") ----------------------

-- The next piece of the body, at most n bytes (default 64 KiB): a string; nil at the end;
-- nil, err when the client went away or the body broke a limit (err.code "closed",
-- "too_large", "timeout", "invalid"; err.status 400, 413, 408). On a stream_body route it
-- waits (yields) for bytes from the socket; the server reads on only as the handler takes
-- them. Elsewhere it reads the body already received.
function Request:read(n)
  if n ~= nil and (type(n) ~= "number" or n < 1) then error("req:read(n) wants a number >= 1", 2) end
  local src = self.source
  if type(src) == "userdata" then
    local state = rawget(self, "_body_state")
    if not state then
      state = { read = 0, limit = rawget(self, "_max_body") }
      rawset(self, "_body_state", state)
    end
    return require("zever.stream").read_body(src, n or 65536, state)
  end
  -- A table source (zever.testing): its body string.
  local body, pos = self.body, rawget(self, "_body_pos") or 0
  if pos >= #body then return nil end
  local chunk = sub(body, pos + 1, pos + (n or 65536))
  rawset(self, "_body_pos", pos + #chunk)
  return chunk
end

-- A function that returns the next piece of the body each call (req:read(n)): for chunk in
-- req:body_reader() do ... end stops at the end, or at a failure, which the reader then
-- remembers: reader.err (nil after a clean end).
function Request:body_reader(n)
  if n ~= nil and (type(n) ~= "number" or n < 1) then
    error("req:body_reader(n) wants a number >= 1", 2)
  end
  local reader = {}
  return setmetatable(reader, { __call = function()
    local chunk, err = self:read(n)
    if err then reader.err = err end
    return chunk, err
  end })
end

-- Removes the temporary files of the request's uploads (zever.app calls it after the response).
function M.cleanup(req)
  local list = rawget(req, "_tempfiles")
  if list then
    for _, path in ipairs(list) do os.remove(path) end
    rawset(req, "_tempfiles", nil)
  end
end

-- --- content negotiation -------------------------------------------------------------------------

local function offers_of(name, ...)
  local n = select("#", ...)
  local offers = ...
  if n ~= 1 or type(offers) ~= "table" then offers = { ... } end
  for i = 1, #offers do
    if type(offers[i]) ~= "string" then error(name .. ": offers must be strings", 3) end
  end
  return offers
end

-- The parsed Accept-family header, cached on the request.
local function parsed(req, key, header, parse)
  local v = rawget(req, key)
  if v == nil then
    v = parse(req.source:header(header))
    rawset(req, key, v)
  end
  return v
end

function Request:accepts(...)
  local ranges = parsed(self, "_accept", "accept", accept.media)
  if select("#", ...) == 0 then
    local out = {}
    for i, r in ipairs(accept.ordered(ranges)) do
      if r.q > 0 then out[#out + 1] = r.type .. "/" .. r.subtype end
      if i > 100 then break end
    end
    return out
  end
  local offers = offers_of("req:accepts", ...)
  if not self.source:header("accept") then return offers[1] end -- no header: anything goes
  return accept.best_media(ranges, offers)
end

function Request:accepts_language(...)
  local offers = offers_of("req:accepts_language", ...)
  if not self.source:header("accept-language") then return offers[1] end
  return accept.best_language(parsed(self, "_accept_language", "accept-language", accept.tokens),
    offers)
end

function Request:accepts_encoding(...)
  local offers = offers_of("req:accepts_encoding", ...)
  local present = self.source:header("accept-encoding") ~= nil
  return accept.best_encoding(parsed(self, "_accept_encoding", "accept-encoding", accept.tokens),
    offers, present)
end

-- Whether the request's body is of one of the offered types ("json" also matches any
-- "+json" type, "text/*" any text): the offer that matched, false, or nil without a body type.
function Request:is(...)
  local offers = offers_of("req:is", ...)
  local t, s = accept.content_type(self.source:header("content-type"))
  if not t then
    if self.source:header("content-type") then return false end
    return nil
  end
  for _, offer in ipairs(offers) do
    local ot, os_ = accept.offer_type(offer)
    if ot and (ot == "*" or ot == t) and (os_ == "*" or os_ == s
      or (os_ ~= "*" and s:sub(-#os_ - 1) == "+" .. os_)) then
      return offer
    end
  end
  return false
end

function Request:json()
  local body = self.body
  local v, err = json.decode(body)
  if v == nil then
    return nil, errors.new(nil, "invalid", "request body is not JSON: " .. tostring(err))
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
  return setmetatable(req, Request)
end

-- --- cookies (zever.cookie; signed and encrypted ones through zever.crypto) ----------------

local cookie = require "zever.cookie"

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
