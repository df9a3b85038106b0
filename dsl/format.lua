-- dsl.format: the .zen formatter behind `zever fmt`. It prints a file's tree back as canonical
-- text and keeps every comment.
--
--   format.format(src, file) -> text            the canonical form of src
--                            -> nil, err        err = { code = "syntax", message, diagnostics }
--
-- Canonical form: 2-space indent; one member, option or enum value a line; every block opened on
-- its head's line ("entity Task {") and closed alone ("}"); exactly one blank line between
-- declarations, at most one between members (kept where the source had some); attributes and
-- arguments in source order, separated by ", " and " "; no commas after enum values; an empty
-- rpc or job block dropped (the tree cannot tell it from none). Literals keep their source
-- spelling (string escapes, number and duration text). Comments keep their text (trailing blanks
-- cut) and their place: a comment on its own line stays on its own line before the next member;
-- a comment after code stays at the end of that code's line. Parameters print on one line unless
-- a comment sits among them; then one a line, each with a comma, so their docs stay theirs. A
-- comment inside anything else printed on one line (attribute arguments or a list spread over
-- lines) moves after it, a blank line away from the next member so as not to become its doc.
--
-- It must not format what it cannot read: input with an ILLEGAL token or a syntax error is
-- refused with the lexer's and parser's diagnostics (warnings alone do not refuse). It does not
-- resolve names: a file with resolver errors formats fine.

local lexer = require "zever.lexer"
local parser = require "dsl.parser"

local concat, sort = table.concat, table.sort
local rep, sub, gsub = string.rep, string.sub, string.gsub
local ipairs = ipairs

local M = {}

-- Source tokens ---------------------------------------------------------------------------------

