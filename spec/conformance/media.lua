-- The media battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.media")("storage", function() return media, store end)
--
-- new() returns a fresh zever.media (front-end) and the zever.storage it reads from.

local media_m = require "zever.media"

return function(name, new, images)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  describe("media conformance: " .. name, function()
    it("reads the dimensions of each image format from its header", function()
      local m, store = new()
      for _, row in ipairs(images) do
        assert(store:put("img/" .. row[1], row[2]))
        local w, h, format = m:dimensions("img/" .. row[1])
        assert.are.same({ row[3], row[4], row[5] }, { format, w, h }, row[1])
        local info = assert(m:info("img/" .. row[1]))
        assert.are.equal(#row[2], info.size)
        assert.are.equal(row[4], info.width)
      end
      m:close()
    end)

    it("finds a JPEG frame header behind a large APP segment", function()
      local m, store = new()
      local app1 = "\255\225" .. string.char(0xFF, 0xF0) .. ("e"):rep(0xFFF0 - 2)
      local jpg = "\255\216" .. app1 .. app1 .. "\255\192\0\17\8\1\44\1\144\3" .. ("\0"):rep(200)
      assert(store:put("big.jpg", jpg))
      local w, h = m:dimensions("big.jpg")
      assert.are.same({ 400, 300 }, { w, h })
      assert.are.same({ "jpeg", 400, 300 }, { media_m.image_size(jpg) })
      m:close()
    end)

    it("says unsupported, not_found and closed", function()
      local m, store = new()
      assert(store:put("a.txt", "hello world, not an image"))
      assert.are.equal("unsupported", select(2, m:dimensions("a.txt")).code)
      assert.are.equal("not_found", select(2, m:dimensions("missing.png")).code)
      local info = assert(m:info("a.txt"))
      assert.is_nil(info.width)
      assert.is_true(m:close())
      assert.are.equal("closed", select(2, m:dimensions("a.txt")).code)
    end)
  end)
end
