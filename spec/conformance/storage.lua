-- The storage battery's conformance suite: every adapter runs it.
--
--   require("spec.conformance.storage")("local", function(opts) return store end)
--
-- new(opts) returns a fresh, empty zever.storage (front-end) over the adapter; opts carries the
-- front-end's options (clock, secret). The suite closes what it makes.

local zever = require "zever"
local testing = require "zever.testing"

return function(name, new)
  local env = getfenv(2)
  local describe, it, assert = env.describe, env.it, env.assert

  local PNG = "\137PNG\r\n\26\n\0\0\0\13IHDR\0\0\0\3\0\0\0\2\8\2\0\0\0"

  describe("storage conformance: " .. name, function()
    it("puts, gets, stats and deletes an object byte for byte", function()
      local s = new{}
      local data = "a\0b\255" .. ("x"):rep(10000)
      local info = assert(s:put("docs/a.bin", data))
      assert.are.equal(#data, info.size)
      assert.are.equal(data, (s:get("docs/a.bin")))
      assert.is_true(s:exists("docs/a.bin"))
      assert.are.equal(#data, s:stat("docs/a.bin").size)
      assert.is_true(s:delete("docs/a.bin"))
      assert.is_false(s:exists("docs/a.bin"))
      local v, err = s:get("docs/a.bin")
      assert.is_nil(v)
      assert.are.equal("not_found", err.code)
      assert.are.equal("not_found", select(2, s:delete("docs/a.bin")).code)
      s:close()
    end)

    it("overwrites, moves and reads ranges", function()
      local s = new{}
      assert(s:put("a.txt", "first"))
      assert(s:put("a.txt", "0123456789"))
      assert.is_true(s:move("a.txt", "b/c.txt"))
      assert.is_false(s:exists("a.txt"))
      assert.are.equal("234", (s:get("b/c.txt", { 2, 4 })))
      assert.are.equal("89", (s:get("b/c.txt", { 8, 100 })))
      assert.are.equal("invalid", select(2, s:get("b/c.txt", { 10, 12 })).code)
      assert.are.equal("not_found", select(2, s:move("nope", "x")).code)
      s:close()
    end)

    it("sniffs content types from the bytes before the extension", function()
      local s = new{}
      assert.are.equal("image/png", s:put("pic.txt", PNG).content_type)
      assert.are.equal("image/png", s:stat("pic.txt").content_type)
      assert.are.equal("text/plain; charset=utf-8", s:put("notes", "hello").content_type)
      assert.are.equal("application/json", s:put("d.json", "{}").content_type)
      assert.are.equal("application/octet-stream", s:put("blob", "\0\1\2").content_type)
      s:close()
    end)

    it("refuses keys that could leave the store, and raises on misuse", function()
      local s = new{}
      for _, key in ipairs{ "", "../x", "a/../../x", "/abs", "a//b", "a/./b", "sp ace", "a\0b",
        ("k"):rep(1025), "dir/" } do
        local ok, err = s:put(key, "x")
        assert.is_nil(ok, key)
        assert.are.equal("invalid", err.code, key)
      end
      assert.is_false(s:exists("../x"))
      assert.has_error(function() s:put(42, "x") end, "storage:put: key must be a string")
      assert.has_error(function() s:put("k", 42) end, "storage:put: data must be a string")
      assert.is_true(s:close())
      assert.are.equal("closed", select(2, s:put("k", "v")).code)
    end)

    it("serves presigned downloads with ranges and refuses tampered and expired URLs", function()
      local t = 1000000
      local s = new{ clock = function() return t end }
      assert(s:put("v/clip.bin", "0123456789"))
      local app = zever.app()
      s:mount(app)
      local url = s:presign("GET", "v/clip.bin", { expires = 60 })
      local res = testing.request(app, "GET", url)
      assert.are.equal(200, res.status)
      assert.are.equal("0123456789", res.body)
      assert.are.equal("bytes", res.headers["accept-ranges"])
      res = testing.request(app, "GET", url, { headers = { range = "bytes=2-5" } })
      assert.are.equal(206, res.status)
      assert.are.equal("2345", res.body)
      assert.are.equal("bytes 2-5/10", res.headers["content-range"])
      assert.are.equal("789", testing.request(app, "GET", url, { headers = { range = "bytes=-3" } }).body)
      assert.are.equal(416, testing.request(app, "GET", url, { headers = { range = "bytes=10-" } }).status)
      -- A download URL may be used again until it expires.
      assert.are.equal(200, testing.request(app, "GET", url).status)
      -- Whatever its random nonce: one that began with "1" once made a URL single-use (1 in 64;
      -- 400 URLs would meet one 99.8 % of the time).
      for i = 1, 400 do
        local u = s:presign("GET", "v/clip.bin")
        local q = {}
        for k, v in u:gmatch("([ens])=([^&]*)") do q[k] = v end
        assert.is_true(s:verify("GET", "v/clip.bin", q), u)
        assert.is_true(s:verify("GET", "v/clip.bin", q), "used twice: " .. i .. " " .. u)
      end
      -- Tampered: another key, another expiry, a flipped signature byte.
      local other = url:gsub("clip", "clop")
      assert.are.equal(403, testing.request(app, "GET", other).status)
      local later = url:gsub("e=(%d+)", function(e) return "e=" .. (tonumber(e) + 3600) end)
      res = testing.request(app, "GET", later)
      assert.are.equal(403, res.status)
      assert.are.equal("invalid_signature", res:json().error)
      local flipped = url:gsub("s=(.)", function(c) return "s=" .. (c == "A" and "B" or "A") end)
      assert.are.equal(403, testing.request(app, "GET", flipped).status)
      -- Expired.
      t = t + 61
      res = testing.request(app, "GET", url)
      assert.are.equal(403, res.status)
      assert.are.equal("expired", res:json().error)
      s:close()
    end)

    it("accepts a presigned upload once and refuses its replay", function()
      local s = new{}
      local app = zever.app()
      s:mount(app)
      local url = s:presign("PUT", "up/avatar.png", { content_type = "image/png", max_bytes = 100 })
      local res = testing.request(app, "PUT", url, { body = PNG, headers = { ["content-type"] = "image/png" } })
      assert.are.equal(201, res.status)
      assert.are.same({ key = "up/avatar.png", size = #PNG, content_type = "image/png" }, res:json())
      assert.are.equal(PNG, (s:get("up/avatar.png")))
      res = testing.request(app, "PUT", url, { body = "evil", headers = { ["content-type"] = "image/png" } })
      assert.are.equal(403, res.status)
      assert.are.equal("replayed", res:json().error)
      assert.are.equal(PNG, (s:get("up/avatar.png")))
      -- The declared type and the size are part of the signature's terms.
      local u2 = s:presign("PUT", "up/b.png", { content_type = "image/png", max_bytes = 10 })
      assert.are.equal(415, testing.request(app, "PUT", u2, { body = "x",
        headers = { ["content-type"] = "text/html" } }).status)
      local u3 = s:presign("PUT", "up/c.png", { max_bytes = 10 })
      assert.are.equal(413, testing.request(app, "PUT", u3, { body = ("x"):rep(11) }).status)
      -- A GET URL does not upload.
      local get = s:presign("GET", "up/d.png")
      assert.are.equal(403, testing.request(app, "PUT", get, { body = "x" }).status)
      assert.is_false(s:exists("up/d.png"))
      s:close()
    end)
  end)
end
