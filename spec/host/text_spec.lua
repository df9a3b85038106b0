local text = require "zever.text"

describe("zever.text", function()
  describe("distance", function()
    local rows = {
      { "two empty strings", "", "", 0 },
      { "empty against a word", "", "abc", 3 },
      { "a word against empty", "abc", "", 3 },
      { "equal words", "serve", "serve", 0 },
      { "one insertion", "serv", "serve", 1 },
      { "one deletion", "servve", "serve", 1 },
      { "one substitution", "sarve", "serve", 1 },
      { "an adjacent transposition", "sevre", "serve", 1 },
      { "a transposition at the start", "ehlp", "help", 1 },
      { "a transposition at the end", "helo", "hello", 1 },
      { "two transpositions", "ehpl", "help", 2 },
      { "OSA, not unrestricted Damerau: CA to ABC", "CA", "ABC", 3 },
      { "kitten and sitting", "kitten", "sitting", 3 },
      { "case matters", "Help", "help", 1 },
      { "bytes, not characters: e and e-acute", "e", "\195\169", 2 },
      { "non-ASCII bytes compared as bytes", "caf\195\169", "caf\195\168", 1 },
      { "embedded NUL bytes", "a\0b", "a\0c", 1 },
      { "completely different words", "abc", "xyz", 3 },
      { "longer against shorter", "migrate", "mg", 5 },
    }
    for _, row in ipairs(rows) do
      it("measures " .. row[1], function()
        assert.are.equal(row[4], text.distance(row[2], row[3]))
        assert.are.equal(row[4], text.distance(row[3], row[2]))
      end)
    end

    it("handles inputs longer than the stack scratch", function()
      local a = string.rep("abcdefghij", 30)
      local b = a:sub(1, 150) .. "X" .. a:sub(152)
      assert.are.equal(1, text.distance(a, b))
      assert.are.equal(300, text.distance(a, ""))
      assert.are.equal(100, text.distance(a, a:sub(1, 200)))
      local c = string.rep("0123456789", 20)
      local d = c:sub(1, 99) .. c:sub(101, 101) .. c:sub(100, 100) .. c:sub(102)
      assert.are.equal(1, text.distance(c, d))
    end)

    it("agrees with a plain dynamic programme on random words", function()
      local function naive(a, b)
        local d = {}
        for i = 0, #a do d[i] = { [0] = i } end
        for j = 0, #b do d[0][j] = j end
        for i = 1, #a do
          for j = 1, #b do
            local cost = a:byte(i) == b:byte(j) and 0 or 1
            local v = math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a:byte(i) == b:byte(j - 1) and a:byte(i - 1) == b:byte(j) then
              v = math.min(v, d[i - 2][j - 2] + 1)
            end
            d[i][j] = v
          end
        end
        return d[#a][#b]
      end
      math.randomseed(42)
      local function word(max)
        local t = {}
        for i = 1, math.random(0, max) do t[i] = string.char(96 + math.random(1, 4)) end
        return table.concat(t)
      end
      for _ = 1, 2000 do
        local a, b = word(9), word(9)
        assert.are.equal(naive(a, b), text.distance(a, b), a .. " vs " .. b)
      end
      for _ = 1, 50 do
        local a, b = word(90), word(90)
        assert.are.equal(naive(a, b), text.distance(a, b), a .. " vs " .. b)
      end
    end)

    it("raises when an argument is not a string", function()
      assert.has_error(function() text.distance("a", nil) end)
      assert.has_error(function() text.distance({}, "a") end)
    end)
  end)

  describe("closest", function()
    local commands = { "bench", "check", "completion", "config", "console", "doctor", "fmt", "gen",
      "help", "jobs", "mail", "migrate", "new", "routes", "run", "schedule", "serve", "test",
      "version", "worker" }

    local rows = {
      { "a transposed command", "sevre", "serve", 1 },
      { "a missing letter", "helo", "help", 1 },
      { "an extra letter", "tesst", "test", 1 },
      { "an exact match", "routes", "routes", 0 },
      { "a long word within three edits", "compleshun", "completion", 3 },
    }
    for _, row in ipairs(rows) do
      it("suggests the command for " .. row[1], function()
        local best, dist = text.closest(row[2], commands)
        assert.are.equal(row[3], best)
        assert.are.equal(row[4], dist)
      end)
    end

    it("lets the first candidate win a tie", function()
      assert.are.equal("cat", text.closest("bat", { "cat", "hat", "rat" }))
      assert.are.equal("hat", text.closest("bat", { "hat", "cat", "rat" }))
    end)

    it("returns nil when nothing is within the threshold", function()
      assert.is_nil(text.closest("xyzzy", commands))
      assert.is_nil(text.closest("anything", {}))
    end)

    it("allows two edits up to eight bytes and three above", function()
      assert.are.equal(2, text.threshold(8))
      assert.are.equal(3, text.threshold(9))
      assert.are.equal("abcdefgh", text.closest("abcdefXY", { "abcdefgh" }))
      assert.is_nil(text.closest("abcdeXYZ", { "abcdefgh" }))
      assert.are.equal("abcdefghi", text.closest("abcdefXYZ", { "abcdefghi" }))
      assert.is_nil(text.closest("abcdeWXYZ", { "abcdefghi" }))
    end)

    it("takes an explicit maximum distance", function()
      assert.is_nil(text.closest("sevre", commands, 0))
      assert.are.equal("serve", text.closest("sevre", commands, 1))
    end)

    it("scans candidates longer than the stack scratch", function()
      local long = string.rep("x", 200)
      local best = text.closest(long .. "y", { "short", long .. "z", long })
      assert.are.equal(long .. "z", best)
    end)

    it("scans more candidates than fit on the stack", function()
      local many = {}
      for i = 1, 500 do many[i] = "qqqqq" .. i end
      many[501] = "target"
      assert.are.equal("target", text.closest("tagret", many))
      assert.is_nil(text.closest("zzzzzzz", many))
    end)

    it("raises when a candidate is not a string", function()
      assert.has_error(function() text.closest("a", { "b", 3 }) end,
        "bad argument #2 to 'closest' (candidate 2 is a number, not a string)")
      assert.has_error(function() text.closest("a", "b") end)
    end)
  end)
end)
