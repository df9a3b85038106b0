-- dsl.parser: the .zen parser. Tokens from the C lexer (zever.lexer) in, a tree plus diagnostics
-- out. The grammar it implements is dsl/GRAMMAR.md; keep the two in step.
--
--   parser.parse(src, file) -> tree, diags
--   parser.dump(tree)       -> the tree as indented text (the golden .tree format)
--
-- It never throws on any input: a syntax error becomes a diagnostic, the parser skips to the next
-- member of the enclosing block (or the next declaration at depth 0) and goes on. One error is
-- reported per skip, so a bad line does not cascade. Nesting of values and types is bounded by
-- M.MAX_DEPTH; deeper input is reported and skipped with a counter, not recursion.
--
-- Every node is a table with kind, line, col (1-based, columns in code points) and pos (1-based
-- byte); declarations and members also carry doc, the `//` block directly above them. It must not
-- resolve names or check types: that is the resolver's job.

local lexer = require "zever.lexer"

local concat, sort = table.concat, table.sort
local format, sub = string.format, string.sub
local tonumber, type, pairs, ipairs = tonumber, type, pairs, ipairs

local M = {}

-- The parser runs once per file in a short-lived command, where LuaJIT's trace recorder costs
-- more than it wins: recursive descent aborts traces, and the first parse of a 200-entity schema
-- took twice as long with the JIT on (60 ms against 32 ms, bench/check_bench.sh; again in
-- session 8: 236 M instructions for `zever check` against 183 M interpreted). The interpreter
-- runs every function of this file.
if jit then jit.off(true, true) end

M.MAX_DEPTH = 100

local DECLS = { entity = true, message = true, enum = true, service = true, job = true,
  schedule = true }
local RELATIONS = { has_many = true, has_one = true, belongs_to = true, many_to_many = true }
local OPEN = { ["{"] = "}", ["("] = ")", ["["] = "]" }
local CLOSE = { ["}"] = true, [")"] = true, ["]"] = true }
local VALUE_START = { STRING = true, INT = true, FLOAT = true, DURATION = true, IDENT = true,
  KEYWORD = true, ["{"] = true, ["["] = true }

-- The state of the parse in progress lives in upvalues of the functions below, not in a state
-- table with methods: the interpreter reads an upvalue in one instruction, where `self:at(x)`
-- costs a hash lookup for the method, a call frame and another lookup per field (session 8:
-- with the nodes built whole, below, the parse of the 200-entity bench schema went from 121 M to
-- 76 M instructions). parse() is not re-entrant (nothing it calls can call it back) and clears
-- the state when it is done.
--   src, file      the text and its name for diagnostics
--   kind ... vals  the significant tokens (comments and ILLEGAL dropped; the lexer has reported
--                  the latter) as parallel arrays: kind, pos, len, line, col, STRING values
--   doc[k]         the `//` block directly above token k
--   txt[k]         the text of an IDENT or KEYWORD token (nil for the others: text(k) then)
--   ntok, cur      the number of tokens (the last one EOF) and the cursor
--   diags, panic   the diagnostics; whether an error was reported since the last recovery
--   depth, nerr, last_err   the nesting depth, the errors so far, the token of the last one
local src, file, kind, pos, len, line, col, vals, doc, txt
local ntok, cur, diags, panic, depth, nerr, last_err

-- The lexer's arrays become the parser's. The lexer leaves out comments and ILLEGAL tokens (it
-- has reported the latter) and collects the doc comments (lexer.lex(src, true), host/lexer/
-- l_lexer.c): that pass was Lua here until session 9, and cost 19 M of the 145 M instructions of
-- `zever check` on the 200-entity bench schema.
local function start(text_, file_)
  local toks, lexdiags = lexer.lex(text_, true)
  src, file = text_, file_
  kind, pos, len, line, col, vals, doc, txt = toks.kind, toks.pos, toks.len, toks.line, toks.col,
    toks.value, toks.doc, toks.text
  ntok, cur, diags, panic, depth, nerr, last_err = toks.n, 1, {}, false, 0, 0, nil
  for i, d in ipairs(lexdiags) do
    d.file = file
    diags[i] = d
  end
