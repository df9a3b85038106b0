local parser = require "dsl.parser"
local diagnostics = require "dsl.diagnostics"
local golden = require "spec.dsl.golden"

local function parse(src)
  return parser.parse(src, "t.zen")
end

-- The messages of src's diagnostics as "line:col message".
local function messages(src)
  local _, diags = parse(src)
  local out = {}
  for _, d in ipairs(diags) do
    out[#out + 1] = string.format("%d:%d %s%s", d.line, d.col,
      d.severity == "warning" and "warning: " or "", d.message)
  end
  return out
end

describe("dsl.parser", function()
  describe("golden fixtures", function()
    for _, name in ipairs(golden.fixtures()) do
      local base = golden.dir .. "/" .. name
      it("parses " .. name .. ".zen into " .. name .. ".tree and " .. name .. ".diag", function()
        local src = assert(golden.read(base .. ".zen"))
        local file = "dsl/testdata/" .. name .. ".zen"
        local tree, diags = parser.parse(src, file)
        local tree_text = parser.dump(tree)
        local diag_text = diagnostics.render(diags, { [file] = src })
        assert.are.equal(golden.expected(base .. ".tree", tree_text), tree_text)
        assert.are.equal(golden.expected(base .. ".diag", diag_text), diag_text)
      end)
    end

    it("finds no problem in the valid fixtures", function()
      for _, name in ipairs({ "tasks", "blog" }) do
        local _, diags = parse(golden.read(golden.dir .. "/" .. name .. ".zen"))
        assert.are.same({}, diags)
      end
    end)
  end)

  describe("parse", function()
    it("keeps doc comments directly above declarations and members", function()
      local tree = parse("// A user.\n// Two lines.\nentity User {\n  // The key.\n  id: uuid // not doc\n"
        .. "  x: int32\n\n  // detached\n\n  y: int32\n}\n")
      local user = tree.decls[1]
      assert.are.equal("A user.\nTwo lines.", user.doc)
      assert.are.equal("The key.", user.members[1].doc)
      assert.is_nil(user.members[2].doc)
      assert.is_nil(user.members[3].doc)
    end)

    it("gives every node a position", function()
      local tree = parse("entity A {\n  b: B? @x(c: [1, {d}])\n}")
      local function walk(node)
        assert.is_number(node.line)
        assert.is_number(node.col)
        assert.is_number(node.pos)
        for _, v in pairs(node) do
          if type(v) == "table" then
            if v.kind then walk(v) else for _, item in ipairs(v) do walk(item) end end
          end
        end
      end
      walk(tree)
    end)

    it("accepts keywords as field names and tells index( from a field called index", function()
      local tree, diags = parse("entity A {\n  index: int32\n  message: string\n  index(index)\n}")
      assert.are.same({}, diags)
      local m = tree.decls[1].members
      assert.are.same({ "field", "field", "index" }, { m[1].kind, m[2].kind, m[3].kind })
    end)

    -- { name, input, diagnostics }
    local rows = {
      { "a missing colon, then goes on with the next field",
        "entity A {\n  x int32\n  y: @\n  z: bool\n}",
        { '2:3 expected a field (name: type), a relation or index(...), found "x"',
          '3:6 expected a type, found "@"' } },
      { "a missing declaration name and recovers at the next declaration",
        "enum { a }\nentity B { x: int32 }",
        { '1:6 expected a name after enum, found "{"' } },
      { "garbage at the top level once",
        "x y z { } ) entity A { b: int32 }",
        { '1:1 expected a declaration (entity, message, enum, service, job, schedule or saga), found "x"' } },
      { "a block left open at the next declaration on column 1",
        "entity A {\n  x: int32\nentity B { y: int32 }",
        { '3:1 expected "}" to close the block opened at 1:10, found keyword "entity"' } },
      { "a truncated file once",
        "entity A {\n  x: string @validate(min_len: ",
        { "2:32 expected a value, found end of file" } },
      { "an unclosed ( without eating the next member (a member inside one reads as a named argument)",
        "entity A {\n  x: int32 @validate(gt: 1\n  y: int32 @bad(\n  z: int32\n}",
        { '3:3 expected "," or ")" to close the "(" at 2:21, found "y"',
          '5:1 expected "," or ")" to close the "(" at 3:16, found "}"' } },
      { "an rpc without a name",
        "service S {\n  rpc (x: uuid)\n  rpc B()\n}",
        { '2:7 expected the rpc\'s name, found "("' } },
      { "empty entities and enums as warnings",
        "entity A {}\nenum E {}\nmessage M {}",
        { "1:1 warning: entity A has no fields", "2:1 warning: enum E has no values",
          "3:1 warning: message M has no fields" } },
      { "lexer errors without a parse error for the same token",
        "entity A { x: int32 ; y: string }",
        { '1:21 illegal character U+003B ";"' } },
    }
    for _, row in ipairs(rows) do
      it("reports " .. row[1], function()
        assert.are.same(row[3], messages(row[2]))
      end)
    end

    it("bounds nesting and reports it once", function()
      local deep = "entity A { x: json @default(" .. string.rep("[", 10000) .. string.rep("]", 10000)
        .. ")\n  y: int32\n}"
      local tree, diags = parse(deep)
      assert.are.equal(1, #diags)
      assert.are.equal("nesting deeper than 100 levels", diags[1].message)
      assert.are.equal("y", tree.decls[1].members[#tree.decls[1].members].name)
    end)

    it("survives 10,000 unbalanced braces at the top level", function()
      local _, diags = parse(string.rep("{", 10000) .. "\nentity A { x: int32 }")
      assert.are.equal(1, #diags)
    end)

    it("survives truncation at every byte of a valid file", function()
      local src = golden.read(golden.dir .. "/tasks.zen")
      for i = 0, #src do
        local ok, tree, diags = pcall(parser.parse, src:sub(1, i), "t.zen")
        assert.is_true(ok, tree)
        assert.is_table(diags)
      end
    end)

    it("survives illegal bytes and astral runes anywhere", function()
      local src = golden.read(golden.dir .. "/blog.zen")
      local junk = { "\255", "\240\159\152\128", "\0", "\"", "{", "}", "(", "@" }
      for i = 1, #src, 7 do
        local bad = src:sub(1, i) .. junk[i % #junk + 1] .. src:sub(i + 1)
        local ok, tree = pcall(parser.parse, bad, "t.zen")
        assert.is_true(ok, tree)
      end
    end)

    it("parses a 5 MB file in bounded time", function()
      local unit = golden.read(golden.dir .. "/blog.zen")
      local src = string.rep(unit, math.ceil(5 * 1024 * 1024 / #unit))
      local t0 = os.clock()
      local tree, diags = parse(src)
      assert.are.same({}, diags)
      assert.is_true(#tree.decls > 10000)
      assert.is_true(os.clock() - t0 < 30)
    end)

    it("raises on a non-string source", function()
      assert.has_error(function() parser.parse(nil) end, "parse: src must be a string")
    end)
  end)
end)

describe("dsl.diagnostics", function()
  it("formats file:line:col: [phase] message with the line and a caret under the column", function()
    local d = { file = "a.zen", line = 2, col = 4, phase = "parse", severity = "error", message = "bad" }
    assert.are.equal("a.zen:2:4: [parse] bad\n\t\195\169 x\n\t  ^",
      diagnostics.format(d, "first\n\t\195\169 x\nthird"))
  end)

  it("marks warnings and sorts by file, line and column", function()
    local list = {
      { file = "b.zen", line = 1, col = 1, phase = "parse", severity = "error", message = "3" },
      { file = "a.zen", line = 2, col = 1, phase = "parse", severity = "warning", message = "2" },
      { file = "a.zen", line = 1, col = 5, phase = "lex", severity = "error", message = "1" },
    }
    assert.are.equal("a.zen:1:5: [lex] 1\na.zen:2:1: [parse] warning: 2\nb.zen:1:1: [parse] 3\n",
      diagnostics.render(list))
    assert.are.same({ 2, 1 }, { diagnostics.count(list) })
    assert.are.equal(1, diagnostics.exit_code(list))
    assert.are.equal(0, diagnostics.exit_code({ list[2] }))
  end)
end)
