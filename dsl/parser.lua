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
-- took twice as long with the JIT on (60 ms against 32 ms, bench/check_bench.sh). The
-- interpreter runs every function of this file.
if jit then jit.off(true, true) end

M.MAX_DEPTH = 100

local DECLS = { entity = true, message = true, enum = true, service = true, job = true,
  schedule = true }
local RELATIONS = { has_many = true, has_one = true, belongs_to = true, many_to_many = true }
local OPEN = { ["{"] = "}", ["("] = ")", ["["] = "]" }
local CLOSE = { ["}"] = true, [")"] = true, ["]"] = true }
local VALUE_START = { STRING = true, INT = true, FLOAT = true, DURATION = true, IDENT = true,
  KEYWORD = true, ["{"] = true, ["["] = true }

-- Parser state: the source, the significant tokens (comments and ILLEGAL dropped; the lexer has
-- reported the latter) as parallel arrays, the cursor k, and the diagnostics.
local P = {}
P.__index = P

-- The lexer's arrays become the parser's: comments and ILLEGAL tokens are squeezed out in place
-- (no second set of arrays to grow and collect), STRING values move with their tokens, and the
-- tail left behind is cleared.
local function new_state(src, file)
  local toks, lexdiags = lexer.lex(src)
  local kind, pos, len, line, col, vals = toks.kind, toks.pos, toks.len, toks.line, toks.col,
    toks.value
  local doc = {}
  local self = setmetatable({ src = src, file = file, kind = kind, pos = pos, len = len,
    line = line, col = col, vals = vals, doc = doc, n = 0, k = 1, diags = {}, panic = false,
    depth = 0, nerr = 0 }, P)
  -- The methods sit in the state itself: a call then finds its function at the first lookup
  -- instead of missing and going through the metatable (the parser is interpreted, see above).
  for name, fn in pairs(P) do self[name] = fn end
  for _, d in ipairs(lexdiags) do
    d.file = file
    self.diags[#self.diags + 1] = d
  end
  -- The comment block being collected: its lines' text and the line of its last comment.
  local block, block_last, last_line = nil, -1, 0
  local n, total = 0, toks.n
  for i = 1, total do
    local kd, l = kind[i], line[i]
    if kd == "COMMENT" then
      if l == last_line then
        block = nil -- a comment after code on its line is no doc comment
      else
        if not block or l ~= block_last + 1 then block = {} end
        local text = sub(src, pos[i] + 2, pos[i] + len[i] - 1)
        block[#block + 1] = text:gsub("^ ", "", 1)
        block_last = l
      end
    elseif kd ~= "ILLEGAL" then
      n = n + 1
      if n ~= i then
        kind[n], pos[n], len[n], line[n], col[n] = kd, pos[i], len[i], l, col[i]
        local v = vals[i]
        if v then
          vals[n], vals[i] = v, nil
        end
      end
      if block then
        if block_last == l - 1 then doc[n] = concat(block, "\n") end
        block = nil
      end
      last_line = l
    end
  end
  for i = n + 1, total do
    kind[i], pos[i], len[i], line[i], col[i], vals[i] = nil, nil, nil, nil, nil, nil
  end
  self.n = n
  return self
end

function P:text(k)
  k = k or self.k
  return sub(self.src, self.pos[k], self.pos[k] + self.len[k] - 1)
end

function P:at(kd, k)
  return self.kind[k or self.k] == kd
end

function P:advance()
  local k = self.k
  if k < self.n then self.k = k + 1 end
  return k
end

-- A name is an identifier or a keyword: a field may be called "index" or "message".
function P:is_name(k)
  local kd = self.kind[k or self.k]
  return kd == "IDENT" or kd == "KEYWORD"
end

function P:is_keyword(word, k)
  k = k or self.k
  return self.kind[k] == "KEYWORD" and self:text(k) == word
end

-- Whether token k starts a line (nothing before it on its line).
function P:first_on_line(k)
  return k == 1 or self.line[k - 1] < self.line[k]
end

-- "saga Name {": "saga" is a contextual word (an identifier elsewhere), as in the Go grammar.
function P:saga_at(k)
  k = k or self.k
  return self.kind[k] == "IDENT" and self.kind[k + 1] == "IDENT" and self:text(k) == "saga"
end

-- Whether token k starts a declaration: a declaration keyword, or "saga Name".
function P:decl_start(k)
  k = k or self.k
  return (self.kind[k] == "KEYWORD" and DECLS[self:text(k)] ~= nil) or self:saga_at(k)
end

-- "entity Name" at column 1: a declaration that ends any block left open above it.
function P:decl_at_col1(k)
  k = k or self.k
  return self.col[k] == 1 and self:decl_start(k) and self.kind[k + 1] == "IDENT"
end

function P:describe(k)
  k = k or self.k
  local kd = self.kind[k]
  if kd == "EOF" then return "end of file" end
  if kd == "IDENT" then return format('"%s"', self:text(k)) end
  if kd == "KEYWORD" then return format('keyword "%s"', self:text(k)) end
  if kd == "STRING" then return "a string" end
  if kd == "INT" or kd == "FLOAT" then return format("number %s", self:text(k)) end
  if kd == "DURATION" then return format("duration %s", self:text(k)) end
  return format('"%s"', kd)
end

function P:diag(k, severity, msg)
  self.diags[#self.diags + 1] = { file = self.file, phase = "parse", severity = severity,
    message = msg, line = self.line[k], col = self.col[k], pos = self.pos[k], len = self.len[k] }
end

-- Reports a syntax error at token k unless one was reported since the last recovery; returns nil
-- so that callers can `return self:err(...)`.
function P:err(k, msg)
  if not self.panic then
    self.panic = true
    self.last_err = k
    self.nerr = self.nerr + 1
    self:diag(k, "error", msg)
  end
  return nil
end

function P:expected(what)
  return self:err(self.k, format("expected %s, found %s", what, self:describe()))
end

-- Consumes a token of kind kd or reports "expected what".
function P:expect(kd, what)
  if self.kind[self.k] == kd then return self:advance() end
  return self:expected(what or format('"%s"', kd))
end

-- A node with room for four more fields (name, type, attributes, value, ...): sizing the table's
-- hash part once halves the cost of a node that then gets them. The four start as false and are
-- cleared at once, because `luajit -b` (build/bc) keeps only non-nil keys in a constructor's
-- template: with `name = nil` the precompiled node had 4 slots and rehashed on its first field.
function P:node(kind, k)
  local n = { kind = kind, line = self.line[k], col = self.col[k], pos = self.pos[k],
    name = false, type = false, attributes = false, value = false }
  n.name, n.type, n.attributes, n.value = nil, nil, nil, nil
  return n
end

-- Skips a balanced run from the opener at the cursor to its closer (or EOF) with a counter.
function P:skip_balanced()
  local depth = 0
  repeat
    local kd = self.kind[self.k]
    if kd == "EOF" then return end
    if OPEN[kd] then depth = depth + 1 elseif CLOSE[kd] then depth = depth - 1 end
    self:advance()
  until depth <= 0
end

-- Enters one level of nesting; false (with an error, and the nested run skipped) past the guard.
function P:enter()
  if self.depth >= M.MAX_DEPTH then
    self:err(self.k, format("nesting deeper than %d levels", M.MAX_DEPTH))
    self:skip_balanced()
    return false
  end
  self.depth = self.depth + 1
  return true
end

function P:leave()
  self.depth = self.depth - 1
end

-- Recovery at depth 0: skip to the next declaration keyword outside any bracket (or at column 1,
-- which ends brackets left open).
function P:sync_top()
  local depth = 0
  while true do
    local k, kd = self.k, self.kind[self.k]
    if kd == "EOF" then break end
    if self:decl_start(k) and (depth == 0 or self:decl_at_col1(k)) then break end
    if OPEN[kd] then
      depth = depth + 1
    elseif CLOSE[kd] and depth > 0 then
      depth = depth - 1
    end
    self:advance()
  end
  self.panic = false
end

-- Whether token k starts a member of a block: a name and ":", a relation, index( or rpc.
function P:member_start(k)
  if not self:is_name(k) then return false end
  local nxt = self.kind[k + 1]
  if nxt == ":" then return true end
  local t = self:text(k)
  if t == "step" and nxt == "IDENT" and self.kind[k + 2] == "{" then return true end
  if self.kind[k] == "KEYWORD" then
    if RELATIONS[t] and self:is_name(k + 1) then return true end
    if t == "index" and nxt == "(" then return true end
    if t == "rpc" and nxt == "IDENT" then return true end
  end
  return false
end

-- Recovery inside a block whose members start at column mcol, after the member that began at
-- token start failed: skip to the next member at the
-- block's depth, or the block's "}". A member start or "}" at the head of a line, at or left of
-- mcol, counts even inside brackets left open (an unclosed "(" does not eat the block).
function P:sync_member(mcol, start)
  local depth = 0
  while true do
    local k, kd = self.k, self.kind[self.k]
    if kd == "EOF" or self:decl_at_col1(k) then break end
    local head = self:first_on_line(k) and self.col[k] <= mcol
    if kd == "}" and (depth == 0 or (head and self.col[k] < mcol)) then break end
    if k ~= start and (depth == 0 or head) and self:member_start(k) then break end
    if OPEN[kd] then
      depth = depth + 1
    elseif CLOSE[kd] and depth > 0 then
      depth = depth - 1
    end
    self:advance()
  end
  self.panic = false
end

-- A block "{" member* "}". member(self) parses one member and returns its node or nil after an
-- error. Returns the list of members (and reports a block left open).
function P:block(member)
  local items = {}
  local open = self.k
  if not self:expect("{", '"{"') then return items end
  local mcol
  while true do
    local k, kd = self.k, self.kind[self.k]
    if kd == "}" then
      self:advance()
      break
    end
    if kd == "EOF" or self:decl_at_col1(k) then
      self.panic = self.last_err == k -- after "expected x, found end of file", say no more
      self:err(k, format('expected "}" to close the block opened at %d:%d, found %s',
        self.line[open], self.col[open], self:describe(k)))
      self.panic = false
      break
    end
    mcol = mcol or self.col[k]
    local node = member(self)
    if node then
      items[#items + 1] = node
    else
      self:sync_member(mcol, k)
      if self.k == k then self:advance() end
    end
  end
  return items
end

-- name { "." name } at the cursor, joined with "." (no table for the usual single name).
function P:dotted()
  local name = self:text(self:advance())
  if not (self:at(".") and self:is_name(self.k + 1)) then return name end
  local parts = { name }
  while self:at(".") and self:is_name(self.k + 1) do
    self:advance()
    parts[#parts + 1] = self:text(self:advance())
  end
  return concat(parts, ".")
end

-- type := ( "[" type "]" | name { "." name } ) [ "?" ]
function P:type()
  local k = self.k
  local t = self:node("type", k)
  if self:at("[") then
    if not self:enter() then return nil end
    self:advance()
    local elem = self:type()
    self:leave()
    if not elem then return nil end
    if not self:expect("]", '"]" to close the list type') then return nil end
    t.list = true
    t.of = elem
  elseif self:is_keyword("enum") and self:at("(", k + 1) then
    -- An inline enum, enum(low, high): the resolver gives it a named enum of its own.
    self:advance()
    self:advance()
    t.name = "enum"
    t.values = {}
    repeat
      if not self:is_name() then return self:expected("an enum value") end
      local v = self:node("value", self.k)
      v.name = self:text(self:advance())
      t.values[#t.values + 1] = v
      local more = self:at(",")
      if more then self:advance() end
    until not more or self:at(")")
    if not self:expect(")", '"," or ")" in enum(...)') then return nil end
  elseif self:is_name() then
    t.name = self:dotted()
  else
    return self:expected("a type")
  end
  if self:at("?") then
    self:advance()
    t.optional = true
  end
  return t
end

-- value := STRING | INT | FLOAT | DURATION | "true" | "false" | name [ "(" args ")" ]
--        | "{" [ value { [","] value } ] "}" | "[" ... "]"
function P:value()
  local k, kd = self.k, self.kind[self.k]
  local v = self:node(kd, k)
  if kd == "STRING" then
    v.kind = "string"
    v.value = self.vals[k]
    self:advance()
  elseif kd == "INT" or kd == "FLOAT" then
    v.kind = kd == "INT" and "int" or "float"
    v.text = self:text(k)
    v.value = tonumber(v.text)
    self:advance()
  elseif kd == "DURATION" then
    v.kind = "duration"
    v.text = self:text(k)
    self:advance()
  elseif self:is_keyword("true") or self:is_keyword("false") then
    v.kind = "bool"
    v.value = self:text(k) == "true"
    self:advance()
  elseif self:is_name() then
    v.name = self:dotted()
    if self:at("(") then
      v.kind = "call"
      v.args = self:args()
      if not v.args then return nil end
    else
      v.kind = "ident"
    end
  elseif kd == "{" or kd == "[" then
    if not self:enter() then return nil end
    local close = OPEN[kd]
    v.kind = "list"
    v.brace = kd
    v.items = {}
    self:advance()
    while not self:at(close) do
      if self:at("EOF") then
        self:leave()
        return self:err(k, format('expected "%s" to close the "%s" at %d:%d, found end of file',
          close, kd, v.line, v.col))
      end
      local item = self:value()
      if not item then
        self:leave()
        return nil
      end
      v.items[#v.items + 1] = item
      if self:at(",") then self:advance() end
    end
    self:advance()
    self:leave()
  else
    return self:expected("a value")
  end
  return v
end

-- args := "(" [ arg { "," arg } [","] ] ")" ; arg := [ name ":" ] value
function P:args()
  local open = self.k
  if not self:enter() then return nil end
  self:advance()
  local args = {}
  while not self:at(")") do
    local k = self.k
    local a = self:node("arg", k)
    if self:is_name(k) and self:at(":", k + 1) then
      a.name = self:text(k)
      self.k = k + 2
    end
    a.value = self:value()
    if not a.value then
      self:leave()
      return nil
    end
    args[#args + 1] = a
    if self:at(",") then
      self:advance()
    elseif not self:at(")") then
      self:leave()
      return self:expected(format('"," or ")" to close the "(" at %d:%d', self.line[open],
        self.col[open]))
    end
  end
  self:advance()
  self:leave()
  return args
end

-- attributes := { "@" name [ args ] }
function P:attributes()
  local list = {}
  while self:at("@") do
    local k = self:advance()
    local a = self:node("attribute", k)
    if not self:is_name() then return self:expected("an attribute name after \"@\"") end
    a.name = self:text(self:advance())
    if self:at("(") then
      a.args = self:args()
      if not a.args then return nil end
    end
    list[#list + 1] = a
  end
  return list
end

-- The common head of a member: its node with name and doc, the cursor past the name.
function P:named(kind, k)
  local node = self:node(kind, k)
  node.doc = self.doc[k]
  return node
end

-- field := name ":" type attributes
function P:field()
  local k = self.k
  local f = self:named("field", k)
  f.name = self:text(self:advance())
  self:advance() -- ":"
  f.type = self:type()
  if not f.type then return nil end
  f.attributes = self:attributes()
  if not f.attributes then return nil end
  return f
end

-- Whether the token at the cursor adds a value to the current group: it starts a value, sits on
-- the same line as the previous token, and is neither the next option's name nor "rpc".
function P:continues_group()
  local k = self.k
  return VALUE_START[self.kind[k]] and self.line[k] == self.line[k - 1]
    and not (self:is_name(k) and self:at(":", k + 1)) and not self:is_keyword("rpc", k)
end

-- option := name ":" group { "," group } ; group := value { value }
-- A group ends before a name followed by ":" (the next option) or a token that starts no value.
function P:option()
  local k = self.k
  local o = self:named("option", k)
  if not (self:is_name(k) and self:at(":", k + 1)) then
    return self:expected("an option (name: value)")
  end
  o.name = self:text(k)
  self.k = k + 2
  local groups = {}
  repeat
    local items = {}
    repeat
      local v = self:value()
      if not v then return nil end
      items[#items + 1] = v
    until not self:continues_group()
    if #items == 1 then
      groups[#groups + 1] = items[1]
    else
      local t = self:node("tuple", k + 2)
      t.items = items
      groups[#groups + 1] = t
    end
    local more = self:at(",")
    if more then self:advance() end
  until not more
  if #groups == 1 then
    o.value = groups[1]
  else
    local l = self:node("list", k + 2)
    l.items = groups
    o.value = l
  end
  return o
end

-- relation := ("has_many" | "has_one" | "belongs_to" | "many_to_many") name ":" type attributes
--             [ "{" { option } "}" ]
function P:relation()
  local k = self.k
  local r = self:named("relation", k)
  r.relation = self:text(self:advance())
  r.name = self:text(self:advance())
  if not self:expect(":", '":" after the relation name') then return nil end
  r.type = self:type()
  if not r.type then return nil end
  r.attributes = self:attributes()
  if not r.attributes then return nil end
  if self:at("{") then r.options = self:block(P.option) end
  return r
end

-- index := "index" "(" name { "," name } ")" attributes
function P:index()
  local k = self.k
  local ix = self:named("index", k)
  self:advance()
  self:advance() -- "("
  ix.columns = {}
  repeat
    if not self:is_name() then return self:expected("a field name") end
    local c = self:node("column", self.k)
    c.name = self:text(self:advance())
    ix.columns[#ix.columns + 1] = c
    local more = self:at(",")
    if more then self:advance() end
  until not more
  if not self:expect(")", '"," or ")" in index(...)') then return nil end
  ix.attributes = self:attributes()
  if not ix.attributes then return nil end
  return ix
end

-- member := relation | index | field
function P:entity_member()
  local k = self.k
  if self.kind[k] == "KEYWORD" then
    local t = self:text(k)
    if RELATIONS[t] and self:is_name(k + 1) then return self:relation() end
    if t == "index" and self:at("(", k + 1) then return self:index() end
  end
  if self:is_name(k) and self:at(":", k + 1) then return self:field() end
  return self:expected("a field (name: type), a relation or index(...)")
end

-- params := "(" [ param { "," param } [","] ] ")" ; param := name ":" type attributes
function P:params()
  local open = self.k
  if not self:expect("(", '"("') then return nil end
  local params = {}
  while not self:at(")") do
    if not (self:is_name() and self:at(":", self.k + 1)) then
      return self:expected("a parameter (name: type)")
    end
    local p = self:field()
    if not p then return nil end
    p.kind = "param"
    params[#params + 1] = p
    if self:at(",") then
      self:advance()
    elseif not self:at(")") then
      return self:expected(format('"," or ")" to close the "(" at %d:%d', self.line[open],
        self.col[open]))
    end
  end
  self:advance()
  return params
end

-- rpc := "rpc" name params [ "->" type ] [ "{" { option } "}" ]
function P:rpc()
  local k = self.k
  local r = self:named("rpc", k)
  self:advance()
  if not self:at("IDENT") then return self:expected("the rpc's name") end
  r.name = self:text(self:advance())
  r.params = self:params()
  if not r.params then return nil end
  if self:at("->") then
    self:advance()
    r.returns = self:type()
    if not r.returns then return nil end
  end
  r.options = self:at("{") and self:block(P.option) or {}
  return r
end

function P:service_member()
  if self:is_keyword("rpc") then return self:rpc() end
  if self:is_name() and self:at(":", self.k + 1) then return self:option() end
  return self:expected('"rpc" or an option (name: value)')
end

-- enum_value := name attributes [","]
function P:enum_value()
  if not self:is_name() then return self:expected("an enum value") end
  local k = self.k
  local v = self:named("value", k)
  v.name = self:text(self:advance())
  v.attributes = self:attributes()
  if not v.attributes then return nil end
  if self:at(",") then self:advance() end
  return v
end

-- step := "step" name "{" { option } "}"   (a saga's member; "step" is contextual)
function P:step()
  local k = self.k
  if not (self:at("IDENT") and self:text(k) == "step") then
    return self:expected('"step" (step name { execute: Service.Rpc })')
  end
  local s = self:named("step", k)
  self:advance()
  if not self:at("IDENT") then return self:expected("the step's name") end
  s.name = self:text(self:advance())
  s.options = self:block(P.option)
  return s
end

-- decl := entity | message | enum | service | job | schedule | saga
function P:decl()
  local k = self.k
  local word = self:text(k)
  local d = self:named(word, k)
  self:advance()
  if not self:at("IDENT") then
    return self:expected(format("a name after %s", word))
  end
  d.name_line, d.name_col = self.line[self.k], self.col[self.k]
  d.name = self:text(self:advance())
  local nerr = self.nerr
  if word == "entity" or word == "message" then
    -- Attributes between the name and the body (entity Order @schema(billing) {), as in Go.
    if self:at("@") then
      d.attributes = self:attributes()
      if not d.attributes then return nil end
    end
    d.members = self:block(P.entity_member)
    if #d.members == 0 and self.nerr == nerr then
      self:diag(k, "warning", format("%s %s has no fields", word, d.name))
    end
  elseif word == "enum" then
    d.values = self:block(P.enum_value)
    if #d.values == 0 and self.nerr == nerr then
      self:diag(k, "warning", format("enum %s has no values", d.name))
    end
  elseif word == "service" then
    local members = self:block(P.service_member)
    d.rpcs, d.options = {}, {}
    for _, m in ipairs(members) do
      local list = m.kind == "rpc" and d.rpcs or d.options
      list[#list + 1] = m
    end
  elseif word == "job" then
    d.params = self:params()
    if not d.params then return nil end
    d.options = self:at("{") and self:block(P.option) or {}
  elseif word == "saga" then
    d.steps = self:block(P.step)
    if #d.steps == 0 and self.nerr == nerr then
      self:diag(k, "warning", format("saga %s has no steps", d.name))
    end
  else -- schedule
    d.options = self:block(P.option)
  end
  return d
end

-- Parses src (the text of file, used in diagnostics) into a tree:
--   { kind = "file", file = file, decls = { ... } }
-- and a list of diagnostics (lexer's and parser's, in source order). Never raises on any input;
-- a non-string src raises (a programmer error).
function M.parse(src, file)
  if type(src) ~= "string" then error("parse: src must be a string", 2) end
  file = file or "<input>"
  local self = new_state(src, file)
  local tree = { kind = "file", file = file, line = 1, col = 1, pos = 1, decls = {} }
  while not self:at("EOF") do
    local k = self.k
    if self:decl_start(k) then
      local d = self:decl()
      if d then tree.decls[#tree.decls + 1] = d end
      if self.panic then self:sync_top() end
    else
      self:expected("a declaration (entity, message, enum, service, job, schedule or saga)")
      self:sync_top()
    end
    if self.k == k then self:advance() end
  end
  local diags = self.diags
  for i, d in ipairs(diags) do d.seq = i end
  sort(diags, function(a, b)
    if a.pos ~= b.pos then return a.pos < b.pos end
    return a.seq < b.seq
  end)
  for _, d in ipairs(diags) do d.seq = nil end
  return tree, diags
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
