-- zever.media: media on the storage battery (app.media): image dimensions read from the first
-- bytes of an object (never the whole file), and download URLs that take byte ranges.
--
--   local m = media.new{ store = app.storage }
--   m:info(key)            -> { key, size, content_type, format, width, height } | nil, err
--                             (format/width/height only for PNG, JPEG, GIF and WebP)
--   m:dimensions(key)      -> width, height | nil, err ("unsupported", "not_found", "invalid")
--   m:url(key[, opts])     -> a presigned GET URL (storage:presign) that serves Range requests
--   media.image_size(bytes) -> format, width, height | nil, "short" (needs more bytes)
--                             | nil, "unsupported" | nil, "invalid"
--
-- image_size parses headers only: PNG's IHDR, GIF's logical screen, WebP's VP8 / VP8L / VP8X
-- chunk, and JPEG's markers up to the first start-of-frame (SOF0-3, 5-7, 9-11, 13-15), skipping
-- APPn segments (an EXIF thumbnail can push the frame header tens of KiB in). dimensions reads
-- 4 KiB, then doubles the window while the parser says "short", up to 4 MiB: a JPEG whose frame
-- header is further than that is "invalid". The specs hold golden rows for each format.

local battery = require "zever.battery"

local type, error, ipairs, byte, sub, floor = type, error, ipairs, string.byte, string.sub,
  math.floor

local M = {}

local Media = battery.define("media", "media is closed")
M.error = Media.error

local UNSUPPORTED = Media.error("unsupported", "not a PNG, JPEG, GIF or WebP image")
local INVALID = Media.error("invalid", "the image header is damaged")
local NOT_FOUND = Media.error("not_found", "no object has this key")

local MAX_WINDOW = 4 * 1024 * 1024

local function be16(s, i) local a, b = byte(s, i, i + 1) return a * 256 + b end
local function le16(s, i) local a, b = byte(s, i, i + 1) return b * 256 + a end
local function be32(s, i)
  local a, b, c, d = byte(s, i, i + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end
local function le24(s, i) local a, b, c = byte(s, i, i + 2) return (c * 256 + b) * 256 + a end

local SOF = {}
for _, m in ipairs{ 0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF } do
  SOF[m] = true
end

local function jpeg(s)
  local n, pos = #s, 3
  while true do
    if pos + 1 > n then return nil, "short" end
    if byte(s, pos) ~= 0xFF then return nil, "invalid" end
    local m = byte(s, pos + 1)
    while m == 0xFF do          -- fill bytes
      pos = pos + 1
      if pos + 1 > n then return nil, "short" end
      m = byte(s, pos + 1)
    end
    if m == 0xD8 or m == 0x01 or (m >= 0xD0 and m <= 0xD7) then
      pos = pos + 2
    elseif m == 0xD9 or m == 0xDA then
      return nil, "invalid"     -- end of image or scan data before any frame header
    else
      if pos + 3 > n then return nil, "short" end
      local len = be16(s, pos + 2)
      if len < 2 then return nil, "invalid" end
      if SOF[m] then
        if pos + 8 > n then return nil, "short" end
        local h, w = be16(s, pos + 5), be16(s, pos + 7)
        if w == 0 or h == 0 then return nil, "invalid" end
        return "jpeg", w, h
      end
      pos = pos + 2 + len
    end
  end
end

local function webp(s)
  if #s < 30 then return nil, "short" end
  local chunk = sub(s, 13, 16)
  if chunk == "VP8 " then
    if byte(s, 24) ~= 0x9D or byte(s, 25) ~= 0x01 or byte(s, 26) ~= 0x2A then return nil, "invalid" end
    return "webp", le16(s, 27) % 16384, le16(s, 29) % 16384
  elseif chunk == "VP8L" then
    if byte(s, 21) ~= 0x2F then return nil, "invalid" end
    local b0, b1, b2, b3 = byte(s, 22, 25)
    local bits = ((b3 * 256 + b2) * 256 + b1) * 256 + b0
    return "webp", bits % 16384 + 1, floor(bits / 16384) % 16384 + 1
  elseif chunk == "VP8X" then
    return "webp", le24(s, 25) + 1, le24(s, 28) + 1
  end
  return nil, "invalid"
end

function M.image_size(s)
  if type(s) ~= "string" then error("media.image_size: expects a string", 2) end
  local n = #s
  if n >= 8 and sub(s, 1, 8) == "\137PNG\r\n\26\n" then
    if n < 24 then return nil, "short" end
    if sub(s, 13, 16) ~= "IHDR" then return nil, "invalid" end
    local w, h = be32(s, 17), be32(s, 21)
    if w == 0 or h == 0 then return nil, "invalid" end
    return "png", w, h
  end
  if n >= 6 and (sub(s, 1, 6) == "GIF87a" or sub(s, 1, 6) == "GIF89a") then
    if n < 10 then return nil, "short" end
    return "gif", le16(s, 7), le16(s, 9)
  end
  if n >= 3 and byte(s, 1) == 0xFF and byte(s, 2) == 0xD8 and byte(s, 3) == 0xFF then
    return jpeg(s)
  end
  if n >= 12 and sub(s, 1, 4) == "RIFF" and sub(s, 9, 12) == "WEBP" then return webp(s) end
  if n < 12 then
    -- Too short to tell: a prefix of one of the signatures may still become an image.
    for _, sig in ipairs{ "\137PNG\r\n\26\n", "GIF8", "\255\216\255", "RIFF" } do
      if sub(sig, 1, n) == sub(s, 1, #sig) then return nil, "short" end
    end
  end
  return nil, "unsupported"
end

function Media:dimensions(key)
  if type(key) ~= "string" then error("media:dimensions: key must be a string", 2) end
  if self.closed then return nil, Media.CLOSED end
  local store = self.impl.store
  local st, err = store:stat(key)
  if not st then return nil, err end
  local window = 4096
  while true do
    local last = window < st.size and window - 1 or st.size - 1
    local bytes
    if st.size == 0 then bytes = "" else bytes = store:get(key, { 0, last }) end
    if bytes == nil then return nil, NOT_FOUND end
    local format, w, h = M.image_size(bytes)
    if format then return w, h, format end
    if w == "short" and last + 1 < st.size and window < MAX_WINDOW then
      window = window * 2
    else
      return nil, w == "unsupported" and UNSUPPORTED or INVALID
    end
  end
end

function Media:info(key)
  if type(key) ~= "string" then error("media:info: key must be a string", 2) end
  if self.closed then return nil, Media.CLOSED end
  local st, err = self.impl.store:stat(key)
  if not st then return nil, err end
  local w, h, format = self:dimensions(key)
  if w then st.width, st.height, st.format = w, h, format end
  return st
end

function Media:url(key, opts)
  if self.closed then return nil, Media.CLOSED end
  return self.impl.store:presign("GET", key, opts)
end

function M.wrap(impl)
  if type(impl) ~= "table" or type(impl.store) ~= "table" then
    error("media.wrap: expects an adapter object with a store", 2)
  end
  return battery.object(Media, impl, {})
end

function M.new(opts)
  if type(opts) ~= "table" or type(opts.store) ~= "table" then
    error("media.new: opts.store must be a zever.storage object", 2)
  end
  return M.wrap(require("adapters.media.storage").new(opts))
end

return M
