-- zever.geo: the front-end of the geo battery (app.geo): great-circle distances, places by name,
-- the nearest places to a point, and IPv4 networks to locations, from a static JSON file.
--
--   geo.distance(lat1, lon1, lat2, lon2)  -> metres (haversine on a sphere of radius 6371008.8 m,
--                                            the IUGG mean radius: within 0.5 % of the ellipsoid)
--   local g = geo.new{ file = "data/geo.json" }        -- the static adapter
--   g:place(name)                -> { name, lat, lon, ... } | nil
--   g:nearest(lat, lon[, n = 1]) -> up to n { place, distance } sorted by distance
--   g:within(lat, lon, metres)   -> { place, distance } closer than metres, sorted
--   g:locate(ip)                 -> { country, city, lat, lon, cidr } | nil (IPv4, longest prefix)
--   g:distance(a, b)             -> metres between two places (names or { lat, lon } tables)
--                                   | nil, err ("not_found")
--
-- Coordinates are degrees; a latitude outside -90..90 or a longitude outside -180..180 raises.
-- Adapters: static (default). geo.wrap(impl): impl.places, impl:place(name), impl:locate(ip).

local battery = require "zever.battery"

local type, error, ipairs, tostring, sin, cos, asin, sqrt, min, rad, sort =
  type, error, ipairs, tostring, math.sin, math.cos, math.asin, math.sqrt, math.min, math.rad,
  table.sort

local M = {}

M.RADIUS = 6371008.8

local Geo = battery.define("geo", "geo is closed")
M.error = Geo.error

local function check(lat, lon, fname)
  if type(lat) ~= "number" or lat ~= lat or lat < -90 or lat > 90 then
    error(fname .. ": latitude must be a number in -90..90", 3)
  end
  if type(lon) ~= "number" or lon ~= lon or lon < -180 or lon > 180 then
    error(fname .. ": longitude must be a number in -180..180", 3)
  end
end

local function haversine(lat1, lon1, lat2, lon2)
  local p1, p2 = rad(lat1), rad(lat2)
  local dp, dl = p2 - p1, rad(lon2 - lon1)
  local a = sin(dp / 2) ^ 2 + cos(p1) * cos(p2) * sin(dl / 2) ^ 2
  return 2 * M.RADIUS * asin(min(1, sqrt(a)))
end

function M.distance(lat1, lon1, lat2, lon2)
  check(lat1, lon1, "geo.distance")
  check(lat2, lon2, "geo.distance")
  return haversine(lat1, lon1, lat2, lon2)
end

function Geo:place(name)
  if type(name) ~= "string" then error("geo:place: name must be a string", 2) end
  if self.closed then return nil, Geo.CLOSED end
  return self.impl:place(name)
end

local function ranked(self, lat, lon, keep)
  local out = {}
  for _, p in ipairs(self.impl.places) do
    local d = haversine(lat, lon, p.lat, p.lon)
    if keep(d) then out[#out + 1] = { place = p, distance = d } end
  end
  sort(out, function(a, b) return a.distance < b.distance end)
  return out
end

function Geo:nearest(lat, lon, n)
  check(lat, lon, "geo:nearest")
  n = battery.count(n, 1, "geo:nearest", "n", 1)
  if self.closed then return nil, Geo.CLOSED end
  local all = ranked(self, lat, lon, function() return true end)
  for i = #all, n + 1, -1 do all[i] = nil end
  return all
end

function Geo:within(lat, lon, metres)
  check(lat, lon, "geo:within")
  if type(metres) ~= "number" or metres < 0 then error("geo:within: metres must be a number >= 0", 2) end
  if self.closed then return nil, Geo.CLOSED end
  return ranked(self, lat, lon, function(d) return d <= metres end)
end

function Geo:locate(ip)
  if type(ip) ~= "string" then error("geo:locate: ip must be a string", 2) end
  if self.closed then return nil, Geo.CLOSED end
  return self.impl:locate(ip)
end

local function point(self, v)
  if type(v) == "string" then
    local p = self.impl:place(v)
    if not p then return nil, Geo.error("not_found", "no place is named " .. v) end
    return p
  end
  if type(v) ~= "table" then error("geo:distance: expects place names or { lat, lon } tables", 3) end
  check(v.lat or v[1], v.lon or v[2], "geo:distance")
  return { lat = v.lat or v[1], lon = v.lon or v[2] }
end

function Geo:distance(a, b)
  if self.closed then return nil, Geo.CLOSED end
  local pa, ea = point(self, a)
  if not pa then return nil, ea end
  local pb, eb = point(self, b)
  if not pb then return nil, eb end
  return haversine(pa.lat, pa.lon, pb.lat, pb.lon)
end

function M.wrap(impl)
  if type(impl) ~= "table" or type(impl.places) ~= "table" then
    error("geo.wrap: expects an adapter object with places", 2)
  end
  return battery.object(Geo, impl, {})
end

function M.new(opts)
  if opts ~= nil and type(opts) ~= "table" then error("geo.new: opts must be a table", 2) end
  local impl, err = require("adapters.geo.static").new(opts or {})
  if not impl then error("geo.new: " .. tostring(err), 2) end
  return M.wrap(impl)
end

return M