end

-- The source text of token k. A name's (IDENT, KEYWORD) is txt[k], which the sites that know they
-- have one read directly.
local function text(k)
  return txt[k] or sub(src, pos[k], pos[k] + len[k] - 1)
end

local function advance()
  local k = cur
  if k < ntok then cur = k + 1 end
  return k
end

-- A name is an identifier or a keyword: a field may be called "index" or "message".
local function is_name(k)
  local kd = kind[k]
  return kd == "IDENT" or kd == "KEYWORD"
end

local function is_keyword(word, k)
  return kind[k] == "KEYWORD" and txt[k] == word
end

-- Whether token k starts a line (nothing before it on its line).
local function first_on_line(k)
  return k == 1 or line[k - 1] < line[k]
end

-- "saga Name {": "saga" is a contextual word (an identifier elsewhere), as in the Go grammar.
local function saga_at(k)
  return kind[k] == "IDENT" and kind[k + 1] == "IDENT" and txt[k] == "saga"
end

-- Whether token k starts a declaration: a declaration keyword, or "saga Name".
local function decl_start(k)
  return (kind[k] == "KEYWORD" and DECLS[txt[k]] ~= nil) or saga_at(k)
end

-- "entity Name" at column 1: a declaration that ends any block left open above it.
local function decl_at_col1(k)
  return col[k] == 1 and decl_start(k) and kind[k + 1] == "IDENT"
end

local function describe(k)
  local kd = kind[k]
  if kd == "EOF" then return "end of file" end
  if kd == "IDENT" then return format('"%s"', text(k)) end
  if kd == "KEYWORD" then return format('keyword "%s"', text(k)) end
  if kd == "STRING" then return "a string" end
  if kd == "INT" or kd == "FLOAT" then return format("number %s", text(k)) end
  if kd == "DURATION" then return format("duration %s", text(k)) end
  return format('"%s"', kd)
end

local function diag(k, severity, msg)
  diags[#diags + 1] = { file = file, phase = "parse", severity = severity, message = msg,
    line = line[k], col = col[k], pos = pos[k], len = len[k] }
end

-- Reports a syntax error at token k unless one was reported since the last recovery; returns nil
-- so that callers can `return err(...)`.
local function err(k, msg)
  if not panic then
    panic = true
    last_err = k
    nerr = nerr + 1
    diag(k, "error", msg)
  end
  return nil
end

local function expected(what)
  return err(cur, format("expected %s, found %s", what, describe(cur)))
end

-- Consumes a token of kind kd or reports "expected what".
local function expect(kd, what)
  if kind[cur] == kd then return advance() end
  return expected(what or format('"%s"', kd))
end

-- Nodes are built where they are needed, each with every key it gets present in its
-- constructor: a constant kind, and false for the rest, stored over at once (a node then never
-- grows its hash part, which costs a rehash, an allocation and a free). The false stand-ins
-- are needed because `luajit -b` (build/bc) keeps only the constant keys of a constructor's
-- template: `{ line = line[k] }` would have no slot for line once precompiled. A key stored nil
-- keeps its slot and is invisible to pairs() and dump().

-- Skips a balanced run from the opener at the cursor to its closer (or EOF) with a counter.
local function skip_balanced()
  local d = 0
  repeat
    local kd = kind[cur]
    if kd == "EOF" then return end
    if OPEN[kd] then d = d + 1 elseif CLOSE[kd] then d = d - 1 end
    advance()
  until d <= 0
end

-- Enters one level of nesting; false (with an error, and the nested run skipped) past the guard.
local function enter()
  if depth >= M.MAX_DEPTH then
    err(cur, format("nesting deeper than %d levels", M.MAX_DEPTH))
    skip_balanced()
    return false
  end
  depth = depth + 1
  return true
end

local function leave()
  depth = depth - 1
end

