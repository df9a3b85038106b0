-- zever.response: the response object handlers write to, and the rules for what a handler
-- returns.
--
--   res:status(n)            res:header(name, value)       res:add_header(name, value)
--   res:send(body)           res:json(value)               res:redirect(url[, code])
--   res:render(view, data[, opts])  the app's template view as HTML (zever.template)
--   res:cookie(name, value[, opts])   res:clear_cookie(name[, opts])   (zever.cookie)
--   (each returns res: chainable)
--   res:write(chunk)  res:flush()  res:finish()  res:sleep(s)  res:closed()  res:sse(opts)
--                            a streamed response (zever.stream; docs/streaming.md)
--
-- A handler may instead return a value; M.apply turns it into the response:
--   a string                 -> 200 text/plain (or res's status, if set)
--   a table                  -> JSON
--   status, body[, headers]  -> that status; a table body is JSON; headers a name -> value table
--                               (a value may be a list of strings: repeated headers)
--   res itself, or nothing   -> whatever res holds
--   anything, once streamed -> ignored: a streamed response is what res:write sent
--
-- A status is final: 200..999 (a 1xx is an interim response zever does not send for a handler:
-- it would answer the next pipelined request). A header value is a string or a number, or a
-- list of them, which sends the header once per item; anything else raises, so the handler
-- answers 500 and the log says why (never "table: 0x...").
--
-- Headers are kept as a flat array {name, value, name, value, ...} in the order set, which is
-- the shape zever.http writes. res:header(name, value) replaces every earlier value of that
-- name (case-insensitively), except for Set-Cookie, which always appends (each cookie is its
-- own header line); res:add_header(name, value) appends for any name. The content type is kept
-- apart (res.ctype) because nearly every response sets it: finish() puts it into the array
-- once, when the response is done.

local json = require "zever.json"

local type, tostring, lower, pairs = type, tostring, string.lower, pairs
local find, format, byte = string.find, string.format, string.byte
local encode = json.encode
-- LuaJIT's table.new: the headers array is sized up front, so that finish() appending the
-- content type does not grow (rehash) it twice per request.
local tnew = require "table.new"

local M = {}

local Response = {}
Response.__index = Response

-- class: the metatable M.class made for the app that answers (so res.app is that app, for
-- res:render); nil for a bare response (whose res.app is the first app, if any). The app is not
-- a field of each response: a fifth key would double the hash part every request allocates.
function M.new(class)
  -- Every key of the template has a constant value (headers, body and ctype start as false and
  -- are then set or cleared): a key whose value is an expression gets only a nil slot in the
  -- template that LuaJIT's parser builds, and bytecode (build/bc, string.dump) keeps only the
  -- non-nil keys. Precompiled, { ..., headers = tnew(4, 0) } lost its headers slot, so every
  -- response inserted that key anew (a new-key store the trace cannot sink: ~880 instructions
  -- a /hello request more than the same code loaded from source, BENCHMARKS.md "Session 10");
  -- { ..., body = nil, ctype = nil } likewise lost two slots and rehashed (~540). With all four
  -- keys in the template the table is duplicated with its slots, and later stores find them.
  local res = { code = 200, headers = false, body = false, ctype = false }
  res.headers = tnew(8, 0) -- four headers (a middleware's two, the content type) without a resize
  res.body, res.ctype = nil, nil
  -- Not `return setmetatable(...)`: a tail call of a fast function with a side effect leaves no
  -- point for a snapshot, so a trace that started in this function (or a side trace that
  -- returns through it) cannot return to the caller's frame: LuaJIT aborts it ("leaving loop in
  -- root trace", "NYI: return to lower frame"; BENCHMARKS.md "Session 13").
  setmetatable(res, class or Response)
  return res
end

-- The metatable of one app's responses: Response's methods and res.app, made once per app.
-- The process's first app gets Response itself (Response.app = that app), so a worker serving
-- one app builds its responses exactly as without templates; a later app (specs make many) gets
-- a copy of the methods with its own app.
function M.class(app)
  if rawget(Response, "app") == nil then
    Response.app = app
    return Response
  end
  local methods = { app = app }
  for k, v in pairs(Response) do
    if k ~= "__index" and k ~= "app" then methods[k] = v end
  end
  return { __index = methods }
end

-- RFC 9110 token bytes (a header name's): letters, digits and !#$%&'*+-.^_`|~.
local TCHAR = {}
do
  local ok = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
  for i = 1, #ok do TCHAR[byte(ok, i)] = true end
end

-- Header names already checked, each mapped to its lower-case form: an app sets the same few
-- names on every request, and a table lookup keeps res:header inside the request's compiled
-- trace, where string.find with a pattern (NYI in LuaJIT's trace compiler) stitched it and cost
-- ~11,000 instructions a request (BENCHMARKS.md "Session 12"), and string.lower made a new
-- string per call. Bounded: names past NAMES_MAX (a proxy copying its clients' headers) are
-- checked each time instead of remembered.
local NAMES_MAX = 512
local names, nnames = {}, 0

-- The lower-case form of a valid header name, or nil when name is not one.
local function name_key(name)
  local l = names[name]
  if l then return l end
  if type(name) ~= "string" or name == "" then return nil end
  for i = 1, #name do
    if not TCHAR[byte(name, i)] then return nil end
  end
  l = lower(name)
  if nnames < NAMES_MAX then
    names[name] = l
    nnames = nnames + 1
  end
  return l
end

-- The lower-case form of a name already in a headers array (set through res:header, or put
-- there by other code: then it is lowered each time).
local function key_of(name)
  return names[name] or lower(name)
end

local function check_value(what, name, value, level)
  local tv = type(value)
  if tv == "number" then
    value = tostring(value)
  elseif tv ~= "string" then
    error(format("%s: the value of header %s must be a string or a number, got a %s", what, name,
      tv), level + 1)
  end
  -- Three plain searches: LuaJIT compiles a plain string.find, not a pattern's.
  if find(value, "\r", 1, true) or find(value, "\n", 1, true) or find(value, "\0", 1, true) then
    error(what .. ": header value contains CR, LF or NUL", level + 1)
  end
  return value
end

-- Checks name and value; returns the value as a string, or a list of strings for a list, and
-- the name's lower-case form.
local function check_header(what, name, value)
  local key = name_key(name)
  if not key then error(what .. ": invalid header name " .. tostring(name), 3) end
  if type(value) == "table" then
    local n, count = #value, 0
    for _ in pairs(value) do count = count + 1 end
    if n == 0 or count ~= n then
      error(format("%s: the value of header %s is a table; want a string, a number or a list " ..
        "of them", what, name), 3)
    end
    local list = {}
    for i = 1, n do list[i] = check_value(what, name, value[i], 3) end
    return list, key
  end
  return check_value(what, name, value, 3), key
end

-- The lowest final status: 1xx are interim responses (100 Continue is zever's to send).
local MIN_STATUS = 200

function Response:status(n)
  if type(n) ~= "number" or n < MIN_STATUS or n > 999 or n % 1 ~= 0 then
    error("res:status: want an integer final status within 200..999 (1xx are interim " ..
      "responses), got " .. tostring(n), 2)
  end
  self.code = n
  return self
end

local function append(h, name, value)
  if type(value) == "table" then
    for i = 1, #value do
      h[#h + 1] = name
      h[#h + 1] = value[i]
    end
  else
    h[#h + 1] = name
    h[#h + 1] = value
  end
end

function Response:header(name, value)
  local lname
  value, lname = check_header("res:header", name, value)
  if lname == "content-type" then
    if type(value) == "table" then error("res:header: Content-Type takes one value", 2) end
    self.ctype = value
    return self
  end
  local h = self.headers
  if lname ~= "set-cookie" then
    -- Replace: drop every earlier value of the name (compacting the array in place).
    local j = 1
    for i = 1, #h, 2 do
      if key_of(h[i]) ~= lname then
        h[j], h[j + 1] = h[i], h[i + 1]
        j = j + 2
      end
    end
    for i = #h, j, -1 do h[i] = nil end
  end
  append(h, name, value)
  return self
end

-- Adds a header line, keeping earlier values of the same name (repeated headers).
function Response:add_header(name, value)
  local lname
  value, lname = check_header("res:add_header", name, value)
  if lname == "content-type" then error("res:add_header: Content-Type takes one value", 2) end
  append(self.headers, name, value)
  return self
end

-- The value of a header already set, or nil.
function Response:get_header(name)
  local lname = key_of(name)
  if lname == "content-type" then return self.ctype end
  local h = self.headers
  for i = 1, #h, 2 do
    if key_of(h[i]) == lname then return h[i + 1] end
  end
end

function Response:send(body)
  if type(body) ~= "string" then
    if type(body) == "number" then body = tostring(body)
    else error("res:send: want a string body, got " .. type(body), 2) end
  end
  if not self.ctype then self.ctype = "text/plain; charset=utf-8" end
  self.body = body
  return self
end

function Response:json(value)
  self.body = encode(value)
  self.ctype = "application/json"
  return self
end

function Response:redirect(url, code)
  if type(url) ~= "string" then error("res:redirect: want a URL string", 2) end
  code = code or 302
  if type(code) ~= "number" or code < 300 or code > 399 or code % 1 ~= 0 then
    error("res:redirect: want a 3xx status, got " .. tostring(code), 2)
  end
  self.code = code
  self:header("Location", url)
  self.body = ""
  return self
end

-- Renders the app's template name with data (app.views: zever.template) as the HTML body;
-- opts: layout (a template name, or false for none), status. Raises when the template is
-- missing, does not compile or fails (the message names its file:line): a 500.
function Response:render(name, data, opts)
  local app = self.app
  if not app then error("res:render: this response belongs to no app", 2) end
  self.body = app.views:render(name, data, opts)
  self.ctype = "text/html; charset=utf-8"
  if opts and opts.status then self:status(opts.status) end
  return self
end

-- --- streaming (zever.stream, loaded on the first streamed response) ------------------------

local stream = setmetatable({}, { __index = function(t, k)
  local m = require "zever.stream"
  setmetatable(t, { __index = m })
  return m[k]
end })

-- res:write(chunk), res:flush(), res:finish(), res:sleep(seconds), res:closed(), res:sse(opts):
-- zever.stream says what they do (docs/streaming.md).
function Response:write(chunk) return stream.write(self, chunk) end
function Response:flush() return stream.flush(self) end
function Response:finish() return stream.finish(self) end
function Response:sleep(seconds) return stream.sleep(self, seconds) end
function Response:closed() return stream.closed(self) end
function Response:sse(opts) return stream.sse(self, opts) end

-- --- cookies (zever.cookie; signed and encrypted ones through zever.crypto) ----------------

-- zever.cookie loads with the first response that sets a cookie.
local cookie = setmetatable({}, { __index = function(t, k)
  local m = require "zever.cookie"
  setmetatable(t, { __index = m })
  return m[k]
end })

-- Options cookie.build leaves to us.
local COOKIE_EXTRA = { signed = true, encrypted = true, crypto = true }

-- Adds one Set-Cookie header (several cookies: several headers). opts: path, domain, max_age,
-- expires, secure, http_only, same_site, partitioned (zever.cookie), and signed = true or
-- encrypted = true (with the app's keyring, or opts.crypto). An invalid name, value or
-- attribute raises: nothing reaches the header that could end it or add another.
function Response:cookie(name, value, opts)
  if opts ~= nil and type(opts) ~= "table" then error("res:cookie: opts must be a table", 2) end
  if opts and (opts.signed or opts.encrypted) then
    if type(name) ~= "string" or not cookie.is_token(name) then
      error("res:cookie: invalid cookie name " .. tostring(name), 2)
    end
    if type(value) == "number" then value = tostring(value) end
    if type(value) ~= "string" then error("res:cookie: value must be a string", 2) end
    local c = opts.crypto or require("zever.crypto").default()
    if opts.encrypted then value = c:encrypt_cookie(name, value)
    else value = c:sign_cookie(name, value) end
  end
  append(self.headers, "Set-Cookie", cookie.build(name, value, opts, 2, COOKIE_EXTRA))
  return self
end

-- Tells the client to drop a cookie: an empty value, Max-Age=0 and an Expires in the past. Give
-- the path and domain it was set with (a cookie is named by name, path and domain).
function Response:clear_cookie(name, opts)
  if opts ~= nil and type(opts) ~= "table" then error("res:clear_cookie: opts must be a table", 2) end
  local o = { max_age = 0, expires = 0 }
  if opts then
    for k, v in pairs(opts) do
      if k ~= "max_age" and k ~= "expires" then o[k] = v end
    end
  end
  append(self.headers, "Set-Cookie", cookie.build(name, "", o, 2, COOKIE_EXTRA))
  return self
end

-- Applies what a handler returned onto res; returns res.
function M.apply(res, a, b, c)
  local ta = type(a)
  if a == nil or a == res then return res end
  -- A streamed response is what the handler wrote (res:finish() returns true, sse:close() too).
  if res.streamed then return res end
  if ta == "string" then
    return res:send(a)
  elseif ta == "number" then
    if a < MIN_STATUS or a > 999 or a % 1 ~= 0 then
      error("a handler returned status " .. tostring(a) .. "; want a final status within " ..
        "200..999 (1xx are interim responses)", 0)
    end
    res.code = a
    if c ~= nil then
      if type(c) ~= "table" then error("a handler's third result must be a table of headers", 0) end
      for k, v in pairs(c) do res:header(k, v) end
    end
    if type(b) == "table" then return res:json(b) end
    if b ~= nil then return res:send(b) end
    res.body = res.body or ""
    return res
  elseif ta == "table" then
    return res:json(a)
  end
  error("a handler returned a " .. ta .. "; want a string, a table, a status or nothing", 0)
end

-- Completes res for sending: a body (possibly empty) and the content type among the headers.
-- Returns res.
function M.finish(res)
  if res.streamed then return res end -- its head is out (zever.stream)
  if res.body == nil then res.body = "" end
  local ct = res.ctype
  if ct then
    -- The length is taken only when a header was set (most responses set none): one length
    -- operator less on /hello's path, and none at all with zever.server's respond (below).
    local h = res.headers
    local n = h[1] == nil and 0 or #h
    h[n + 1], h[n + 2] = "Content-Type", ct
    res.ctype = nil
  end
  return res
end

M.Response = Response
return M
