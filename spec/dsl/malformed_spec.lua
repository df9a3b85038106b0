-- Malformed .zen input: truncated files, unbalanced braces, illegal bytes, astral-plane runes,
-- 10,000-deep nesting and a 5 MB file. Whatever comes in, the lexer, parser, resolver and
-- formatter return (diagnostics, a tree, an IR, a refusal) and never raise or crash. No timing is
-- asserted: finishing at all is the point (the fuzz target fuzz/zen_parse_fuzz.c goes further).

local parser = require "dsl.parser"
local resolver = require "dsl.resolver"
local format = require "dsl.format"
local diagnostics = require "dsl.diagnostics"
local golden = require "spec.dsl.golden"
local process = require "spec.support.process"
local json = require "cjson"

local rep, char = string.rep, string.char

-- Runs the whole pipeline on src and checks the shape of what comes out; returns the parser's
-- and the resolver's diagnostics. Any raise fails the spec with its message.
local function survive(src)
  local tree, pdiags = parser.parse(src, "m.zen")
  assert.are.equal("file", tree.kind)
  local nlines = select(2, src:gsub("\n", "")) + 1
  for _, d in ipairs(pdiags) do
    if not (type(d.message) == "string" and d.line >= 1 and d.line <= nlines and d.col >= 1) then
      error("a diagnostic out of place: " .. tostring(d.message), 2)
    end
  end
  local ir, rdiags = resolver.resolve({ tree })
  assert.are.equal("ir", ir.kind)
  local out, err = format.format(src, "m.zen")
  if diagnostics.count(pdiags) > 0 then
    assert.is_nil(out)
    assert.are.equal("syntax", err.code)
  else
    assert.is_string(out)
  end
  return pdiags, rdiags
end

local function errors(diags)
  return (diagnostics.count(diags))
end

local function has(diags, text)
  for _, d in ipairs(diags) do
    if d.message:find(text, 1, true) then return true end
  end
  return false
end

local function fixture(name)
  return assert(golden.read(golden.dir .. "/" .. name .. ".zen"))
end

