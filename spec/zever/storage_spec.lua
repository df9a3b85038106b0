-- zever.storage and zever.media: the conformance suites over the local adapter (real files in a
-- temporary folder), image-header golden rows, a ranged download through a real server (curl),
-- and app.storage / app.media from the config.

local storage = require "zever.storage"
local media = require "zever.media"
local zever = require "zever"
local testing = require "zever.testing"
local files = require "spec.support.files"

local SECRET = ("k"):rep(32)

-- Golden rows: { name, bytes, format, width, height }, headers written by hand from each
-- format's specification (PNG IHDR; GIF logical screen; JPEG SOF0/SOF2; WebP VP8, VP8L, VP8X).
local function u32be(n) return string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256,
  math.floor(n / 256) % 256, n % 256) end
local IMAGES = {
  { "a.png", "\137PNG\r\n\26\n\0\0\0\13IHDR" .. u32be(640) .. u32be(480) .. "\8\6\0\0\0", "png", 640, 480 },
  { "b.gif", "GIF89a\32\3\88\2\247\0\0", "gif", 800, 600 },
  { "c.gif", "GIF87a\1\0\1\0\0\0\0", "gif", 1, 1 },
  { "d.jpg", "\255\216\255\224\0\16JFIF\0\1\1\0\0\1\0\1\0\0\255\219\0\4\0\0" ..
    "\255\192\0\17\8\4\56\7\128\3\1\34\0\2\17\1\3\17\1", "jpeg", 1920, 1080 },
  { "e.jpg", "\255\216\255\255\194\0\17\8\0\200\1\44\3\1\34\0", "jpeg", 300, 200 },
  { "f.webp", "RIFF\0\0\0\0WEBPVP8 \0\0\0\0\0\0\0\157\1\42\144\1\44\1" .. ("\0"):rep(8), "webp", 400, 300 },
  -- VP8L: width-1 = 99, height-1 = 49 packed in 14-bit fields: 99 | 49 << 14 = 802915.
  { "g.webp", "RIFF\0\0\0\0WEBPVP8L\0\0\0\0\47" .. string.char(802915 % 256,
    math.floor(802915 / 256) % 256, math.floor(802915 / 65536) % 256, 0) .. ("\0"):rep(8), "webp", 100, 50 },
  { "h.webp", "RIFF\0\0\0\0WEBPVP8X\10\0\0\0\16\0\0\0" .. "\255\15\0" .. "\15\39\0" .. ("\0"):rep(4),
    "webp", 4096, 10000 },
}

describe("zever.storage", function()
  local dirs = {}
  teardown(function() for _, d in ipairs(dirs) do files.rm_rf(d) end end)
  local function tmp(contents)
    local d = files.tmpdir(contents or {}, "storage")
    dirs[#dirs + 1] = d
    return d
  end

  require("spec.conformance.storage")("local", function(opts)
    opts.root = tmp() .. "/objects"
    opts.secret = opts.secret or SECRET
    return storage.new(opts)
  end)

  require("spec.conformance.storage")("local (keyring-signed)", function(opts)
    opts.root = tmp() .. "/objects"
    return storage.new(opts)
  end)

  require("spec.conformance.media")("storage", function()
    local store = storage.new{ root = tmp() .. "/objects", secret = SECRET }
    return media.new{ store = store }, store
  end, IMAGES)

  describe("image headers", function()
    for _, row in ipairs(IMAGES) do
      it("reads " .. row[1] .. " as " .. row[3] .. " " .. row[4] .. "x" .. row[5], function()
        assert.are.same({ row[3], row[4], row[5] }, { media.image_size(row[2]) })
      end)
    end

    it("asks for more bytes on every truncated prefix, and never raises", function()
      for _, row in ipairs(IMAGES) do
        for n = 0, #row[2] - 1 do
          local ok, f, w = pcall(media.image_size, row[2]:sub(1, n))
          assert.is_true(ok)
          if f ~= row[3] then assert.is_true(w == "short" or w == "invalid", row[1] .. " " .. n) end
        end
      end
      -- Random bytes behind each signature: an answer, never an error.
      math.randomseed(7)
      for i = 1, 2000 do
        local junk = {}
        for j = 1, math.random(0, 64) do junk[j] = string.char(math.random(0, 255)) end
        local head = IMAGES[i % #IMAGES + 1][2]:sub(1, 12)
        assert.is_true(pcall(media.image_size, head .. table.concat(junk)))
      end
    end)

    it("ranges: parses Range headers like RFC 9110", function()
      for _, row in ipairs{
        { "bytes=0-0", 10, 0, 0 }, { "bytes=5-", 10, 5, 9 }, { "bytes=-4", 10, 6, 9 },
        { "bytes=-40", 10, 0, 9 }, { "bytes=8-20", 10, 8, 9 }, { "bytes=10-", 10, false },
        { "bytes=-0", 10, false }, { "bytes=5-2", 10, nil }, { "items=1-2", 10, nil },
        { "bytes=1-2,4-5", 10, nil },
      } do
        local a, b = storage.range_of(row[1], row[2])
        assert.are.same({ row[3], row[4] }, { a, b }, row[1])
      end
    end)
  end)

  describe("served", function()
    it("answers a ranged download to curl over a real socket", function()
      local store = storage.new{ root = tmp() .. "/objects", secret = SECRET }
      assert(store:put("movie.bin", ("0123456789"):rep(1000)))
      local app = zever.app()
      store:mount(app)
      local srv = testing.serve(app)
      local url = store:presign("GET", "movie.bin")
      local res = srv:get(url, { headers = { Range = "bytes=9995-" } })
      assert.are.equal(206, res.status)
      assert.are.equal("56789", res.body)
      assert.are.equal("bytes 9995-9999/10000", res.headers["content-range"])
      srv:close()
      store:close()
    end)
  end)

  describe("app.storage and app.media", function()
    it("open the local adapter under the app folder and sign with storage.secret", function()
      local d = tmp()
      local config, container = require "zever.config", require "zever.container"
      local cfg = assert(config.load{ dir = d, env = { STORAGE_SECRET = SECRET, STORAGE_ROOT = "files" } })
      local c = container.new(cfg)
      local store = assert(c:get("storage"))
      assert(store:put("x/y.gif", IMAGES[2][2]))
      assert.is_truthy(io.open(d .. "/files/x/y.gif", "rb")):close()
      local m = assert(c:get("media"))
      local w, h = m:dimensions("x/y.gif")
      assert.are.same({ 800, 600 }, { w, h })
      local url = m:url("x/y.gif")
      local q = {}
      for k, v in url:gmatch("([%w]+)=([^&]*)") do q[k] = v end
      assert.is_true(store:verify("GET", "x/y.gif", q))
      assert.is_true(c:close())
    end)
  end)
end)
