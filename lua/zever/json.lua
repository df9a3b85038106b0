-- zever.json: JSON for the framework, over lua-cjson.
--
--   json.encode(value)  -> string           raises on values JSON cannot hold (functions, cycles)
--   json.decode(s)      -> value | nil, err never raises on bad input
--   json.null           the JSON null sentinel
--
-- Debian's lua-cjson 2.1.0 always escapes "/" as "\/"; that is valid JSON but not what people
-- expect in URLs and paths, so encode undoes it. It is safe: cjson never emits a bare "/", so
-- every "\/" in its output is exactly one escaped slash. A private cjson instance keeps these
-- choices from leaking into the application's own require "cjson".

local cjson = require("cjson").new()
local safe = require("cjson.safe").new()

local find, gsub = string.find, string.gsub
local raw_encode, raw_decode = cjson.encode, safe.decode

local M = { null = cjson.null }

function M.encode(value)
  local s = raw_encode(value)
  if find(s, "\\/", 1, true) then s = gsub(s, "\\/", "/") end
  return s
end

function M.decode(s)
  if type(s) ~= "string" then return nil, "want a JSON string, got " .. type(s) end
  return raw_decode(s)
end

return M