-- Recovery at depth 0: skip to the next declaration keyword outside any bracket (or at column 1,
-- which ends brackets left open).
local function sync_top()
  local d = 0
  while true do
    local k, kd = cur, kind[cur]
    if kd == "EOF" then break end
    if decl_start(k) and (d == 0 or decl_at_col1(k)) then break end
    if OPEN[kd] then
      d = d + 1
    elseif CLOSE[kd] and d > 0 then
      d = d - 1
    end
    advance()
  end
  panic = false
end

-- Whether token k starts a member of a block: a name and ":", a relation, index( or rpc.
local function member_start(k)
  if not is_name(k) then return false end
  local nxt = kind[k + 1]
  if nxt == ":" then return true end
  local t = txt[k]
  if t == "step" and nxt == "IDENT" and kind[k + 2] == "{" then return true end
  if kind[k] == "KEYWORD" then
    if RELATIONS[t] and is_name(k + 1) then return true end
    if t == "index" and nxt == "(" then return true end
    if t == "rpc" and nxt == "IDENT" then return true end
  end
  return false
end

-- Recovery inside a block whose members start at column mcol, after the member that began at
-- token first failed: skip to the next member at the block's depth, or the block's "}". A member
-- start or "}" at the head of a line, at or left of mcol, counts even inside brackets left open
-- (an unclosed "(" does not eat the block).
local function sync_member(mcol, first)
  local d = 0
  while true do
    local k, kd = cur, kind[cur]
    if kd == "EOF" or decl_at_col1(k) then break end
    local head = first_on_line(k) and col[k] <= mcol
    if kd == "}" and (d == 0 or (head and col[k] < mcol)) then break end
    if k ~= first and (d == 0 or head) and member_start(k) then break end
    if OPEN[kd] then
      d = d + 1
    elseif CLOSE[kd] and d > 0 then
      d = d - 1
    end
    advance()
  end
  panic = false
end

-- A block "{" member* "}". member() parses one member and returns its node or nil after an
-- error. Returns the list of members (and reports a block left open).
local function block(member)
  local items = {}
  local open = cur
  if not expect("{", '"{"') then return items end
  local mcol
  while true do
    local k, kd = cur, kind[cur]
    if kd == "}" then
      advance()
      break
    end
    if kd == "EOF" or decl_at_col1(k) then
      panic = last_err == k -- after "expected x, found end of file", say no more
      err(k, format('expected "}" to close the block opened at %d:%d, found %s',
        line[open], col[open], describe(k)))
      panic = false
      break
    end
    mcol = mcol or col[k]
    local nd = member()
    if nd then
      items[#items + 1] = nd
    else
      sync_member(mcol, k)
      if cur == k then advance() end
    end
  end
  return items
end

-- name { "." name } at the cursor, joined with "." (no table for the usual single name).
local function dotted()
  local name = txt[advance()]
  if not (kind[cur] == "." and is_name(cur + 1)) then return name end
  local parts = { name }
  while kind[cur] == "." and is_name(cur + 1) do
    advance()
    parts[#parts + 1] = txt[advance()]
  end
  return concat(parts, ".")
end

-- type := ( "[" type "]" | name { "." name } ) [ "?" ]
local function parse_type()
  local k = cur
  local t = { kind = "type", line = false, col = false, pos = false, name = false,
    optional = false }
  t.line, t.col, t.pos, t.name, t.optional = line[k], col[k], pos[k], nil, nil
  if kind[k] == "[" then
    if not enter() then return nil end
    advance()
    local elem = parse_type()
    leave()
    if not elem then return nil end
    if not expect("]", '"]" to close the list type') then return nil end
    t.list = true
    t.of = elem
  elseif is_keyword("enum", k) and kind[k + 1] == "(" then
    -- An inline enum, enum(low, high): the resolver gives it a named enum of its own.
    advance()
    advance()
    t.name = "enum"
    t.values = {}
    repeat
      if not is_name(cur) then return expected("an enum value") end
      local v = { kind = "value", line = false, col = false, pos = false, name = false }
      v.line, v.col, v.pos = line[cur], col[cur], pos[cur]
      v.name = txt[advance()]
      t.values[#t.values + 1] = v
      local more = kind[cur] == ","
      if more then advance() end
    until not more or kind[cur] == ")"
    if not expect(")", '"," or ")" in enum(...)') then return nil end
  elseif is_name(k) then
    t.name = dotted()
  else
    return expected("a type")
  end
  if kind[cur] == "?" then
    advance()
    t.optional = true
  end
  return t
end

local parse_args

-- value := STRING | INT | FLOAT | DURATION | "true" | "false" | name [ "(" args ")" ]
--        | "{" [ value { [","] value } ] "}" | "[" ... "]"
local function parse_value()
  local k = cur
  local kd = kind[k]
  local v
  if kd == "STRING" then
    v = { kind = "string", line = false, col = false, pos = false, value = false }
    v.line, v.col, v.pos, v.value = line[k], col[k], pos[k], vals[k]
    advance()
  elseif kd == "INT" or kd == "FLOAT" then
    v = { kind = false, line = false, col = false, pos = false, text = false, value = false }
    local t = text(k)
    v.kind, v.line, v.col, v.pos = kd == "INT" and "int" or "float", line[k], col[k], pos[k]
    v.text, v.value = t, tonumber(t)
    advance()
  elseif kd == "DURATION" then
    v = { kind = "duration", line = false, col = false, pos = false, text = false }
    v.line, v.col, v.pos, v.text = line[k], col[k], pos[k], text(k)
    advance()
  elseif is_keyword("true", k) or is_keyword("false", k) then
    v = { kind = "bool", line = false, col = false, pos = false, value = false }
    v.line, v.col, v.pos, v.value = line[k], col[k], pos[k], txt[k] == "true"
    advance()
  elseif kd == "IDENT" or kd == "KEYWORD" then
    v = { kind = "ident", line = false, col = false, pos = false, name = false, args = false }
    v.line, v.col, v.pos, v.args = line[k], col[k], pos[k], nil
    v.name = dotted()
    if kind[cur] == "(" then
      v.kind = "call"
      v.args = parse_args()
      if not v.args then return nil end
    end
  elseif kd == "{" or kd == "[" then
    if not enter() then return nil end
    local close = OPEN[kd]
    local items = {}
    v = { kind = "list", line = false, col = false, pos = false, brace = false, items = false }
    v.line, v.col, v.pos, v.brace, v.items = line[k], col[k], pos[k], kd, items
    advance()
    while kind[cur] ~= close do
      if kind[cur] == "EOF" then
        leave()
        return err(k, format('expected "%s" to close the "%s" at %d:%d, found end of file',
          close, kd, v.line, v.col))
      end
      local item = parse_value()
      if not item then
        leave()
        return nil
      end
      items[#items + 1] = item
      if kind[cur] == "," then advance() end
    end
    advance()
    leave()
  else
    return expected("a value")
  end
  return v
end

-- args := "(" [ arg { "," arg } [","] ] ")" ; arg := [ name ":" ] value
parse_args = function()
  local open = cur
  if not enter() then return nil end
  advance()
  local args = {}
  while kind[cur] ~= ")" do
    local k = cur
    local a = { kind = "arg", line = false, col = false, pos = false, name = false,
      value = false }
    a.line, a.col, a.pos, a.name = line[k], col[k], pos[k], nil
    if is_name(k) and kind[k + 1] == ":" then
      a.name = txt[k]
      cur = k + 2
    end
    a.value = parse_value()
    if not a.value then
      leave()
      return nil
    end
    args[#args + 1] = a
    if kind[cur] == "," then
      advance()
    elseif kind[cur] ~= ")" then
      leave()
      return expected(format('"," or ")" to close the "(" at %d:%d', line[open], col[open]))
    end
  end
  advance()
  leave()
  return args
end

-- attributes := { "@" name [ args ] }
local function attributes()
  local list = {}
  while kind[cur] == "@" do
    local k = advance()
    local a = { kind = "attribute", line = false, col = false, pos = false, name = false,
      args = false }
    a.line, a.col, a.pos, a.args = line[k], col[k], pos[k], nil
    if not is_name(cur) then return expected("an attribute name after \"@\"") end
    a.name = txt[advance()]
    if kind[cur] == "(" then
      a.args = parse_args()
      if not a.args then return nil end
    end
    list[#list + 1] = a
  end
  return list
end

-- field := name ":" type attributes
local function field()
  local k = cur
  local f = { kind = "field", line = false, col = false, pos = false, doc = false, name = false,
    type = false, attributes = false }
  f.line, f.col, f.pos, f.doc = line[k], col[k], pos[k], doc[k]
  f.name = txt[advance()]
  advance() -- ":"
  f.type = parse_type()
  if not f.type then return nil end
  f.attributes = attributes()
  if not f.attributes then return nil end
  return f
end

-- Whether the token at the cursor adds a value to the current group: it starts a value, sits on
-- the same line as the previous token, and is neither the next option's name nor "rpc".
local function continues_group()
  local k = cur
  return VALUE_START[kind[k]] and line[k] == line[k - 1]
    and not (is_name(k) and kind[k + 1] == ":") and not is_keyword("rpc", k)
end

-- option := name ":" group { "," group } ; group := value { value }
-- A group ends before a name followed by ":" (the next option) or a token that starts no value.
local function option()
  local k = cur
  local o = { kind = "option", line = false, col = false, pos = false, doc = false,
    name = false, value = false }
  o.line, o.col, o.pos, o.doc = line[k], col[k], pos[k], doc[k]
  if not (is_name(k) and kind[k + 1] == ":") then
    return expected("an option (name: value)")
  end
  o.name = txt[k]
  cur = k + 2
  local groups = {}
  repeat
    local items = {}
    repeat
      local v = parse_value()
      if not v then return nil end
      items[#items + 1] = v
    until not continues_group()
    if #items == 1 then
      groups[#groups + 1] = items[1]
    else
      local t = { kind = "tuple", line = false, col = false, pos = false, items = false }
      t.line, t.col, t.pos, t.items = line[k + 2], col[k + 2], pos[k + 2], items
      groups[#groups + 1] = t
    end
    local more = kind[cur] == ","
    if more then advance() end
  until not more
  if #groups == 1 then
    o.value = groups[1]
  else
    local l = { kind = "list", line = false, col = false, pos = false, items = false }
    l.line, l.col, l.pos, l.items = line[k + 2], col[k + 2], pos[k + 2], groups
    o.value = l
  end
  return o
end

-- relation := ("has_many" | "has_one" | "belongs_to" | "many_to_many") name ":" type attributes
--             [ "{" { option } "}" ]
local function relation()
  local k = cur
  local r = { kind = "relation", line = false, col = false, pos = false, doc = false,
    relation = false, name = false, type = false, attributes = false, options = false }
  r.line, r.col, r.pos, r.doc, r.options = line[k], col[k], pos[k], doc[k], nil
  r.relation = txt[advance()]
  r.name = txt[advance()]
  if not expect(":", '":" after the relation name') then return nil end
  r.type = parse_type()
  if not r.type then return nil end
  r.attributes = attributes()
  if not r.attributes then return nil end
  if kind[cur] == "{" then r.options = block(option) end
  return r
end

-- index := "index" "(" name { "," name } ")" attributes
local function index()
  local k = cur
  local ix = { kind = "index", line = false, col = false, pos = false, doc = false,
    columns = false, attributes = false }
  ix.line, ix.col, ix.pos, ix.doc = line[k], col[k], pos[k], doc[k]
  advance()
  advance() -- "("
  ix.columns = {}
  repeat
    if not is_name(cur) then return expected("a field name") end
    local c = { kind = "column", line = false, col = false, pos = false, name = false }
    c.line, c.col, c.pos = line[cur], col[cur], pos[cur]
    c.name = txt[advance()]
    ix.columns[#ix.columns + 1] = c
    local more = kind[cur] == ","
    if more then advance() end
  until not more
  if not expect(")", '"," or ")" in index(...)') then return nil end
  ix.attributes = attributes()
  if not ix.attributes then return nil end
  return ix
end

-- member := relation | index | field
local function entity_member()
  local k = cur
  local kd = kind[k]
  if kd == "KEYWORD" then
    local t = txt[k]
    if RELATIONS[t] and is_name(k + 1) then return relation() end
    if t == "index" and kind[k + 1] == "(" then return index() end
  end
  if (kd == "IDENT" or kd == "KEYWORD") and kind[k + 1] == ":" then return field() end
  return expected("a field (name: type), a relation or index(...)")
end

-- params := "(" [ param { "," param } [","] ] ")" ; param := name ":" type attributes
local function params()
  local open = cur
  if not expect("(", '"("') then return nil end
  local list = {}
  while kind[cur] ~= ")" do
    if not (is_name(cur) and kind[cur + 1] == ":") then
      return expected("a parameter (name: type)")
    end
    local p = field()
    if not p then return nil end
    p.kind = "param"
    list[#list + 1] = p
    if kind[cur] == "," then
      advance()
    elseif kind[cur] ~= ")" then
      return expected(format('"," or ")" to close the "(" at %d:%d', line[open], col[open]))
    end
  end
  advance()
  return list
end

-- rpc := "rpc" name params [ "->" type ] [ "{" { option } "}" ]
local function rpc()
  local k = cur
  local r = { kind = "rpc", line = false, col = false, pos = false, doc = false, name = false,
    params = false, returns = false, options = false }
  r.line, r.col, r.pos, r.doc, r.returns = line[k], col[k], pos[k], doc[k], nil
  advance()
  if kind[cur] ~= "IDENT" then return expected("the rpc's name") end
  r.name = txt[advance()]
  r.params = params()
  if not r.params then return nil end
  if kind[cur] == "->" then
    advance()
    r.returns = parse_type()
    if not r.returns then return nil end
  end
  r.options = kind[cur] == "{" and block(option) or {}
  return r
end

local function service_member()
  if is_keyword("rpc", cur) then return rpc() end
  if is_name(cur) and kind[cur + 1] == ":" then return option() end
  return expected('"rpc" or an option (name: value)')
end

-- enum_value := name attributes [","]
local function enum_value()
  if not is_name(cur) then return expected("an enum value") end
  local k = cur
  local v = { kind = "value", line = false, col = false, pos = false, doc = false, name = false,
    attributes = false }
  v.line, v.col, v.pos, v.doc = line[k], col[k], pos[k], doc[k]
  v.name = txt[advance()]
  v.attributes = attributes()
  if not v.attributes then return nil end
  if kind[cur] == "," then advance() end
  return v
end

-- step := "step" name "{" { option } "}"   (a saga's member; "step" is contextual)
local function step()
  local k = cur
  if not (kind[k] == "IDENT" and txt[k] == "step") then
    return expected('"step" (step name { execute: Service.Rpc })')
  end
  local s = { kind = "step", line = false, col = false, pos = false, doc = false, name = false,
    options = false }
  s.line, s.col, s.pos, s.doc = line[k], col[k], pos[k], doc[k]
  advance()
  if kind[cur] ~= "IDENT" then return expected("the step's name") end
  s.name = txt[advance()]
  s.options = block(option)
  return s
end

-- decl := entity | message | enum | service | job | schedule | saga
local function decl()
  local k = cur
  local word = txt[k]
  -- A declaration: its body's keys differ by word, so only the common ones are laid out.
  local d = { kind = false, line = false, col = false, pos = false, doc = false, name = false,
    name_line = false, name_col = false }
  d.kind, d.line, d.col, d.pos, d.doc = word, line[k], col[k], pos[k], doc[k]
  advance()
  if kind[cur] ~= "IDENT" then
    return expected(format("a name after %s", word))
  end
  d.name_line, d.name_col = line[cur], col[cur]
  d.name = txt[advance()]
  local nerr0 = nerr
  if word == "entity" or word == "message" then
    -- Attributes between the name and the body (entity Order @schema(billing) {), as in Go.
    if kind[cur] == "@" then
      d.attributes = attributes()
      if not d.attributes then return nil end
    end
    d.members = block(entity_member)
    if #d.members == 0 and nerr == nerr0 then
      diag(k, "warning", format("%s %s has no fields", word, d.name))
    end
  elseif word == "enum" then
    d.values = block(enum_value)
    if #d.values == 0 and nerr == nerr0 then
      diag(k, "warning", format("enum %s has no values", d.name))
    end
  elseif word == "service" then
    local members = block(service_member)
    d.rpcs, d.options = {}, {}
    for _, m in ipairs(members) do
      local list = m.kind == "rpc" and d.rpcs or d.options
      list[#list + 1] = m
    end
  elseif word == "job" then
    d.params = params()
    if not d.params then return nil end
    d.options = kind[cur] == "{" and block(option) or {}
  elseif word == "saga" then
    d.steps = block(step)
    if #d.steps == 0 and nerr == nerr0 then
      diag(k, "warning", format("saga %s has no steps", d.name))
    end
  else -- schedule
    d.options = block(option)
  end
  return d
end

local function by_pos(a, b)
  if a.pos ~= b.pos then return a.pos < b.pos end
  return a.seq < b.seq
end

-- Parses src (the text of file, used in diagnostics) into a tree:
--   { kind = "file", file = file, decls = { ... } }
-- and a list of diagnostics (lexer's and parser's, in source order). Never raises on any input;
-- a non-string src raises (a programmer error).
function M.parse(text_, file_)
  if type(text_) ~= "string" then error("parse: src must be a string", 2) end
  file_ = file_ or "<input>"
  start(text_, file_)
  local tree = { kind = "file", file = file_, line = 1, col = 1, pos = 1, decls = {} }
  local decls = tree.decls
  while kind[cur] ~= "EOF" do
    local k = cur
    if decl_start(k) then
      local d = decl()
      if d then decls[#decls + 1] = d end
      if panic then sync_top() end
    else
      expected("a declaration (entity, message, enum, service, job, schedule or saga)")
      sync_top()
    end
    if cur == k then advance() end
  end
  local out = diags
  -- The state goes: the arrays of a big file are not kept alive until the next parse.
  src, file, kind, pos, len, line, col, vals, doc, txt, diags = nil, nil, nil, nil, nil, nil, nil,
    nil, nil, nil, nil
  for i, d in ipairs(out) do d.seq = i end
  sort(out, by_pos)
  for _, d in ipairs(out) do d.seq = nil end
  return tree, out
end

-- dump ------------------------------------------------------------------------------------------

local POSITION = { kind = true, line = true, col = true, pos = true, name = true }

local function quote(v)
  if type(v) == "string" then return (format("%q", v):gsub("\\\n", "\\n")) end
  return tostring(v)
end

local function dump_node(node, indent, out)
  local head = { indent .. node.kind }
  if node.name then head[#head + 1] = node.name end
  head[#head + 1] = format("@%d:%d", node.line or 0, node.col or 0)
  local scalars, children = {}, {}
  for key, v in pairs(node) do
    if not POSITION[key] then
      if type(v) == "table" then children[#children + 1] = key else scalars[#scalars + 1] = key end
    end
  end
  sort(scalars)
  sort(children)
  for _, key in ipairs(scalars) do head[#head + 1] = key .. "=" .. quote(node[key]) end
  out[#out + 1] = concat(head, " ")
  for _, key in ipairs(children) do
    local v = node[key]
    if v.kind then
      out[#out + 1] = indent .. "  " .. key .. ":"
      dump_node(v, indent .. "    ", out)
    elseif #v > 0 then
      out[#out + 1] = indent .. "  " .. key .. ":"
      for _, item in ipairs(v) do dump_node(item, indent .. "    ", out) end
    end
  end
end

-- The tree as indented text, one node a line: kind, name, @line:col, then scalar fields sorted by
-- key, then child nodes and lists (empty lists left out). Deterministic: the golden format.
function M.dump(tree)
  local out = {}
  dump_node(tree, "", out)
  return concat(out, "\n") .. "\n"
end

return M
