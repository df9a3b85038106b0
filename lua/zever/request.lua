-- zever.request: the request object handlers see.
--
--   req.method, req.path, req.params, req.query, req.id, req.body
--   req:header(name)   case-insensitive, nil when absent
--   req:headers()      a table of lower-case names
--   req:json()         the body decoded, or nil, err (code "invalid") when it is not JSON
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

local char, tonumber, setmetatable, rawget, rawset = string.char, tonumber, setmetatable, rawget, rawset
local format, gsub, find, sub = string.format, string.gsub, string.find, string.sub

local M = {}

local function hex_byte(h)
  return char(tonumber(h, 16))
end

-- Percent-decodes s; with plus = true, "+" is a space too (form and query encoding).
function M.unescape(s, plus)
  if plus then s = gsub(s, "+", " ") end
  if find(s, "%", 1, true) then s = gsub(s, "%%(%x%x)", hex_byte) end
  return s
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
  return out
end

local counter = 0
local prefix = format("%08x", (os.time() * 65536 + math.floor(os.clock() * 1e6)) % 0x100000000)

-- A request id unique within this process: the incoming X-Request-Id when it is sane, or
-- "<start stamp>-<counter>".
local function new_id(req)
  local given = req.source:header("x-request-id")
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
  return self.source:header(name)
end

function Request:headers()
  return self.source:headers()
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
-- The table is made with four slots: most requests have no query string, and a fifth key
-- would double the table's hash part (every request pays for it in the collector).
function M.new(method, path, query_string, params, source)
  local req = setmetatable({ method = method, path = path, params = params, source = source },
    Request)
  if query_string then req.query_string = query_string end
  return req
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