-- The code tokens (comments dropped) as parallel arrays, their index by byte position, matching
-- brackets, whether a blank line precedes each, and the comments in order.
local function scan(src)
  local toks = lexer.lex(src)
  local kind, pos, len = {}, {}, {}
  local at, blank, comments = {}, {}, {}
  local n, prev_line, waiting = 0, nil, 1
  for i = 1, toks.n do
    local kd, l = toks.kind[i], toks.line[i]
    local gap = prev_line ~= nil and l - prev_line >= 2
    if kd == "COMMENT" then
      local p = toks.pos[i]
      comments[#comments + 1] = {
        pos = p,
        text = (gsub(sub(src, p, p + toks.len[i] - 1), "%s+$", "")),
        trailing = prev_line == l,
        blank = gap,
      }
    else
      n = n + 1
      kind[n], pos[n], len[n], blank[n] = kd, toks.pos[i], toks.len[i], gap
      at[pos[n]] = n
      for j = waiting, #comments do comments[j].next_code = pos[n] end
      waiting = #comments + 1
    end
    prev_line = l
  end
  local match, stack = {}, {}
  for i = 1, n do
    local kd = kind[i]
    if kd == "{" or kd == "(" or kd == "[" then
      stack[#stack + 1] = i
    elseif (kd == "}" or kd == ")" or kd == "]") and #stack > 0 then
      local j = stack[#stack]
      stack[#stack] = nil
      match[i], match[j] = j, i
    end
  end
  return { src = src, kind = kind, pos = pos, len = len, at = at, blank = blank,
    match = match, comments = comments }
end

-- Rendering expressions -------------------------------------------------------------------------

local render_value

local function render_type(t)
  local s = t.list and ("[" .. render_type(t.of) .. "]") or t.name
  if t.values then
    local names = {}
    for i, v in ipairs(t.values) do names[i] = v.name end
    s = "enum(" .. concat(names, ", ") .. ")"
  end
  if t.optional then s = s .. "?" end
  return s
end

-- The source text of the token at byte pos.
local function token_text(S, p)
  local i = S.at[p]
  return sub(S.src, p, p + S.len[i] - 1)
end

local function render_args(S, args)
  local parts = {}
  for i, a in ipairs(args) do
    local v = render_value(S, a.value)
    parts[i] = a.name and (a.name .. ": " .. v) or v
  end
  return "(" .. concat(parts, ", ") .. ")"
end

local function render_items(S, items, sep)
  local parts = {}
  for i, v in ipairs(items) do parts[i] = render_value(S, v) end
  return concat(parts, sep)
end

function render_value(S, v)
  local kd = v.kind
  if kd == "go_string" then return v.text end
  if kd == "string" or kd == "int" or kd == "float" or kd == "duration" then
    return token_text(S, v.pos)
  elseif kd == "bool" then
    return v.value and "true" or "false"
  elseif kd == "ident" then
    return v.name
  elseif kd == "call" then
    return v.name .. render_args(S, v.args)
  elseif kd == "tuple" then
    return render_items(S, v.items, " ")
  elseif v.brace == "{" then
    if #v.items == 0 then return "{}" end
    return "{ " .. render_items(S, v.items, ", ") .. " }"
  elseif v.brace == "[" then
    return "[" .. render_items(S, v.items, ", ") .. "]"
  end
  return render_items(S, v.items, ", ") -- an option's groups
end

local function render_attributes(S, list)
  local parts = {}
  for _, a in ipairs(list or {}) do
    local args = a.args
    if S.go and a.name == "validate" and args then
      -- The Go grammar quotes the format: @validate(format: "email").
      local quoted = {}
      for i, arg in ipairs(args) do
        local v = arg.value
        if arg.name == "format" and v.kind == "ident" then
          quoted[i] = { name = arg.name, value = { kind = "go_string", text = '"' .. v.name .. '"' } }
        else
          quoted[i] = arg
        end
      end
      args = quoted
    end
    parts[#parts + 1] = " @" .. a.name .. (args and render_args(S, args) or "")
  end
  return concat(parts)
end

local function render_field(S, f)
  return f.name .. ": " .. render_type(f.type) .. render_attributes(S, f.attributes)
end

local function render_params(S, params)
  local parts = {}
  for i, p in ipairs(params) do parts[i] = render_field(S, p) end
  return "(" .. concat(parts, ", ") .. ")"
end

-- Finding blocks in the tokens ------------------------------------------------------------------

-- The index of the last token of the type starting at token i.
local function type_end(S, i)
  local kind = S.kind
  local e = kind[i] == "[" and S.match[i] or i
  if kind[i + 1] == "(" then
    e = S.match[i + 1] -- enum(a, b)
  elseif kind[i] ~= "[" then
    while kind[e + 1] == "." do e = e + 2 end
  end
  if kind[e + 1] == "?" then e = e + 1 end
  return e
end

-- The index of the first token after the attributes starting at token i.
local function skip_attributes(S, i)
  while S.kind[i] == "@" do
    i = i + 2
    if S.kind[i] == "(" then i = S.match[i] + 1 end
  end
  return i
end

-- The byte position of the "}" closing node's block, or nil when it has none.
local function block_close(S, node)
  local i = S.at[node.pos]
  local kd = node.kind
  if kd == "relation" then
    i = skip_attributes(S, type_end(S, i + 3) + 1)
  elseif kd == "rpc" or kd == "job" then
    i = S.match[i + 2] + 1
    if S.kind[i] == "->" then i = type_end(S, i + 1) + 1 end
  else
    i = skip_attributes(S, i + 2) -- entity Order @schema(billing) {
  end
  if S.kind[i] ~= "{" then return nil end
  return S.pos[S.match[i]]
end

-- The printer -----------------------------------------------------------------------------------

-- Output lines; ci is the next comment to place, depth the indent level, code the index of the
-- last line printed for code (where trailing comments go), opened whether that line opened a
-- block (no blank line after it), force a blank line owed before the next line (between
-- declarations), detach a blank line owed before the next member because comments moved out of
-- the member above were just printed (without it they would become the next member's doc).
local W = {}
W.__index = W

function W:put(text, blank)
  local out = self.out
  if (blank or self.force) and #out > 0 and not self.opened then out[#out + 1] = "" end
  self.force = false
  out[#out + 1] = rep("  ", self.depth) .. text
  self.opened = false
end

-- Places every comment before byte position limit: one after code goes at the end of the last
-- code line, one on its own line gets a line of its own.
function W:comments(limit)
  local list = self.S.comments
  while list[self.ci] and list[self.ci].pos < limit do
    local c = list[self.ci]
    self.ci = self.ci + 1
    if c.trailing and self.code and not self.has_trailing then
      self.out[self.code] = self.out[self.code] .. " " .. c.text
      self.has_trailing = true
    else
      -- Moved: it belonged to code printed above (a second comment after code on that line, or
      -- one inside a member printed on one line).
      local moved = c.trailing or (c.next_code ~= nil and c.next_code < limit)
      self:put(c.text, c.blank or (self.detach and not moved))
      self.detach = moved
    end
  end
end

-- Prints one line of code that starts at byte position pos; blank asks for a blank line before
-- it when the source had one (false for closing lines, which never get one).
function W:code_line(pos, text, blank)
  self:comments(pos)
  local i = self.S.at[pos]
  self:put(text, blank and (self.S.blank[i] or self.detach))
  self.detach = false
  self.code = #self.out
  self.has_trailing = false
end

-- Prints a head line ending in " {", the members (print(self, member) each), and the closing "}"
-- at byte position close; an empty block without comments prints as head .. " {}". blank is
-- code_line's for the head.
function W:block(pos, head, members, close, print, blank)
  if blank == nil then blank = true end
  if #members == 0 and not self:comment_between(pos, close) then
    self:code_line(pos, head .. " {}", blank)
    self:comments(close + 1) -- a comment after "{}" on its line
    return
  end
  self:code_line(pos, head .. " {", blank)
  self.opened = true
  self.depth = self.depth + 1
  for _, m in ipairs(members) do print(self, m) end
  self:comments(close)
  self.depth = self.depth - 1
  self.opened = false
  self:code_line(close, "}", false)
end

-- Whether a comment not yet placed lies between byte positions from and to.
function W:comment_between(from, to)
  for j = self.ci, #self.S.comments do
    local c = self.S.comments[j]
    if c.pos >= to then return false end
    if c.pos > from then return true end
  end
  return false
end

local function print_option(w, o)
  w:code_line(o.pos, o.name .. ": " .. render_value(w.S, o.value), true)
end

local function print_options(w, pos, head, options, close, blank)
  if blank == nil then blank = true end
  if close then
    w:block(pos, head, options or {}, close, print_option, blank)
  else
    w:code_line(pos, head, blank)
  end
end

-- An rpc or job: lead ("rpc Name"), the parameters, suffix (" -> T") and the option block. The
-- parameters go on one line unless a comment sits among them: then one a line, each followed by
-- a comma, so that a parameter's doc and trailing comments stay with it.
local function print_callable(w, node, lead, suffix)
  local S = w.S
  local open = S.at[node.pos] + 2 -- the "(" after the keyword and the name
  local open_pos, close_pos = S.pos[open], S.pos[S.match[open]]
  local close = #node.options > 0 and block_close(S, node) or nil
  if not w:comment_between(open_pos, close_pos) then
    print_options(w, node.pos, lead .. render_params(S, node.params) .. suffix, node.options,
      close)
    return
  end
  w:code_line(node.pos, lead .. "(", true)
  w.opened = true
  w.depth = w.depth + 1
  for _, p in ipairs(node.params) do w:code_line(p.pos, render_field(S, p) .. ",", true) end
  w:comments(close_pos)
  w.depth = w.depth - 1
  w.opened = false
  print_options(w, close_pos, ")" .. suffix, node.options, close, false)
end

local function print_member(w, m)
  local S, kd = w.S, m.kind
  if kd == "field" then
    w:code_line(m.pos, render_field(S, m), true)
  elseif kd == "index" then
    local cols = {}
    for i, c in ipairs(m.columns) do cols[i] = c.name end
    w:code_line(m.pos, "index(" .. concat(cols, ", ") .. ")" .. render_attributes(S, m.attributes),
      true)
  elseif kd == "relation" then
    local head = m.relation .. " " .. render_field(S, m)
    if m.options then
      print_options(w, m.pos, head, m.options, block_close(S, m))
    else
      w:code_line(m.pos, head, true)
    end
  elseif kd == "value" then
    w:code_line(m.pos, m.name .. render_attributes(S, m.attributes), true)
  elseif kd == "option" then
    print_option(w, m)
  elseif kd == "step" then
    print_options(w, m.pos, "step " .. m.name, m.options, block_close(S, m))
  else -- rpc
    print_callable(w, m, "rpc " .. m.name, m.returns and (" -> " .. render_type(m.returns)) or "")
  end
end

local function by_pos(a, b) return a.pos < b.pos end

local function print_decl(w, d)
  local S, kd = w.S, d.kind
  local head = kd .. " " .. d.name .. render_attributes(S, d.attributes)
  if kd == "job" then
    print_callable(w, d, head, "")
    return
  end
  local members
  if kd == "enum" then
    members = d.values
  elseif kd == "service" then
    members = {}
    for _, m in ipairs(d.options) do members[#members + 1] = m end
    for _, m in ipairs(d.rpcs) do members[#members + 1] = m end
    sort(members, by_pos)
  elseif kd == "schedule" then
    members = d.options
  elseif kd == "saga" then
    members = d.steps
  else
    members = d.members
  end
  w:block(d.pos, head, members, block_close(S, d), print_member)
end

-- zever fmt --go: the forms of this dialect that the Go framework's compiler does not read. Each
-- is a diagnostic (phase "fmt"); the formatter refuses a file that has any.
local GO_ATTRS = { primary = true, unique = true, default = true, validate = true,
  renamed_from = true, foreign_key = true, on_delete = true, schema = true }
local GO_OPTIONS = { http = true, auth = true, permission = true, errors = true, paginated = true,
  queue = true, retry = true, cron = true, dispatch = true, join_table = true, execute = true,
  compensate = true, pivot = true }

local function go_problems(tree, file)
  local out = {}
  local function add(node, msg)
    out[#out + 1] = { file = file, line = node.line, col = node.col, pos = node.pos, phase = "fmt",
      severity = "error", message = msg .. " (not in the Go grammar; zever fmt --go writes only " ..
      "what the Go compiler reads)" }
  end
  local function typ(t)
    if not t then return end
    if t.list then return add(t, "the list type [" .. render_type(t.of) .. "]") end
    if t.name and t.name:find(".", 1, true) then add(t, "the module-qualified type " .. t.name) end
  end
  local function attrs(list, where)
    for _, a in ipairs(list or {}) do
      if not GO_ATTRS[a.name] then
        add(a, "@" .. a.name .. " on " .. where)
      elseif a.name == "default" and a.args and a.args[1] and a.args[1].value.kind == "bool" then
        add(a, "@default(true|false) (true and false are reserved words there)")
      end
    end
  end
  local function options(list, where)
    for _, o in ipairs(list or {}) do
      if not GO_OPTIONS[o.name] then add(o, "the option " .. o.name .. ": in " .. where) end
      if o.name == "retry" then
        local v = o.value
        for _, g in ipairs(v.kind == "list" and not v.brace and v.items or { v }) do
          if g.kind == "call" and g.name == "backoff" then
            local first = g.args[1] and g.args[1].value
            if first and first.kind == "ident" and first.name ~= "exponential" then
              add(first, "backoff(" .. first.name .. ") (exponential is the only kind)")
            end
            for i = 2, #g.args do
              if g.args[i].name ~= "base" then
                add(g.args[i], "backoff's " .. tostring(g.args[i].name) .. ":")
              end
            end
          end
        end
      end
    end
  end
  local function fields(list, where)
    for _, f in ipairs(list or {}) do
      typ(f.type)
      attrs(f.attributes, where .. " " .. tostring(f.name))
    end
  end
  for _, d in ipairs(tree.decls) do
    local what = d.kind .. " " .. tostring(d.name)
    attrs(d.attributes, what)
    if d.kind == "entity" or d.kind == "message" then
      for _, m in ipairs(d.members or {}) do
        if m.kind == "field" then
          fields({ m }, "field")
        elseif m.kind == "relation" then
          typ(m.type)
          attrs(m.attributes, "relation " .. m.name)
          options(m.options, "relation " .. m.name)
        else
          attrs(m.attributes, "index")
        end
      end
    elseif d.kind == "enum" then
      for _, v in ipairs(d.values or {}) do
        for _, a in ipairs(v.attributes or {}) do add(a, "@" .. a.name .. " on enum value " .. v.name) end
      end
    elseif d.kind == "service" then
      options(d.options, what)
      for _, r in ipairs(d.rpcs or {}) do
        fields(r.params, "parameter")
        typ(r.returns)
        options(r.options, "rpc " .. r.name)
      end
    elseif d.kind == "job" then
      fields(d.params, "parameter")
      options(d.options, what)
    elseif d.kind == "saga" then
      for _, st in ipairs(d.steps or {}) do options(st.options, "step " .. st.name) end
    else
      options(d.options, what)
    end
  end
  return out
end

-- Formats src (the text of file, named in diagnostics). Returns the canonical text, or nil and
-- an error whose diagnostics say why src was refused. A non-string src raises.
-- opts.go: write the Go framework's form (quoted @validate formats) and refuse, with a diagnostic
-- each, the forms its compiler does not read (err.code "go").
function M.format(src, file, opts)
  if type(src) ~= "string" then error("format: src must be a string", 2) end
  file = file or "<input>"
  local tree, diags = parser.parse(src, file)
  local errors = {}
  for _, d in ipairs(diags) do
    if d.severity == "error" then errors[#errors + 1] = d end
  end
  if #errors > 0 then
    return nil, { code = "syntax", diagnostics = diags,
      message = string.format("%s: %d syntax error%s, not formatted", file, #errors,
        #errors == 1 and "" or "s") }
  end
  local go = opts and opts.go
  if go then
    local problems = go_problems(tree, file)
    if #problems > 0 then
      return nil, { code = "go", diagnostics = problems,
        message = string.format("%s: %d form%s the Go compiler does not read, not formatted", file,
          #problems, #problems == 1 and "" or "s") }
    end
  end
  local S = scan(src)
  S.go = go
  local w = setmetatable({ S = S, out = {}, ci = 1, depth = 0, opened = false,
    force = false }, W)
  for _, d in ipairs(tree.decls) do
    print_decl(w, d)
    w.force = true
  end
  w:comments(#src + 2)
  if #w.out == 0 then return "" end
  return concat(w.out, "\n") .. "\n"
end

return M
