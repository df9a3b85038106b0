-- zever.middleware.request_id: one id per request, taken from the client or made here, sent
-- back, and put into every log line of the request.
--
--   app:use(request_id())                        -- X-Request-Id in and out
--   app:use(request_id{ header = "X-Correlation-Id", max_length = 64,
--                       generate = function(req) return my_id() end })
--
-- An incoming id is used when it is 1..max_length (default 128) bytes of letters, digits and
-- "-_.:"; anything else (too long, spaces, quotes, control bytes: a log-injection attempt) is
-- replaced by a new one: 16 random bytes of this process (hex) and a counter, unique across
-- the workers of a machine. The id becomes req.id, goes out in the same header, and
-- zever.log adds request_id = id to every line logged while the request runs (log.set_context,
-- per coroutine), the error line of a failed handler included; the text access log line ends
-- with id=<id>. It keeps no state per request beyond the coroutine's log context.

local log = require "zever.log"

local type, error, tostring, format, find, rawset = type, error, tostring, string.format,
  string.find, rawset

-- A prefix unique to this Lua state: random bytes from the kernel, so two workers (or two
-- processes started in the same second) never share it.
local prefix
do
  local f = io.open("/dev/urandom", "rb")
  local bytes = f and f:read(8)
  if f then f:close() end
  if not bytes or #bytes ~= 8 then error("request_id: cannot read /dev/urandom") end
  prefix = bytes:gsub(".", function(c) return format("%02x", c:byte()) end)
end
local counter = 0

local function new_id()
  counter = counter + 1
  return prefix .. "-" .. counter
end

return function(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("request_id: expects an options table", 2) end
  local header = opts.header or "X-Request-Id"
  if type(header) ~= "string" or find(header, "[^%w%-]") then
    error("request_id: header must be a header name", 2)
  end
  local max_length = opts.max_length or 128
  if type(max_length) ~= "number" or max_length < 1 or max_length % 1 ~= 0 then
    error("request_id: max_length must be a whole number >= 1", 2)
  end
  local generate = opts.generate
  if generate ~= nil and type(generate) ~= "function" then
    error("request_id: generate must be a function(req) -> string", 2)
  end

  return function(req, res, nxt)
    local id = req:header(header)
    if not id or #id == 0 or #id > max_length or find(id, "[^%w%-_.:]") then
      id = generate and tostring(generate(req)) or new_id()
    end
    rawset(req, "id", id)
    rawset(req, "_request_id", id)
    -- Merged with the context an outer middleware set (app.tenant's), which comes back after.
    local prev = log.context()
    local ctx = { request_id = id }
    if prev then
      for k, v in pairs(prev) do if ctx[k] == nil then ctx[k] = v end end
    end
    log.set_context(ctx)
    nxt()
    res:header(header, id)
    log.set_context(prev)
    return res
  end
end