describe("malformed .zen input", function()
  describe("truncated files", function()
    for _, name in ipairs({ "tasks", "blog" }) do
      it("survives every prefix of " .. name .. ".zen and reports one cut inside a block", function()
        local src = fixture(name)
        local cut_inside = 0
        for n = 0, #src do
          local prefix = src:sub(1, n)
          local pdiags = survive(prefix)
          local _, opens = prefix:gsub("{", "")
          local _, closes = prefix:gsub("}", "")
          -- Outside strings and comments (the fixtures have no braces in those): a block is open.
          if opens > closes then
            cut_inside = cut_inside + 1
            assert.is_true(errors(pdiags) > 0, "no error for a cut at byte " .. n)
          end
        end
        assert.is_true(cut_inside > #src / 2)
      end)
    end
  end)

  describe("unbalanced braces", function()
    -- { name, input, a message expected among the diagnostics }
    local rows = {
      { "a block never closed", "entity A {\n  x: int32\n", 'expected "}" to close the block' },
      { "a block closed twice", "entity A { x: int32 }}\nentity B { y: int32 }", "expected a declaration" },
      { "a parenthesis never closed", "entity A {\n  x: int32 @validate(min_len: 1\n  y: int32\n}",
        '"," or ")" to close the "("' },
      { "a bracket never closed", "entity A { x: [int32 }", '"]" to close the list type' },
      { "closers only", rep("})]", 1000), "expected a declaration" },
      { "openers only", rep("{([", 1000), "expected a declaration" },
      { "a list value never closed", "job J() { retry: {a, b, c", 'expected "}" to close the "{"' },
    }
    for _, row in ipairs(rows) do
      it("reports " .. row[1], function()
        local pdiags = survive(row[2])
        assert.is_true(has(pdiags, row[3]), row[3])
      end)
    end
  end)

  describe("illegal bytes", function()
    it("reports every byte that is not a token, inserted into a valid file", function()
      local src = fixture("tasks")
      local at = src:find("title", 1, true)
      local seen = 0
      for b = 0, 255 do
        local c = char(b)
        if not c:match("[%w_%s\"/{}()%[%]:,@?%.%-]") then
          local pdiags = survive(src:sub(1, at - 1) .. c .. src:sub(at))
          assert.is_true(errors(pdiags) > 0, ("byte 0x%02X"):format(b))
          seen = seen + 1
        end
      end
      assert.is_true(seen > 150)
    end)

    it("reports a file of NUL bytes and a file of invalid UTF-8", function()
      assert.is_true(errors((survive(rep("\0", 4096)))) > 0)
      assert.is_true(errors((survive(rep("\255\254\192\128", 4096)))) > 0)
    end)

    it("survives 9,000 illegal runes and reports them", function()
      local pdiags = survive("entity A {\n" .. rep("  x: int32 \226\130\172\n", 9000) .. "}\n")
      assert.is_true(errors(pdiags) >= 9000)
    end)
  end)

  describe("astral-plane runes", function()
    local face = "\240\159\152\128" -- U+1F600

    it("keeps them in strings and comments without a diagnostic", function()
      local pdiags = survive("// " .. face .. face .. "\nentity A {\n  x: string @default(\"" .. face
        .. "\\u{1F600}\")\n}\n")
      assert.are.same({}, pdiags)
    end)

    it("reports one in a name with its column counted in code points", function()
      local pdiags = survive("entity A" .. face .. face .. "B { x: int32 }")
      assert.is_true(errors(pdiags) > 0)
      assert.are.equal(9, pdiags[1].col)
      assert.are.equal(10, pdiags[2].col)
    end)

    it("survives a file made of them", function()
      assert.is_true(errors((survive(rep(face, 20000)))) > 0)
    end)

    it("survives a rune cut in half at the end", function()
      assert.is_true(errors((survive("entity A { x: int32 }\n" .. face:sub(1, 3)))) > 0)
    end)
  end)

  describe("10,000-deep nesting", function()
    local N = 10000
    local rows = {
      { "list types", "entity A { x: " .. rep("[", N) .. "int32" .. rep("]", N) .. " }" },
      { "brace lists", "job J() { x: " .. rep("{", N) .. rep("}", N) .. " }" },
      { "bracket lists", "job J() { x: " .. rep("[", N) .. rep("]", N) .. " }" },
      { "calls", "job J() { x: " .. rep("f(", N) .. rep(")", N) .. " }" },
      { "attribute arguments", "entity A { x: int32 @a(" .. rep("b(", N) .. rep(")", N + 1) .. " }" },
    }
    for _, row in ipairs(rows) do
      it("reports nesting too deep in " .. row[1] .. " once, then goes on", function()
        local pdiags = survive(row[2] .. "\nentity After { y: int32 }\n")
        local n = 0
        for _, d in ipairs(pdiags) do
          if d.message:find("nesting deeper than", 1, true) then n = n + 1 end
        end
        assert.are.equal(1, n)
        local tree = parser.parse(row[2] .. "\nentity After { y: int32 }\n", "m.zen")
        assert.are.equal("After", tree.decls[#tree.decls].name)
      end)
    end

    it("survives 10,000 blocks opened inside each other", function()
      assert.is_true(errors((survive(rep("entity A {\n", N) .. rep("}\n", N)))) > 0)
    end)

    it("survives unclosed nesting to the end of file", function()
      assert.is_true(errors((survive("entity A { x: " .. rep("[", N)))) > 0)
      assert.is_true(errors((survive("job J() { x: " .. rep("{", N)))) > 0)
    end)
  end)

  describe("a 5 MB file", function()
    local big
    setup(function()
      local unit = fixture("tasks") .. fixture("errors")
      big = rep(unit, math.ceil(5 * 1024 * 1024 / #unit))
    end)

    it("is parsed and resolved into diagnostics for every copy", function()
      assert.is_true(#big >= 5 * 1024 * 1024)
      local copies = math.ceil(5 * 1024 * 1024 / (#fixture("tasks") + #fixture("errors")))
      local _, want = parser.parse(fixture("errors"), "m.zen")
      local pdiags, rdiags = survive(big)
      assert.are.equal(copies * #want, #pdiags)
      assert.is_true(has(rdiags, "is already declared"))
    end)

    it("goes through zever check --json end to end with exit 1", function()
      local dir = require("spec.support.files").tmpdir()
      local f = assert(io.open(dir .. "/big.zen", "wb"))
      f:write(big)
      f:close()
      local r = process.zever("check", "--json", dir)
      os.execute("rm -rf '" .. dir .. "'")
      assert.are.equal(1, r.code, r.stderr)
      local rows = json.decode(r.stdout)
      assert.is_true(#rows > 10000)
      assert.are.equal(dir .. "/big.zen", rows[1].file)
    end)
  end)

  describe("regressions", function()
    it("resolves a schema with two services (the second no longer raises)", function()
      local src = "service A { rpc X() { http: GET \"/a\"  auth: none } }\n"
        .. "service B { rpc Y() { http: GET \"/a\"  auth: none } }\n"
      local _, rdiags = survive(src)
      assert.is_true(has(rdiags, "route GET /a is already served by A.X"))
    end)

    it("gives did-you-mean hints to the first 100 unknown types only (it was quadratic)", function()
      -- 3,000 entities each naming an unknown type: a hint compares the word with every declared
      -- name, so hints for all of them took seconds (20,000 took minutes); now 100 get one.
      local parts = {}
      for i = 1, 3000 do parts[i] = ("entity E%d { id: uuid @primary  x: E%dz }\n"):format(i, i) end
      local _, rdiags = survive(table.concat(parts))
      local unknown, hinted = 0, 0
      for _, d in ipairs(rdiags) do
        if d.message:find("unknown type", 1, true) then
          unknown = unknown + 1
          if d.message:find("did you mean", 1, true) then hinted = hinted + 1 end
        end
      end
      assert.are.equal(3000, unknown)
      assert.are.equal(100, hinted)
    end)
  end)
end)
