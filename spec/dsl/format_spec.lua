local format = require "dsl.format"
local parser = require "dsl.parser"
local resolver = require "dsl.resolver"
local ir = require "dsl.ir"
local diagnostics = require "dsl.diagnostics"
local golden = require "spec.dsl.golden"

local function fmt(src)
  return format.format(src, "t.zen")
end

-- A dump with every position left out (@line:col, name_line, name_col).
local function unplaced(text)
  return (text:gsub(" @%d+:%d+", ""):gsub(" name_col=%d+", ""):gsub(" name_line=%d+", ""))
end

-- The tree, the IR and the resolver's messages of src, without positions (messages that cite
-- another position have it replaced by L:C).
local function meaning(src)
  local tree = parser.parse(src, "dsl/testdata/t.zen")
  local out, diags = resolver.resolve({ tree })
  local messages = {}
  for i, d in ipairs(diagnostics.sort(diags)) do
    messages[i] = d.severity .. " " .. d.message:gsub("%d+:%d+", "L:C")
  end
  return unplaced(parser.dump(tree)), unplaced(ir.dump(out)), messages
end

-- The fixtures that parse without errors (the others are refused).
local function valid_fixtures()
  local names = {}
  for _, name in ipairs(golden.fixtures()) do
    local _, diags = parser.parse(golden.read(golden.dir .. "/" .. name .. ".zen"), name)
    if diagnostics.count(diags) == 0 then names[#names + 1] = name end
  end
  return names
end

describe("dsl.format", function()
  describe("golden fixtures", function()
    it("treats the fixtures without syntax errors as the valid ones", function()
      assert.are.same({ "blog", "go_errors", "go_forms", "go_reference", "resolve_errors", "tasks" },
        valid_fixtures())
    end)

    for _, name in ipairs(valid_fixtures()) do
      local base = golden.dir .. "/" .. name
      it("formats " .. name .. ".zen into " .. name .. ".fmt", function()
        local out, err = format.format(assert(golden.read(base .. ".zen")), name .. ".zen")
        assert.is_nil(err)
        assert.are.equal(golden.expected(base .. ".fmt", out), out)
      end)

      it("formats " .. name .. ".zen idempotently", function()
        local once = assert(fmt(golden.read(base .. ".zen")))
        assert.are.equal(once, fmt(once))
      end)

      it("keeps the tree, the IR and the resolver's findings of " .. name .. ".zen", function()
        local src = golden.read(base .. ".zen")
        local tree, out, messages = meaning(src)
        local ftree, fout, fmessages = meaning(assert(fmt(src)))
        assert.are.equal(tree, ftree)
        assert.are.equal(out, fout)
        assert.are.same(messages, fmessages)
      end)
    end

    for _, name in ipairs(golden.fixtures()) do
      local src = golden.read(golden.dir .. "/" .. name .. ".zen")
      local _, pdiags = parser.parse(src, name)
      if diagnostics.count(pdiags) > 0 then
        it("refuses " .. name .. ".zen with the parser's diagnostics", function()
          local out, err = fmt(src)
          assert.is_nil(out)
          assert.are.equal("syntax", err.code)
          local _, diags = parser.parse(src, "t.zen")
          assert.are.same(diags, err.diagnostics)
        end)
      end
    end
  end)

  describe("re-spaced fixtures", function()
    -- Each valid fixture's tokens joined again by random separators: spaces, tabs, blank lines,
    -- comments after code and on their own lines (a fixed seed, so a failure repeats). The
    -- variants that still parse cleanly must format idempotently into the same tree.
    local SEPARATORS = { " ", "  ", "\t", "\n", "\n\n", " // after\n", "\n// own\n",
      "\n\n// apart\n\n" }
    local lexer = require "zever.lexer"

    for _, name in ipairs(valid_fixtures()) do
      it("keeps the tree of 150 re-spaced variants of " .. name .. ".zen, idempotently", function()
        local src = golden.read(golden.dir .. "/" .. name .. ".zen")
        local toks = lexer.lex(src)
        local words = {}
        for i = 1, toks.n do
          if toks.kind[i] ~= "COMMENT" and toks.kind[i] ~= "EOF" then
            words[#words + 1] = src:sub(toks.pos[i], toks.pos[i] + toks.len[i] - 1)
          end
        end
        math.randomseed(9)
        local formatted = 0
        for _ = 1, 150 do
          local parts = {}
          for _, w in ipairs(words) do
            parts[#parts + 1] = w
            parts[#parts + 1] = math.random() < 0.6 and " " or SEPARATORS[math.random(#SEPARATORS)]
          end
          local variant = table.concat(parts)
          local out = fmt(variant)
          if out then
            formatted = formatted + 1
            assert.are.equal((meaning(variant)), (meaning(out)), variant)
            assert.are.equal(out, fmt(out), variant)
          end
        end
        assert.is_true(formatted > 30)
      end)
    end
  end)

  describe("format", function()
    -- { name, input, expected [, doc of the first declaration when formatting changes it] }
    local rows = {
      { "indents by two and puts one member on a line",
        "entity A { id: uuid @primary  name: string? }",
        "entity A {\n  id: uuid @primary\n  name: string?\n}\n" },
      { "collapses blank lines between declarations to one and adds one where none was",
        "entity A { x: int32 }\n\n\n\nenum B { c, d }\njob C() { queue: q }",
        "entity A {\n  x: int32\n}\n\nenum B {\n  c\n  d\n}\n\njob C() {\n  queue: q\n}\n" },
      { "keeps at most one blank line between members and none at a block's edges",
        "entity A {\n\n  x: int32\n\n\n  y: int32\n  z: int32\n\n}\n",
        "entity A {\n  x: int32\n\n  y: int32\n  z: int32\n}\n" },
      { "keeps attributes and arguments in source order with their literal spelling",
        'entity A {\n  s: string   @validate( max_len :200,min_len: 1 )@default( "a\\u{1F4DD}\\n" )\n'
          .. "  f: float64 @default(-1.5e3)\n}",
        'entity A {\n  s: string @validate(max_len: 200, min_len: 1) @default("a\\u{1F4DD}\\n")\n'
          .. "  f: float64 @default(-1.5e3)\n}\n" },
      { "prints list, optional and qualified types",
        "message M { a: [ [x.Y]? ]  b: accounts . User? }",
        "message M {\n  a: [[x.Y]?]\n  b: accounts.User?\n}\n" },
      { "keeps doc comments, trailing comments and detached comments in place",
        "// file header\n\n// Doc of A.\nentity A { // opens A\n  // Doc of x.\n  x: int32 // about x\n"
          .. "  // last in A\n} // after A\n// trailer\n",
        "// file header\n\n// Doc of A.\nentity A { // opens A\n  // Doc of x.\n  x: int32 // about x\n"
          .. "  // last in A\n} // after A\n\n// trailer\n" },
      { "cuts trailing blanks from comments (and so from doc comments)",
        "// doc   \nentity A { x: int32 }   \n",
        "// doc\nentity A {\n  x: int32\n}\n", "doc" },
      { "keeps a blank line between a comment and a declaration so it stays no doc comment",
        "// not doc\n\nentity A { x: int32 }",
        "// not doc\n\nentity A {\n  x: int32\n}\n" },
      { "spreads rpc options over lines and keeps services' options and rpcs in source order",
        'service S { base: "/x" rpc A(id: uuid, n: int32 @validate(gt: 0),) -> T { http: GET "/a/{id}"'
          .. "  auth: none  errors: { not_found already_exists(\"x\") } }\n"
          .. "  rpc B() {} prefix: \"/v1\" }",
        'service S {\n  base: "/x"\n  rpc A(id: uuid, n: int32 @validate(gt: 0)) -> T {\n'
          .. '    http: GET "/a/{id}"\n    auth: none\n    errors: { not_found, already_exists("x") }\n'
          .. '  }\n  rpc B()\n  prefix: "/v1"\n}\n' },
      { "prints option groups, tuples and calls",
        "job J(a: uuid) { retry: max_attempts(5) ,backoff(exponential, base: 10s)  timeout: 1h30m }",
        "job J(a: uuid) {\n  retry: max_attempts(5), backoff(exponential, base: 10s)\n  timeout: 1h30m\n}\n" },
      { "prints relations with and without option blocks and indexes",
        "entity A { many_to_many tags: Tag { join_table: a_tags }  has_one b: B @foreign_key(a_id)"
          .. "  index( x ,y ) @unique }",
        "entity A {\n  many_to_many tags: Tag {\n    join_table: a_tags\n  }\n"
          .. "  has_one b: B @foreign_key(a_id)\n  index(x, y) @unique\n}\n" },
      { "prints empty blocks on one line and keeps a comment inside one",
        "entity A {}\nenum B {\n  // none yet\n}\nschedule C {}",
        "entity A {}\n\nenum B {\n  // none yet\n}\n\nschedule C {}\n" },
      { "drops commas after enum values and keeps their attributes",
        "enum E { a, b @renamed_from(\"bb\"), c, }",
        "enum E {\n  a\n  b @renamed_from(\"bb\")\n  c\n}\n" },
      { "prints an empty file as empty and a comment-only file as its comments",
        "\n\n// just this\n\n\n// and this\n", "// just this\n\n// and this\n" },
      { "skips a byte order mark and turns CRLF into LF",
        "\239\187\191entity A {\r\n  x: int32 // c\r\n}\r\n", "entity A {\n  x: int32 // c\n}\n" },
    }
    for _, row in ipairs(rows) do
      it(row[1], function()
        local out, err = fmt(row[2])
        assert.is_nil(err)
        assert.are.equal(row[3], out)
        assert.are.equal(out, fmt(out))
        local tree, resolved = meaning(row[2])
        local ftree, fresolved = meaning(out)
        if row[4] then
          assert.are.equal(row[4], parser.parse(out).decls[1].doc)
          assert.are_not.equal(tree, ftree)
        else
          assert.are.equal(tree, ftree)
          assert.are.equal(resolved, fresolved)
        end
      end)
    end

    it("formats an empty file to an empty file", function()
      assert.are.equal("", fmt(""))
    end)

    it("puts parameters one a line when a comment sits among them, keeping their docs", function()
      local src = "service S {\n  rpc A( // the inputs\n    a: int32, // about a\n    // Doc of b.\n    b: uuid\n  )"
        .. " -> T { auth: none }\n}\njob J(\n\n  // Doc of id.\n  id: uuid) {}"
      local out = fmt(src)
      assert.are.equal("service S {\n  rpc A( // the inputs\n    a: int32, // about a\n    // Doc of b.\n"
        .. "    b: uuid,\n  ) -> T {\n    auth: none\n  }\n}\n\njob J(\n  // Doc of id.\n  id: uuid,\n)\n", out)
      assert.are.equal(out, fmt(out))
      assert.are.equal((meaning(src)), (meaning(out)))
      assert.are.equal("Doc of b.", parser.parse(out).decls[1].rpcs[1].params[2].doc)
    end)

    it("moves a comment from inside a member's line after it, a blank line from the next member", function()
      local src = "entity A {\n  x: string @validate(\n    // inside\n    min_len: 1)\n  y: int32\n"
        .. "  z: [\n    // in a type\n    int32]\n}"
      local out = fmt(src)
      assert.are.equal("entity A {\n  x: string @validate(min_len: 1)\n  // inside\n\n  y: int32\n"
        .. "  z: [int32]\n  // in a type\n}\n", out)
      assert.are.equal(out, fmt(out))
      assert.are.equal((meaning(src)), (meaning(out))) -- y did not get "inside" as its doc
    end)

    it("formats a file with warnings only", function()
      local _, diags = parser.parse("entity A {}", "t.zen")
      assert.are.equal(1, #diags)
      assert.are.equal("entity A {}\n", fmt("entity A {}"))
    end)
  end)

  describe("refusal", function()
    -- { name, input, phase of the first error }
    local rows = {
      { "refuses an illegal character", "entity A { x: int32 ; }", "lex" },
      { "refuses an illegal rune outside strings", "entity Caf\226\130\172 { x: int32 }", "lex" },
      { "refuses bytes that are not UTF-8", "entity A { x: int32 }\255", "lex" },
      { "refuses a bad duration", "job J() { timeout: 10q }", "lex" },
      { "refuses a missing type", "entity A { x: @unique }", "parse" },
      { "refuses an unclosed block", "entity A { x: int32", "parse" },
      { "refuses a declaration without a name", "enum { a }", "parse" },
    }
    for _, row in ipairs(rows) do
      it(row[1] .. " with diagnostics", function()
        local out, err = fmt(row[2])
        assert.is_nil(out)
        assert.are.equal("syntax", err.code)
        assert.is_truthy(err.message:find("not formatted", 1, true))
        local first
        for _, d in ipairs(err.diagnostics) do
          if d.severity == "error" then first = first or d end
        end
        assert.are.equal(row[3], first.phase)
      end)
    end

    it("raises when src is not a string", function()
      assert.has_error(function() format.format(nil) end, "format: src must be a string")
    end)
  end)
end)
