-- zever.response: the response object handlers write to, and the rules for what a handler
-- returns.
--
--   res:status(n)            res:header(name, value)       res:send(body)
--   res:json(value)          res:redirect(url[, code])     (each returns res: chainable)
--
-- A handler may instead return a value; M.apply turns it into the response:
--   a string                 -> 200 text/plain (or res's status, if set)
--   a table                  -> JSON
--   status, body[, headers]  -> that status; a table body is JSON; headers a name -> value table
--   res itself, or nothing   -> whatever res holds
--
-- Headers are kept as a flat array {name, value, name, value, ...} in the order set, which is
-- the shape zever.http writes; setting a name again replaces it (case-insensitively). The
-- content type is kept apart (res.ctype) because nearly every response sets it: finish() puts
-- it into the array once, when the response is done.

local json = require "zever.json"

local type, tostring, lower, pairs = type, tostring, string.lower, pairs
local encode = json.encode
-- LuaJIT's table.new: the headers array is sized up front, so that finish() appending the
-- content type does not grow (rehash) it twice per request.
local tnew = require "table.new"

local M = {}

local Response = {}
Response.__index = Response

function M.new()
  return setmetatable({ code = 200, headers = tnew(4, 0), body = nil, ctype = nil }, Response)
end

local function check_header(name, value)
  if type(name) ~= "string" or name == "" or name:find("[^%w!#$%%&'*+.^_`|~-]") then
    error("res:header: invalid header name " .. tostring(name), 3)
  end
  value = tostring(value)
  if value:find("[\r\n%z]") then error("res:header: header value contains CR, LF or NUL", 3) end
  return value
end

function Response:status(n)
  if type(n) ~= "number" or n < 100 or n > 999 or n % 1 ~= 0 then
    error("res:status: want an integer status between 100 and 999, got " .. tostring(n), 2)
  end
  self.code = n
  return self
end

function Response:header(name, value)
  value = check_header(name, value)
  local lname = lower(name)
  if lname == "content-type" then
    self.ctype = value
    return self
  end
  local h = self.headers
  for i = 1, #h, 2 do
    if lower(h[i]) == lname then
      h[i + 1] = value
      return self
    end
  end
  h[#h + 1] = name
  h[#h + 1] = value
  return self
end

-- The value of a header already set, or nil.
function Response:get_header(name)
  local lname = lower(name)
  if lname == "content-type" then return self.ctype end
  local h = self.headers
  for i = 1, #h, 2 do
    if lower(h[i]) == lname then return h[i + 1] end
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
  if code < 300 or code > 399 then error("res:redirect: want a 3xx status, got " .. tostring(code), 2) end
  self.code = code
  self:header("Location", url)
  self.body = ""
  return self
end

-- Applies what a handler returned onto res; returns res.
function M.apply(res, a, b, c)
  local ta = type(a)
  if a == nil or a == res then return res end
  if ta == "string" then
    return res:send(a)
  elseif ta == "number" then
    res:status(a)
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
  if res.body == nil then res.body = "" end
  local ct = res.ctype
  if ct then
    local h = res.headers
    h[#h + 1] = "Content-Type"
    h[#h + 1] = ct
    res.ctype = nil
  end
  return res
end

M.Response = Response
return M
