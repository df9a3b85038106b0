-- zever.cookie_core: the Cookie header parser (host/cookie/), golden rows and hostile input.

local core = require "zever.cookie_core"

describe("zever.cookie_core", function()
  describe("parse", function()
    -- { name, header, expected table }
    local rows = {
      { "RFC 6265 3.1: one cookie", "SID=31d4d96e407aad42", { SID = "31d4d96e407aad42" } },
      { "RFC 6265 3.1: two cookies", "SID=31d4d96e407aad42; lang=en-US",
        { SID = "31d4d96e407aad42", lang = "en-US" } },
      { "RFC 6265 4.1.1: a quoted value loses its DQUOTEs", 'a="b c"; d=""', { a = "b c", d = "" } },
      { "blanks around ';' and '=' are trimmed", "  a = 1 ;\tb=2  ;c =3", { a = "1", b = "2", c = "3" } },
      { "an '=' inside a value is kept", "a=b=c==", { a = "b=c==" } },
      { "an empty value is an empty string", "a=; b=1", { a = "", b = "1" } },
      { "a pair without '=' is dropped", "flag; b=1; other", { b = "1" } },
      { "an empty name is dropped", "=1; b=2", { b = "2" } },
      { "a name that is not a token is dropped", "a b=1; c(d=2; e,f=3; g=4", { g = "4" } },
      { "a value with a control byte is dropped", "a=x\1y; b=\127; c=ok", { c = "ok" } },
      { "a NUL byte drops its pair only", "a=x\0y; b=2", { b = "2" } },
      { "a lone or inner DQUOTE drops the pair", 'a="x; b=x"y; c=x"; d=1', { d = "1" } },
      { "bytes >= 0x80 are kept as sent", "name=J\195\188rgen", { name = "J\195\188rgen" } },
      { "the first of a repeated name wins", "a=1; a=2; A=3", { a = "1", A = "3" } },
      { "separators only give no cookie", ";;; ;", {} },
      { "an empty header gives no cookie", "", {} },
      { "values are not percent-decoded", "a=x%20y+z", { a = "x%20y+z" } },
      { "a trailing ';' is fine", "a=1;", { a = "1" } },
      { "CR LF inside the header drop their pair", "a=1\r\nb; c=2", { c = "2" } },
    }
    for _, row in ipairs(rows) do
      it(row[1], function()
        assert.same(row[3], core.parse(row[2]))
      end)
    end

    it("keeps at most max pairs and ignores the rest", function()
      local parts = {}
      for i = 1, 1000 do parts[i] = "c" .. i .. "=" .. i end
      local header = table.concat(parts, "; ")
      local t = core.parse(header)
      local n = 0
      for _ in pairs(t) do n = n + 1 end
      assert.equal(256, n)
      assert.equal("256", t.c256)
      assert.is_nil(t.c257)
      local t2 = core.parse(header, 3)
      assert.same({ c1 = "1", c2 = "2", c3 = "3" }, t2)
    end)

    it("parses a 1 MB value and random bytes without raising", function()
      local big = string.rep("x", 1024 * 1024)
      assert.equal(#big, #core.parse("a=" .. big).a)
      math.randomseed(18)
      for _ = 1, 2000 do
        local b = {}
        for j = 1, math.random(0, 64) do b[j] = string.char(math.random(0, 255)) end
        local t = core.parse(table.concat(b))
        for k, v in pairs(t) do
          assert.is_true(core.is_token(k))
          assert.is_nil(v:find('[%c"]'))
        end
      end
    end)

    it("raises for a header that is not a string", function()
      assert.has_error(function() core.parse(nil) end)
      assert.has_error(function() core.parse({}) end)
    end)
  end)

  describe("get", function()
    it("finds one cookie without building a table, nil when absent", function()
      assert.equal("en-US", core.get("SID=31d4d96e407aad42; lang=en-US", "lang"))
      assert.equal("1", core.get("a=1; a=2", "a"))
      assert.is_nil(core.get("a=1", "b"))
      assert.is_nil(core.get("a b=1", "a b"))
    end)
  end)

  describe("is_value", function()
    local rows = {
      { "", true }, { "abc", true }, { '"abc"', true }, { "a=b/c", true }, { "a b", false },
      { "a;b", false }, { "a,b", false }, { 'a"b', false }, { "a\\b", false }, { "a\r\nb", false },
      { "\195\188", false }, { '"', false },
    }
    for _, row in ipairs(rows) do
      it(string.format("says %s for %q", tostring(row[2]), row[1]), function()
        assert.equal(row[2], core.is_value(row[1]))
      end)
    end
  end)
end)
