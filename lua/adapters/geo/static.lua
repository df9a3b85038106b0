-- adapters.geo.static: places and IPv4 networks from a JSON file (geo.file), held in memory.
--
--   { "places":   [ { "name": "Paris", "lat": 48.8566, "lon": 2.3522, "country": "FR" }, ... ],
--     "networks": [ { "cidr": "203.0.113.0/24", "country": "FR", "city": "Paris",
--                     "lat": 48.85, "lon": 2.35 }, ... ] }
--
--   impl.places                 the places (lat/lon checked), in file order
--   impl:place(name)            -> place | nil       case-insensitive
--   impl:locate(ip)             -> network | nil     the longest prefix that holds the IPv4 ip
--   static.open(section)        -> impl | nil, err   (the adapter contract)
--
-- No file: no places and no networks (distance still works). A file that does not parse, a
-- latitude outside -90..90 or a longitude outside -180..180, or a bad CIDR is "invalid" with
-- the entry named, when the app starts.

local errors = require "zever.errors"
local file = require "zever.file"
local json = require "zever.json"

local type, ipairs, tonumber, tostring, setmetatable, lower, match, format, floor, sort =
  type, ipairs, tonumber, tostring, setmetatable, string.lower, string.match, string.format,
  math.floor, table.sort

local M = {}

local Static = {}
Static.__index = Static

local function invalid(msg) return nil, errors.new("geo", "invalid", "geo: " .. msg) end

-- An IPv4 address as a number, or nil.
local function ipv4(s)
  if type(s) ~= "string" then return nil end
  local a, b, c, d = match(s, "^(%d+)%.(%d+)%.(%d+)%.(%d+)$")
  if not a then return nil end
  a, b, c, d = tonumber(a), tonumber(b), tonumber(c), tonumber(d)
  if a > 255 or b > 255 or c > 255 or d > 255 then return nil end
  return ((a * 256 + b) * 256 + c) * 256 + d
end
M.ipv4 = ipv4

local function coord(v, lo, hi) return type(v) == "number" and v >= lo and v <= hi end

function M.new(opts)
  local self = setmetatable({ places = {}, by_name = {}, networks = {} }, Static)
  local path = opts and opts.file
  if path == nil or path == "" then return self end
  local src = file.read(path)
  if not src then return invalid("cannot read " .. path) end
  local data, err = json.decode(src)
  if type(data) ~= "table" then return invalid(path .. ": " .. tostring(err or "not a JSON object")) end
  for i, p in ipairs(data.places or {}) do
    if type(p) ~= "table" or type(p.name) ~= "string" or not coord(p.lat, -90, 90)
      or not coord(p.lon, -180, 180) then
      return invalid(format("%s: places[%d] needs a name, lat (-90..90) and lon (-180..180)", path, i))
    end
    self.places[#self.places + 1] = p
    self.by_name[lower(p.name)] = self.by_name[lower(p.name)] or p
  end
  for i, n in ipairs(data.networks or {}) do
    local ip, bits = match(type(n) == "table" and n.cidr or "", "^([%d.]+)/(%d+)$")
    local base, len = ipv4(ip), tonumber(bits)
    if not base or not len or len > 32 then
      return invalid(format("%s: networks[%d]: a bad cidr", path, i))
    end
    local size = 2 ^ (32 - len)
    n.first = floor(base / size) * size
    n.last = n.first + size - 1
    n.bits = len
    self.networks[#self.networks + 1] = n
  end
  sort(self.networks, function(a, b) return a.bits > b.bits end)
  return self
end

function Static:place(name)
  return self.by_name[lower(name)]
end

function Static:locate(ip)
  local n = ipv4(ip)
  if not n then return nil end
  for _, net in ipairs(self.networks) do
    if n >= net.first and n <= net.last then return net end
  end
  return nil
end

function M.open(section)
  return M.new{ file = section.file }
end

return M
