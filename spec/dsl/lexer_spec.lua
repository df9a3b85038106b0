local lexer = require "zever.lexer"
local golden = require "spec.dsl.golden"

-- The tokens of src as text, one a line: "line:col KIND text" (plus "= value" for strings).
local function dump_tokens(src)
  local t = lexer.lex(src)
  local out = {}
  for i = 1, t.n do
    local text = src:sub(t.pos[i], t.pos[i] + t.len[i] - 1)
    local line = string.format("%d:%d %s %s", t.line[i], t.col[i], t.kind[i], text)
    if t.value[i] then line = line .. " = " .. string.format("%q", t.value[i]) end
    out[#out + 1] = line
  end
  return table.concat(out, "\n") .. "\n"
end

-- "KIND text" of every token but EOF, space-separated: the compact form of the golden rows.
local function kinds(src)
  local t = lexer.lex(src)
  local out = {}
  for i = 1, t.n - 1 do
    local text = src:sub(t.pos[i], t.pos[i] + t.len[i] - 1)
    out[#out + 1] = t.kind[i] == text and text or (t.kind[i] .. ":" .. text)
  end
  return table.concat(out, " ")
end

local function messages(src)
  local _, diags = lexer.lex(src)
  local out = {}
  for _, d in ipairs(diags) do out[#out + 1] = string.format("%d:%d %s", d.line, d.col, d.message) end
  return out
end

describe("zever.lexer", function()
  describe("lex", function()
    -- { name, input, tokens }
    local rows = {
      { "identifiers and keywords", "entity Task index idx _x9",
        "KEYWORD:entity IDENT:Task KEYWORD:index IDENT:idx IDENT:_x9" },
      { "every punctuation mark", "{ } ( ) [ ] : , -> @ ? .", "{ } ( ) [ ] : , -> @ ? ." },
      { "integers, negatives and floats", "0 42 -3 1.5 -0.25 2e5 1.5E-3",
        "INT:0 INT:42 INT:-3 FLOAT:1.5 FLOAT:-0.25 FLOAT:2e5 FLOAT:1.5E-3" },
      { "durations in Go units, days and micro signs", "30s 1h30m 1.5h 300ms 2d 2\194\181s",
        "DURATION:30s DURATION:1h30m DURATION:1.5h DURATION:300ms DURATION:2d DURATION:2\194\181s" },
      { "a number glued to a bad unit is one ILLEGAL token", "12abc x", "ILLEGAL:12abc IDENT:x" },
      { "strings with escapes", [["a\"b" "\n\t\\" "\u{48}"]],
        [[STRING:"a\"b" STRING:"\n\t\\" STRING:"\u{48}"]] },
      { "comments run to the end of the line", "a // b c\nd", "IDENT:a COMMENT:// b c IDENT:d" },
      { "an optional type", "due: timestamp?", "IDENT:due : IDENT:timestamp ?" },
      { "an arrow is one token, a lone minus is illegal", "a->b - c", "IDENT:a -> IDENT:b ILLEGAL:- IDENT:c" },
      { "a byte order mark is skipped", "\239\187\191entity", "KEYWORD:entity" },
      { "illegal ASCII, runes and bytes", "; \195\169 \240\159\152\128 \255",
        "ILLEGAL:; ILLEGAL:\195\169 ILLEGAL:\240\159\152\128 ILLEGAL:\255" },
      { "an unterminated string ends at its line", "\"abc\nx", "STRING:\"abc IDENT:x" },
    }
    for _, row in ipairs(rows) do
      it("lexes " .. row[1], function()
        assert.are.equal(row[3], kinds(row[2]))
      end)
    end

    -- { name, input, diagnostics }
    local diag_rows = {
      { "illegal ASCII", "a ; b", { '1:3 illegal character U+003B ";"' } },
      { "a control character", "a\1", { "1:2 illegal character U+0001" } },
      { "a stray byte", "\128", { "1:1 illegal byte 0x80 (not UTF-8)" } },
      { "an overlong encoding", "\192\175", { "1:1 illegal byte 0xC0 (not UTF-8)",
        "1:2 illegal byte 0xAF (not UTF-8)" } },
      { "a surrogate", "\237\160\128", { "1:1 illegal byte 0xED (not UTF-8)",
        "1:2 illegal byte 0xA0 (not UTF-8)", "1:3 illegal byte 0x80 (not UTF-8)" } },
      { "an astral rune", "x \240\159\152\128", { '1:3 illegal character U+1F600 "\240\159\152\128"' } },
      { "a bad duration", "base: 10q", { 'invalid duration "10q": unknown unit "q"' } },
      { "an unknown escape", [["a\qb"]], { '1:3 unknown escape "\\q" in string' } },
      { "a bad \\u escape", [["\u{D800}"]], { "1:2 invalid \\u{...} escape in string (want 1 to 6 hex "
        .. "digits of a rune up to 10FFFF, not a surrogate)" } },
      { "invalid UTF-8 in a string", "\"a\255\"", { "1:3 invalid UTF-8 byte 0xFF in string" } },
      { "an unterminated string", "x: \"abc", { "1:4 unterminated string (a string ends on its line)" } },
      { "a lone slash", "/ x", { '1:1 illegal character U+002F "/"' } },
    }
    for _, row in ipairs(diag_rows) do
      it("reports " .. row[1], function()
        local got = messages(row[2])
        assert.are.equal(#row[3], #got)
        for i, want in ipairs(row[3]) do
          if want:match("^%d+:%d+ ") then
            assert.are.equal(want, got[i])
          else
            assert.are.equal(want, got[i]:gsub("^%d+:%d+ ", ""))
          end
        end
      end)
    end

    it("counts columns in code points and keeps byte positions", function()
      local src = "\"\195\169\240\159\152\128\" x\n  y"
      local t = lexer.lex(src)
      assert.are.same({ "STRING", "IDENT", "IDENT", "EOF" }, t.kind)
      assert.are.same({ 1, 6, 3, 4 }, t.col)
      assert.are.same({ 1, 1, 2, 2 }, t.line)
      assert.are.same({ 1, 10, 14, 15 }, t.pos)
      assert.are.equal("\195\169\240\159\152\128", t.value[1])
    end)

    it("decodes \\u escapes to UTF-8, astral runes too", function()
      local t = lexer.lex([["\u{e9}\u{1F600}\0"]])
      assert.are.equal("\195\169\240\159\152\128\0", t.value[1])
    end)

    it("ends every token list with EOF, even for empty input", function()
      local t = lexer.lex("")
      assert.are.equal(1, t.n)
      assert.are.equal("EOF", t.kind[1])
    end)

    it("keeps going after 9,000 illegal runes and reports each one", function()
      local src = string.rep("\194\167 ", 9000) .. "entity"
      local t, diags = lexer.lex(src)
      assert.are.equal(9000, #diags)
      assert.are.equal("KEYWORD", t.kind[t.n - 1])
      assert.are.equal('illegal character U+00A7 "\194\167"', diags[9000].message)
      assert.are.equal(17999, diags[9000].col)
    end)

    it("raises on a non-string source", function()
      assert.has_error(function() lexer.lex({}) end)
    end)
  end)

  describe("lex(src, true), the parser's form", function()
    -- The tokens of the parser's form as "KIND:text" (punctuation as itself), each followed by
    -- [doc] when it has a doc comment, EOF included.
    local function significant(src)
      local t = lexer.lex(src, true)
      local out = {}
      for i = 1, t.n do
        local text = src:sub(t.pos[i], t.pos[i] + t.len[i] - 1)
        local s = t.kind[i] == text and text or (t.kind[i] .. ":" .. text)
        if t.doc[i] then s = s .. "[" .. t.doc[i] .. "]" end
        out[#out + 1] = s
      end
      return table.concat(out, " ")
    end

    -- { name, input, tokens with their doc comments }
    local rows = {
      { "drops comments and illegal tokens", "a // x\n; b", "IDENT:a IDENT:b EOF:" },
      { "gives a token the comment on the line above, without // and one space",
        "//  two spaces\nx", "IDENT:x[ two spaces] EOF:" },
      { "joins a block of comments on consecutive lines with newlines",
        "// one\n//two\n// three\nentity", "KEYWORD:entity[one\ntwo\nthree] EOF:" },
      { "gives nothing across a blank line", "// far\n\nx", "IDENT:x EOF:" },
      { "starts a new block after a gap", "// old\n\n// new\nx", "IDENT:x[new] EOF:" },
      { "takes no comment after code on its line as a doc comment",
        "a // trailing\nb", "IDENT:a IDENT:b EOF:" },
      { "ends a block at a comment after code", "// doc\na // trailing\n// next\nb",
        "IDENT:a[doc] IDENT:b[next] EOF:" },
      { "gives a doc comment to one token only", "// doc\na b\nc",
        "IDENT:a[doc] IDENT:b IDENT:c EOF:" },
      { "looks through illegal tokens", "// doc\n; x", "IDENT:x[doc] EOF:" },
      { "keeps an empty comment as an empty line", "//\n// b\nx", "IDENT:x[\nb] EOF:" },
      { "gives the end of the file a doc comment too", "x\n// tail\n", "IDENT:x EOF:[tail]" },
      { "ends a comment before a carriage return", "// crlf\r\nx", "IDENT:x[crlf] EOF:" },
    }
    for _, row in ipairs(rows) do
      it(row[1], function()
        assert.are.equal(row[3], significant(row[2]))
      end)
    end

    it("gives a doc comment longer than 64 KB whole, and lexes again after it", function()
      local lines = {}
      for i = 1, 1200 do lines[i] = string.format("line %04d ", i) .. string.rep("x", 60) end
      local t = lexer.lex("// " .. table.concat(lines, "\n// ") .. "\nentity", true)
      assert.are.equal(table.concat(lines, "\n"), t.doc[1])
      assert.is_true(#t.doc[1] > 65536)
      assert.are.equal("short", lexer.lex("// short\nx", true).doc[1])
    end)

    it("clears what a longer call before it left in the arrays it reuses", function()
      lexer.lex(string.rep("name: string\n", 50), true)
      local t = lexer.lex("a b", true)
      assert.are.equal(3, t.n)
      for _, key in ipairs({ "kind", "pos", "len", "line", "col" }) do
        assert.are.equal(3, #t[key], key)
        assert.is_nil(t[key][4], key)
        assert.is_nil(next(t[key], 3), key)
      end
      assert.are.same({ "IDENT", "IDENT", "EOF" }, t.kind)
    end)

    it("gives a file of more than 65,536 tokens arrays of its own, and reuses again after", function()
      local small = lexer.lex("x", true)
      local kind = small.kind
      local big = lexer.lex(string.rep("x ", 70000), true)
      assert.are.equal(70001, big.n)
      assert.are_not.equal(kind, big.kind)
      assert.are.equal("EOF", big.kind[70001])
      local again = lexer.lex("y z", true)
      assert.are.equal(kind, again.kind)
      assert.are.same({ "IDENT", "IDENT", "EOF" }, again.kind)
      assert.are.equal(70001, big.n) -- the big file's arrays are its own
      assert.are.equal("IDENT", big.kind[70000])
    end)

    it("moves string values with their tokens and keeps every diagnostic", function()
      local t, diags = lexer.lex('; // c\n"a\\tb" ; "c"', true)
      assert.are.same({ "STRING", "STRING", "EOF" }, t.kind)
      assert.are.same({ "a\tb", "c" }, { t.value[1], t.value[2] })
      assert.are.equal(2, #diags)
    end)

    -- The two forms against each other on the golden sources: every token but comments and
    -- ILLEGAL, in order, with the same fields, and the text of the names.
    for _, name in ipairs({ "tasks", "errors", "blog", "go_forms" }) do
      it("keeps every other token of " .. name .. ".zen as the full form has it", function()
        local src = assert(golden.read(golden.dir .. "/" .. name .. ".zen"))
        local full, part = lexer.lex(src), lexer.lex(src, true)
        local j = 0
        for i = 1, full.n do
          local kd = full.kind[i]
          if kd ~= "COMMENT" and kd ~= "ILLEGAL" then
            j = j + 1
            assert.are.same(
              { kd, full.pos[i], full.len[i], full.line[i], full.col[i], full.value[i] },
              { part.kind[j], part.pos[j], part.len[j], part.line[j], part.col[j], part.value[j] })
            local is_name = kd == "IDENT" or kd == "KEYWORD"
            assert.are.equal(is_name and src:sub(full.pos[i], full.pos[i] + full.len[i] - 1) or nil,
              part.text[j])
          end
        end
        assert.are.equal(j, part.n)
      end)
    end
  end)

  describe("golden tokens", function()
    for _, name in ipairs({ "tasks", "errors" }) do
      it("lexes " .. name .. ".zen as " .. name .. ".tokens says", function()
        local src = assert(golden.read(golden.dir .. "/" .. name .. ".zen"))
        local actual = dump_tokens(src)
        assert.are.equal(golden.expected(golden.dir .. "/" .. name .. ".tokens", actual), actual)
      end)
    end
  end)
end)
