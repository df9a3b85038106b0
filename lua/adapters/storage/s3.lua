-- adapters.storage.s3: objects in an S3-compatible bucket (AWS S3, MinIO, ...), path-style
-- requests through zever's HTTP client, signed with AWS Signature Version 4
-- (adapters.storage.sigv4). Not one of the defaults, and not run against an S3 server here:
-- MinIO is not packaged for Debian. What is tested is that every request it makes is signed as
-- botocore signs it (spec/zever/storage_s3_spec.lua) and the request shapes (methods, paths,
-- headers) it sends, against a recording HTTP server.
--
--   local impl = s3.new{ endpoint = "https://s3.eu-west-1.amazonaws.com", bucket = "media",
--                        region = "eu-west-1", access_key = "...", secret_key = "...",
--                        clock = nil, timeout = 30, max_body = 4 GiB }
--   impl:put(key, data) -> size | nil, err      PUT /bucket/key (payload signed)
--   impl:get(key[, first, last]) -> bytes | nil  GET (Range: bytes=first-last)
--   impl:head(key, n) -> the first n bytes | nil GET with Range: bytes=0-(n-1)
--   impl:stat(key) -> { size, modified } | nil   HEAD (Content-Length, Last-Modified)
--   impl:delete(key) -> true | false (missing)   HEAD, then DELETE
--   impl:move(from, to) -> true | false          PUT with x-amz-copy-source, then DELETE
--   s3.open(section) -> impl | nil, err (the adapter contract)
--
-- Errors (the server unreachable, a status S3 does not give for the case) are nil, err with
-- code "unavailable"; messages name the bucket and key, never the keys of the account.

local sigv4 = require "adapters.storage.sigv4"
local errors = require "zever.errors"

local setmetatable, tostring, tonumber, type, error, floor = setmetatable, tostring, tonumber,
  type, error, math.floor

local M = {}

local S3 = {}
S3.__index = S3

local function unavailable(msg)
  return nil, errors.new("storage", "unavailable", "storage s3: " .. msg)
end

local MONTHS = { Jan = 1, Feb = 2, Mar = 3, Apr = 4, May = 5, Jun = 6, Jul = 7, Aug = 8, Sep = 9,
  Oct = 10, Nov = 11, Dec = 12 }

-- An HTTP date ("Wed, 21 Oct 2015 07:28:00 GMT") as Unix seconds, or nil.
local function http_time(s)
  local d, mon, y, h, mi, sec = tostring(s):match("%a+, (%d+) (%a+) (%d+) (%d+):(%d+):(%d+) GMT")
  if not d or not MONTHS[mon] then return nil end
  y, mon, d = tonumber(y), MONTHS[mon], tonumber(d)
  -- Days from the civil date (Howard Hinnant's algorithm), so no local time zone is involved.
  local yy = mon <= 2 and y - 1 or y
  local era = floor(yy / 400)
  local yoe = yy - era * 400
  local doy = floor((153 * (mon + (mon > 2 and -3 or 9)) + 2) / 5) + d - 1
  local doe = yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy
  local days = era * 146097 + doe - 719468
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(sec)
end
M.http_time = http_time

-- One signed request; returns the response or nil, err.
function S3:request(method, key, headers, body)
  local path = "/" .. self.bucket .. "/" .. key
  local h = sigv4.sign{ method = method, host = self.host, path = path, headers = headers,
    payload = body or "", time = floor(self.clock()), region = self.region,
    access_key = self.access_key, secret_key = self.secret_key }
  local res, err = self.http.request{ method = method, url = self.base .. sigv4.encode(path, true),
    headers = h, body = body, timeout = self.timeout, max_redirects = 0,
    max_body = self.max_body }
  if not res then return unavailable(method .. " " .. self.bucket .. "/" .. key .. ": " ..
    tostring(err and err.message or err)) end
  return res
end

local function failed(res, what)
  return unavailable(what .. " answered " .. tostring(res.status))
end

function S3:put(key, data)
  local res, err = self:request("PUT", key, nil, data)
  if not res then return nil, err end
  if res.status ~= 200 then return failed(res, "PUT " .. key) end
  return #data
end

function S3:get(key, first, last)
  local headers = first and { range = "bytes=" .. first .. "-" .. last } or nil
  local res, err = self:request("GET", key, headers)
  if not res then return nil, err end
  if res.status == 404 then return nil end
  if res.status == 416 then return "" end
  if res.status ~= 200 and res.status ~= 206 then return failed(res, "GET " .. key) end
  return res.body
end

function S3:head(key, n)
  return self:get(key, 0, n - 1)
end

function S3:stat(key)
  local res, err = self:request("HEAD", key)
  if not res then return nil, err end
  if res.status == 404 then return nil end
  if res.status ~= 200 then return failed(res, "HEAD " .. key) end
  return { size = tonumber(res:header("content-length")) or 0,
    modified = http_time(res:header("last-modified")) or 0 }
end

function S3:delete(key)
  local st, serr = self:stat(key)
  if not st then
    if serr then return nil, serr end
    return false
  end
  local res, err = self:request("DELETE", key)
  if not res then return nil, err end
  if res.status ~= 204 and res.status ~= 200 then return failed(res, "DELETE " .. key) end
  return true
end

function S3:move(from, to)
  local res, err = self:request("PUT", to,
    { ["x-amz-copy-source"] = "/" .. self.bucket .. "/" .. sigv4.encode(from, true) })
  if not res then return nil, err end
  if res.status == 404 then return false end
  if res.status ~= 200 then return failed(res, "copy " .. from .. " to " .. to) end
  local ok, derr = self:delete(from)
  if ok == nil then return nil, derr end
  return true
end

function S3.close()
  return true
end

local function need(opts, k)
  local v = opts[k]
  if type(v) ~= "string" or v == "" then error("storage s3: " .. k .. " is needed", 3) end
  return v
end

function M.new(opts)
  if type(opts) ~= "table" then error("storage s3: expects an options table", 2) end
  local endpoint = need(opts, "endpoint"):gsub("/+$", "")
  local host = endpoint:match("^https?://([^/]+)$")
  if not host then error("storage s3: endpoint must be http(s)://host[:port]", 2) end
  return setmetatable({ base = endpoint, host = host, bucket = need(opts, "bucket"),
    region = opts.region ~= "" and opts.region or "us-east-1",
    access_key = need(opts, "access_key"), secret_key = need(opts, "secret_key"),
    clock = opts.clock or os.time, timeout = opts.timeout or 30,
    -- An object is read whole (as the local adapter reads it): the client's 16 MiB default
    -- would refuse larger ones.
    max_body = opts.max_body or 4 * 1024 ^ 3,
    http = opts.http or require("zever.httpc") }, S3)
end

function M.open(section)
  local ok, impl = pcall(M.new, { endpoint = section.s3_endpoint, bucket = section.s3_bucket,
    region = section.s3_region, access_key = section.s3_access_key,
    secret_key = section.s3_secret_key })
  if not ok then return nil, errors.new("storage", "invalid", tostring(impl)) end
  return impl
end

return M
