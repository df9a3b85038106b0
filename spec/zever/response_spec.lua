-- zever.response: final statuses, header values, repeated headers, the return forms.

local response = require "zever.response"

local function headers(res)
  local out = {}
  local h = response.finish(res).headers
  for i = 1, #h, 2 do out[#out + 1] = h[i] .. ": " .. h[i + 1] end
  return out
end

describe("zever.response", function()
  describe("status", function()
    it("takes final statuses and raises for 1xx and anything outside 200..999", function()
      local rows = {
        { 200, true }, { 204, true }, { 999, true }, { 100, false }, { 101, false },
        { 199, false }, { 1000, false }, { 99, false }, { 200.5, false }, { "200", false },
      }
      for _, row in ipairs(rows) do
        local ok, err = pcall(function() response.new():status(row[1]) end)
        assert.are.equal(row[2], ok, tostring(row[1]))
        if not ok then assert.matches("200..999", err) end
      end
    end)

    it("raises for a handler returning a 1xx status", function()
      assert.has_error(function() response.apply(response.new(), 101, "x") end,
        "a handler returned status 101; want a final status within 200..999 (1xx are " ..
        "interim responses)")
    end)
  end)

  describe("headers", function()
    it("replaces a header set twice, and appends Set-Cookie", function()
      local res = response.new()
      res:header("X-A", "1"):header("Set-Cookie", "a=1"):header("x-a", "2")
      res:header("Set-Cookie", "b=2")
      assert.same({ "Set-Cookie: a=1", "x-a: 2", "Set-Cookie: b=2" }, headers(res))
    end)

    it("appends with add_header for any name", function()
      local res = response.new():add_header("Link", "<a>"):add_header("Link", "<b>")
      assert.same({ "Link: <a>", "Link: <b>" }, headers(res))
    end)

    it("sends a list value as repeated headers, replacing earlier values", function()
      local res = response.new():header("Vary", "x"):header("Vary", { "Accept", 1 })
      assert.same({ "Vary: Accept", "Vary: 1" }, headers(res))
    end)

    it("raises for values that are not strings, numbers or lists of them", function()
      local rows = {
        { { a = 1 }, "is a table" },
        { {}, "is a table" },
        { { "a", x = 1 }, "is a table" },
        { { "a", {} }, "got a table" },
        { true, "got a boolean" },
        { "a\r\nb", "CR, LF or NUL" },
      }
      for _, row in ipairs(rows) do
        local ok, err = pcall(function() response.new():header("X-V", row[1]) end)
        assert.is_false(ok)
        assert.matches(row[2], err, 1, true)
        assert.is_nil(err:find("0x", 1, true))
      end
    end)

    it("takes token names and refuses anything else, however many names came before", function()
      -- Names already seen are remembered (a table lookup instead of a scan); past the cache's
      -- bound they are checked each time. Each row runs on a fresh name and again after 600
      -- other names, so both paths answer.
      local rows = {
        { "X-Ok", true }, { "x!#$%&'*+.^_`|~-9", true }, { "", false }, { "X A", false },
        { "X:A", false }, { "X\rA", false }, { "X\0", false }, { "\128X", false },
        { "X(A)", false }, { 42, false }, { true, false },
      }
      local function check(label)
        for _, row in ipairs(rows) do
          for _ = 1, 2 do -- the second time from the cache, when it was remembered
            local ok, err = pcall(function() response.new():header(row[1], "v") end)
            assert.are.equal(row[2], ok, label .. " " .. tostring(row[1]))
            if not ok then assert.matches("invalid header name", err, 1, true) end
            ok = pcall(function() response.new():add_header(row[1], "v") end)
            assert.are.equal(row[2], ok, label .. " add_header " .. tostring(row[1]))
          end
        end
      end
      check("first")
      for i = 1, 600 do response.new():header("X-Spec-Many-" .. i, "v") end
      check("after 600 names")
      local res = response.new():header("X-Spec-Many-599", "a"):header("x-spec-many-599", "b")
      assert.same({ "x-spec-many-599: b" }, headers(res))
      assert.are.equal("b", res:get_header("X-SPEC-MANY-599"))
    end)

    it("refuses CR, LF and NUL anywhere in a value, and only those", function()
      local rows = {
        { "a\rb", false }, { "a\nb", false }, { "a\0b", false }, { "\r", false },
        { "ab\n", false }, { "\0", false }, { "a\tb c", true }, { "\127\255", true },
        { "", true }, { 12.5, true },
      }
      for _, row in ipairs(rows) do
        local ok, err = pcall(function() response.new():header("X-V", row[1]) end)
        assert.are.equal(row[2], ok, ("%q"):format(row[1]))
        if not ok then assert.matches("CR, LF or NUL", err, 1, true) end
        ok = pcall(function() response.new():header("X-V", { "ok", row[1] }) end)
        assert.are.equal(row[2], ok, "in a list: " .. ("%q"):format(row[1]))
      end
    end)

    it("takes list values in the status, body, headers return form", function()
      local res = response.apply(response.new(), 201, "ok", { ["Set-Cookie"] = { "a=1", "b=2" } })
      assert.are.equal(201, res.code)
      assert.same({ "Set-Cookie: a=1", "Set-Cookie: b=2", "Content-Type: text/plain; charset=utf-8" },
        headers(res))
    end)
  end)

  describe("new", function()
    -- LuaJIT's parser gives a constructor key whose value is an expression only a nil slot in
    -- the template, and precompiled bytecode (build/bc, string.dump) drops nil slots: a template
    -- key with an expression value made every precompiled response insert that key anew, a
    -- store the compiled trace cannot sink (264 bytes a response instead of 104 when this spec
    -- was written; ~880 instructions a /hello request). So the module loaded from its bytecode
    -- must allocate no more per response than loaded from source.
    it("allocates no more per response when loaded from bytecode than from source", function()
      local path = package.searchpath("zever.response", package.path)
      local function bytes_per_response(mode)
        local chunk = assert(loadfile(path))
        if mode == "bc" then chunk = assert(loadstring(string.dump(chunk), "@" .. path)) end
        local m = chunk()
        local new, finish = m.new, m.finish
        local function run(n)
          for _ = 1, n do
            local res = new()
            res.body, res.ctype = "hello world", "text/plain"
            finish(res)
          end
        end
        -- Compiled, as a server runs it (the interpreter allocates the same either way: what
        -- differs is what the trace can sink). The least of three counts, so that a trace
        -- compiled during one of them (its own objects) does not count.
        run(2000)
        local least = math.huge
        for _ = 1, 3 do
          collectgarbage("collect")
          collectgarbage("stop")
          local before = collectgarbage("count")
          run(10000)
          local after = collectgarbage("count")
          collectgarbage("restart")
          least = math.min(least, (after - before) * 1024 / 10000)
        end
        return least
      end
      local src, bc = bytes_per_response("src"), bytes_per_response("bc")
      assert.is_true(src > 0)
      assert.is_true(bc <= src, ("bytecode %.1f bytes a response, source %.1f"):format(bc, src))
    end)
  end)
end)
