-- The WebSocket frame core (host/http/ws.c) through zever.ws_core: the handshake's accept key,
-- UTF-8 validation, frame encoding and the reader's rules, as golden rows (RFC 6455's own
-- examples where it has them, section numbers in the names).

local ws = require "zever.ws_core"

local function bytes(...) return string.char(...) end
local MASK = bytes(0x37, 0xfa, 0x21, 0x3d)

describe("zever.ws_core", function()
  describe("accept", function()
    it("computes the RFC 6455 section 1.3 example", function()
      assert.are.equal("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", ws.accept("dGhlIHNhbXBsZSBub25jZQ=="))
    end)

    it("gives different keys different answers", function()
      assert.are_not.equal(ws.accept("a"), ws.accept("b"))
      assert.are.equal(28, #ws.accept(string.rep("k", 500)))
    end)
  end)

  describe("utf8", function()
    local rows = {
      { "empty", "", true },
      { "ascii", "hello, world 0123456789", true },
      { "greek", "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5", true },
      { "U+D7FF, the last before surrogates", "\xed\x9f\xbf", true },
      { "U+E000, the first after", "\xee\x80\x80", true },
      { "U+10FFFF, the last code point", "\xf4\x8f\xbf\xbf", true },
      { "an overlong NUL", "\xc0\x80", false },
      { "an overlong 3-byte form", "\xe0\x80\xaf", false },
      { "an overlong 4-byte form", "\xf0\x80\x80\xaf", false },
      { "a surrogate", "\xed\xa0\x80", false },
      { "above U+10FFFF", "\xf4\x90\x80\x80", false },
      { "F5 never starts a sequence", "\xf5\x80\x80\x80", false },
      { "a lone continuation byte", "a\x80b", false },
      { "a truncated sequence", "\xe2\x82", false },
      { "valid text then a surrogate", "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80edited", false },
      { "ascii runs longer than 8 bytes around a multibyte char", string.rep("a", 17) .. "\xc3\xa9" .. string.rep("b", 9), true },
    }
    for _, row in ipairs(rows) do
      it("says " .. tostring(row[3]) .. " for " .. row[1], function()
        assert.are.equal(row[3], ws.utf8(row[2]))
      end)
    end
  end)

  describe("frame", function()
    local rows = {
      -- RFC 6455 section 5.7
      { "a single-frame unmasked text (5.7)", { 1, "Hello" }, bytes(0x81, 0x05) .. "Hello" },
      { "a single-frame masked text (5.7)", { 1, "Hello", true, false, MASK },
        bytes(0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58) },
      { "the first fragment of a text (5.7)", { 1, "Hel", false }, bytes(0x01, 0x03) .. "Hel" },
      { "its continuation (5.7)", { 0, "lo" }, bytes(0x80, 0x02) .. "lo" },
      { "an unmasked ping (5.7)", { 9, "Hello" }, bytes(0x89, 0x05) .. "Hello" },
      { "256 bytes of binary: a 16-bit length (5.7)", { 2, string.rep("\0", 256) },
        bytes(0x82, 0x7e, 0x01, 0x00) .. string.rep("\0", 256) },
      { "64 KiB of binary: a 64-bit length (5.7)", { 2, string.rep("\0", 65536) },
        bytes(0x82, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0) .. string.rep("\0", 65536) },
      { "a compressed first frame sets RSV1", { 1, "x", true, true }, bytes(0xc1, 0x01) .. "x" },
    }
    for _, row in ipairs(rows) do
      it("encodes " .. row[1], function()
        assert.are.equal(row[3], ws.frame(unpack(row[2])))
      end)
    end
  end)

  describe("reader", function()
    local function read_all(opts, wire)
      local r = ws.reader(opts)
      local out, pos = {}, 1
      while pos <= #wire do
        local used, ev = r:read(wire:sub(pos))
        if not used then return out, ev end
        if used == 0 then return out, "need" end
        out[#out + 1] = ev
        pos = pos + used
      end
      return out
    end

    it("reads and unmasks a client's text frame", function()
      local evs, err = read_all(nil, ws.frame(1, "Hello", true, false, MASK))
      assert.is_nil(err)
      assert.are.equal("Hello", evs[1].payload)
      assert.are.same({ 1, 1, true, false }, { evs[1].opcode, evs[1].message, evs[1].fin,
        evs[1].rsv1 })
    end)

    it("reads a fragmented message with a ping between its fragments", function()
      local wire = ws.frame(1, "Hel", false, false, MASK) .. ws.frame(9, "p", true, false, MASK)
        .. ws.frame(0, "lo", true, false, MASK)
      local evs, err = read_all(nil, wire)
      assert.is_nil(err)
      assert.are.same({ "Hel", "p", "lo" }, { evs[1].payload, evs[2].payload, evs[3].payload })
      assert.are.same({ 1, 9, 1 }, { evs[1].message, evs[2].message, evs[3].message })
      assert.are.same({ false, true, true }, { evs[1].fin, evs[2].fin, evs[3].fin })
    end)

    it("says how many bytes an incomplete frame needs", function()
      local r = ws.reader()
      local wire = ws.frame(2, string.rep("b", 300), true, false, MASK)
      assert.are.same({ 0, 0 }, { r:read(wire:sub(1, 1)) })
      assert.are.same({ 0, #wire }, { r:read(wire:sub(1, 10)) })
      local used, ev = r:read(wire)
      assert.are.equal(#wire, used)
      assert.are.equal(string.rep("b", 300), ev.payload)
    end)

    it("reads a close frame's code and reason", function()
      local evs = read_all(nil, ws.frame(8, bytes(0x03, 0xe8) .. "bye", true, false, MASK))
      assert.are.same({ 1000, "bye" }, { evs[1].close_code, evs[1].reason })
      evs = read_all(nil, ws.frame(8, "", true, false, MASK))
      assert.are.equal(1005, evs[1].close_code)
    end)

    it("reads a server's unmasked frames on the client side", function()
      local evs, err = read_all({ server = false }, ws.frame(2, "abc"))
      assert.is_nil(err)
      assert.are.equal("abc", evs[1].payload)
    end)

    it("takes RSV1 on a first frame when deflate was negotiated", function()
      local evs, err = read_all({ deflate = true }, ws.frame(1, "\xff", true, true, MASK))
      assert.is_nil(err) -- a compressed text's UTF-8 is checked after inflating
      assert.is_true(evs[1].rsv1)
    end)

    local refusals = {
      { "an unmasked frame from a client", nil, ws.frame(1, "x"), 1002 },
      { "a masked frame from a server", { server = false }, ws.frame(1, "x", true, false, MASK), 1002 },
      { "RSV1 without deflate", nil, ws.frame(1, "x", true, true, MASK), 1002 },
      { "RSV2", nil, bytes(0xa1, 0x81) .. MASK .. "x", 1002 },
      { "RSV1 on a continuation", { deflate = true },
        ws.frame(1, "a", false, true, MASK) .. ws.frame(0, "b", true, true, MASK), 1002 },
      { "RSV1 on a control frame", { deflate = true }, ws.frame(9, "", true, true, MASK), 1002 },
      { "a reserved data opcode", nil, ws.frame(3, "x", true, false, MASK), 1002 },
      { "a reserved control opcode", nil, ws.frame(11, "x", true, false, MASK), 1002 },
      { "a fragmented ping", nil, ws.frame(9, "x", false, false, MASK), 1002 },
      { "a ping of 126 bytes", nil, ws.frame(9, string.rep("p", 126), true, false, MASK), 1002 },
      { "a continuation with no message open", nil, ws.frame(0, "x", true, false, MASK), 1002 },
      { "a new message while one is open", nil,
        ws.frame(1, "a", false, false, MASK) .. ws.frame(1, "b", true, false, MASK), 1002 },
      { "a 64-bit length with its top bit set", nil,
        bytes(0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 1) .. MASK, 1002 },
      { "a close payload of one byte", nil, ws.frame(8, "\3", true, false, MASK), 1002 },
      { "close code 1005 (never sent)", nil, ws.frame(8, bytes(0x03, 0xed), true, false, MASK), 1002 },
      { "close code 999", nil, ws.frame(8, bytes(0x03, 0xe7), true, false, MASK), 1002 },
      { "close code 2999", nil, ws.frame(8, bytes(0x0b, 0xb7), true, false, MASK), 1002 },
      { "a close reason that is not UTF-8", nil,
        ws.frame(8, bytes(0x03, 0xe8, 0xff), true, false, MASK), 1007 },
      { "text that is not UTF-8", nil, ws.frame(1, "ok\xc0\x80", true, false, MASK), 1007 },
      { "a text message ending inside a character", nil,
        ws.frame(1, "\xe2\x82", false, false, MASK) .. ws.frame(0, "", true, false, MASK), 1007 },
      { "a frame over max_frame", { max_frame = 10 },
        ws.frame(2, string.rep("x", 11), true, false, MASK), 1009 },
      { "a message over max_message in fragments", { max_message = 10 },
        ws.frame(2, string.rep("x", 6), false, false, MASK) ..
        ws.frame(0, string.rep("x", 6), true, false, MASK), 1009 },
    }
    for _, row in ipairs(refusals) do
      it("answers " .. row[4] .. " to " .. row[1], function()
        local _, err = read_all(row[2], row[3])
        assert.are.equal(row[4], err)
      end)
    end

    it("refuses invalid UTF-8 in the first fragment without waiting for the rest", function()
      local r = ws.reader()
      assert.are.same({ nil, 1007 }, { r:read(ws.frame(1, "\xff", false, false, MASK)) })
      assert.has_error(function() r:read("") end, "reader:read: the reader failed already")
    end)

    it("accepts a character split across fragments", function()
      local evs, err = read_all(nil, ws.frame(1, "\xe2\x82", false, false, MASK) ..
        ws.frame(0, "\xac", true, false, MASK))
      assert.is_nil(err)
      assert.are.equal("\xe2\x82\xac", evs[1].payload .. evs[2].payload)
    end)
  end)
end)
