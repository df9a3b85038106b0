-- dsl.lsp: the Language Server of .zen behind `zever lsp` (JSON-RPC 2.0 over stdio, framed by
-- Content-Length headers, LSP 3.17). It runs the same parser, resolver and formatter as
-- `zever check` and `zever fmt`:
--
--   diagnostics   published for every .zen file of the workspace after an edit, debounced
--                 (opts.debounce_ms, default 5: edits closer together compile once; input
--                 waiting to be read is always read first, so a burst of edits that queued
--                 up during a compile compiles once, as rust-analyzer batches its changes)
--   hover         a declaration (kind, module, doc, table or route), a field or input (type,
--                 doc), a scalar (its SQL type), an rpc (verb, path, auth)
--   definition    of an entity, message, enum, service, job, saga, or an Svc.Rpc reference
--   references    every use of a declared name in the workspace (with the declaration)
--   symbols       the file's declarations with their members
--   completion    keywords at the top level, option labels in blocks, types after "name:",
--                 attributes after "@", option values after "auth:", "http:", ...
--   formatting    dsl.format (refused, with no edit, when the file has syntax errors)
--   rename        a declared name and its uses, in every file
--   code actions  the did-you-mean of a diagnostic as a quick fix
--   semantic tokens  keywords, types, strings, numbers, comments, attributes, properties
--
-- Requests are answered in order; messages that arrive together are read first, so a
-- $/cancelRequest that comes before its request is handled answers it with RequestCancelled
-- (-32800). Columns are UTF-16 code units as LSP wants; the compiler counts code points, which
-- is the same for the BMP (a non-BMP rune before a position shifts it by one).
--
--   lsp.serve(input, output[, opts]) -> exit code   input:read_message-like, see M.stdio
--   lsp.Server.new(opts)                          -> server; server:handle(msg) -> replies
--
-- It must not write anything but protocol messages to its output.

local json = require "zever.json"
local lexer = require "zever.lexer"
local parser = require "dsl.parser"
local resolver = require "dsl.resolver"
local format_mod = require "dsl.format"
local C = require "dsl.resolve.common"
local ir_mod = require "dsl.ir"
local sys = require "zever.sys"

local concat, sort = table.concat, table.sort
local format = string.format

local M = {}

local null = json.null

-- The default debounce of diagnostics after an edit, in ms. gopls and rust-analyzer publish
-- the edited package's diagnostics as soon as the queued changes are applied; a few ms still
-- join an edit with a request the client wrote right behind it (didChange then completion),
-- which then needs no compile of its own first. 20 ms was two thirds of the 30 ms target.
M.DEBOUNCE_MS = 5

-- URIs -----------------------------------------------------------------------------------------

local function uri_to_path(uri)
  local p = uri:gsub("^file://", "")
  return (p:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

local function path_to_uri(path)
  return "file://" .. path:gsub("[^%w/%._%-~]", function(c) return format("%%%02X", c:byte()) end)
end

-- The workspace -------------------------------------------------------------------------------

local Server = {}
Server.__index = Server
M.Server = Server

local KEYWORDS = { "entity", "message", "enum", "service", "rpc", "job", "schedule", "saga",
  "step", "has_many", "has_one", "belongs_to", "many_to_many", "index" }
local ATTRIBUTES = { "primary", "unique", "default", "validate", "renamed_from", "foreign_key",
  "on_delete", "concurrently", "schema" }
local OPTIONS = { "http", "auth", "permission", "errors", "paginated", "queue", "retry",
  "timeout", "cron", "dispatch", "prefix", "join_table", "execute", "compensate", "pivot" }
local OPTION_VALUES = {
  auth = { "required", "none", "required(roles: { })" },
  http = { "GET", "POST", "PUT", "PATCH", "DELETE" },
  paginated = { "true", "false" },
  pivot = { "true", "false" },
  permission = { 'check("", resource: , owner_field: )' },
  retry = { "max_attempts(3)", "backoff(exponential, base: 10s)" },
}

function Server.new(opts)
  opts = opts or {}
  return setmetatable({ docs = {}, root = nil, debounce = opts.debounce_ms or M.DEBOUNCE_MS,
    published = {}, dirty = false, initialized = false, shutdown = false }, Server)
end

-- The .zen files of the workspace on disk (under root), sorted.
function Server:disk_files()
  if not self.root then return {} end
  local out = {}
  local function walk(dir, depth)
    if depth > 8 then return end
    for _, name in ipairs(sys.listdir(dir) or {}) do
      local full = dir .. "/" .. name
      if name:sub(1, 1) ~= "." and name ~= "node_modules" and name ~= "generated" then
        if sys.isdir(full) then
          walk(full, depth + 1)
        elseif name:match("%.zen$") then
          out[#out + 1] = full
        end
      end
    end
  end
  walk(self.root, 0)
  sort(out)
  return out
end

-- Compiles the workspace (open documents over the disk). Sets self.result.
function Server:compile()
  local sources, files, seen = {}, {}, {}
  self.disk = self.disk or {}
  for _, f in ipairs(self:disk_files()) do
    if not self.docs[f] then
      -- A file on disk is read again only when its mtime moved.
      local mt = sys.mtime(f)
      local cached = self.disk[f]
      if not (cached and cached.mtime == mt) then
        local h = io.open(f, "rb")
        cached = h and { mtime = mt, text = h:read("*a") } or nil
        if h then h:close() end
        self.disk[f] = cached
      end
      if cached then
        sources[f] = cached.text
        files[#files + 1] = f
        seen[f] = true
      end
    end
  end
  for f, d in pairs(self.docs) do
    if not seen[f] then
      sources[f] = d.text
      files[#files + 1] = f
    end
  end
  sort(files)
  local trees, diags = {}, {}
  -- Trees are kept by file and text: an edit re-parses its own file only. (The resolver does
  -- not change the trees' meaning; it notes inline enum names on type nodes, the same each time.)
  self.parsed = self.parsed or {}
  local parsed = {}
  for _, f in ipairs(files) do
    local p = self.parsed[f]
    if not (p and p.text == sources[f]) then
      local tree, pd = parser.parse(sources[f], f)
      p = { text = sources[f], tree = tree, diags = pd }
    end
    parsed[f] = p
    trees[#trees + 1] = p.tree
    for _, d in ipairs(p.diags) do diags[#diags + 1] = d end
  end
  self.parsed = parsed
  -- Module names as the CLI gives them from the paths under the root (schema/<module>/x.zen).
  local root = self.root
  local function module_of(file)
    local rel = root and file:sub(1, #root + 1) == root .. "/" and file:sub(#root + 2) or file
    return C.module_of(rel)
  end
  local ir, rd = resolver.resolve(trees, { module_of = module_of })
  for _, d in ipairs(rd) do diags[#diags + 1] = d end
  self.result = { sources = sources, files = files, trees = trees, ir = ir, diags = diags }
  self.dirty = false
  return self.result
end

function Server:current()
  return self.result or self:compile()
end

-- Diagnostics -----------------------------------------------------------------------------------

local function line_text(src, line)
  local n = 0
  for l in (src .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    if n == line then return l end
  end
  return ""
end

-- The end column (1-based, exclusive) of the word starting at col on text.
local function word_end(text, col)
  local e = col
  while e <= #text and text:sub(e, e):match("[%w_%.\"]") do e = e + 1 end
  if e == col then e = col + 1 end
  return e
end

local SEVERITY = { error = 1, warning = 2 }

local function lsp_diagnostic(d, src)
  local line = (d.line or 1) - 1
  local col = (d.col or 1) - 1
  local text = line_text(src or "", d.line or 1)
  local e = word_end(text, col + 1) - 1
  return { range = { start = { line = line, character = col }, ["end"] = { line = line, character = e } },
    severity = SEVERITY[d.severity] or 1, source = "zever " .. (d.phase or "check"),
    message = d.message }
end

-- publishDiagnostics notifications for every file with diagnostics now or before.
function Server:diagnostics_notes()
  local r = (not self.dirty and self.result) or self:compile()
  local by = {}
  for _, d in ipairs(r.diags) do
    if d.file then
      by[d.file] = by[d.file] or {}
      local l = by[d.file]
      l[#l + 1] = lsp_diagnostic(d, r.sources[d.file])
    end
  end
  local notes, files = {}, {}
  for f in pairs(by) do files[#files + 1] = f end
  for f in pairs(self.published) do
    if not by[f] then files[#files + 1] = f end
  end
  -- Every open document gets its (maybe empty) list after an edit: the client learns that the
  -- edit was checked.
  for f in pairs(self.docs) do
    if not by[f] and not self.published[f] then files[#files + 1] = f end
  end
  sort(files)
  local now = {}
  for _, f in ipairs(files) do
    local list = by[f] or {}
    now[f] = #list > 0 or nil
    local version = self.docs[f] and self.docs[f].version or nil
    notes[#notes + 1] = { jsonrpc = "2.0", method = "textDocument/publishDiagnostics",
      params = { uri = path_to_uri(f), version = version, diagnostics = json.array(list) } }
  end
  self.published = now
  return notes
end

-- Positions and names ---------------------------------------------------------------------------

-- The word (letters, digits, _ and dots) at a 0-based line and character of src, with its
-- 1-based start and end columns.
local function word_at(src, line, character)
  local text = line_text(src, line + 1)
  local c = character + 1
  if c > #text + 1 then c = #text + 1 end
  local s, e = c, c
  while s > 1 and text:sub(s - 1, s - 1):match("[%w_%.]") do s = s - 1 end
  while e <= #text and text:sub(e, e):match("[%w_%.]") do e = e + 1 end
  if s == e then return nil end
  local word = text:sub(s, e - 1)
  -- On a dotted name, the part under the cursor and what precedes it.
  return word, s, e, text
end

local function range(line, col, len)
  return { start = { line = line - 1, character = col - 1 },
    ["end"] = { line = line - 1, character = col - 1 + len } }
end

-- Every declaration of the workspace: name -> list of { sym fields }.
function Server:declarations()
  local r = self:current()
  local out = {}
  for i, tree in ipairs(r.trees) do
    local file = r.files[i]
    for _, d in ipairs(tree.decls) do
      if d.name then
        local e = { kind = d.kind, name = d.name, file = file, line = d.name_line or d.line,
          col = d.name_col or d.col, decl = d }
        out[d.name] = out[d.name] or {}
        local l = out[d.name]
        l[#l + 1] = e
      end
    end
  end
  return out
end

-- The declaration a word names (Name, module.Name, Svc.Rpc): { file, line, col, len, ... }.
function Server:resolve_word(word, file)
  local decls = self:declarations()
  local parts = {}
  for p in word:gmatch("[^.]+") do parts[#parts + 1] = p end
  -- Svc.Rpc or module.Svc.Rpc: the rpc.
  for i = #parts, 1, -1 do
    local list = decls[parts[i]]
    if list then
      local d = list[1]
      for _, x in ipairs(list) do
        if x.file == file then d = x end
      end
      if d.kind == "service" and parts[i + 1] then
        for _, rpc in ipairs(d.decl.rpcs or {}) do
          if rpc.name == parts[i + 1] then
            local tok_col = rpc.col + 4 -- "rpc " then the name
            return { kind = "rpc", name = rpc.name, file = d.file, line = rpc.line, col = tok_col,
              len = #rpc.name, decl = rpc, service = d }
          end
        end
      end
      return { kind = d.kind, name = d.name, file = d.file, line = d.line, col = d.col,
        len = #d.name, decl = d.decl }
    end
  end
  -- A bare rpc name: the rpc of that name, in this file's services first.
  if #parts == 1 then
    local found
    for _, list in pairs(decls) do
      for _, d in ipairs(list) do
        if d.kind == "service" then
          for _, rpc in ipairs(d.decl.rpcs or {}) do
            if rpc.name == word and (not found or d.file == file) then
              found = { kind = "rpc", name = rpc.name, file = d.file, line = rpc.line,
                col = rpc.col + 4, len = #rpc.name, decl = rpc, service = d }
            end
          end
        end
      end
    end
    return found
  end
  return nil
end

-- Every token of the workspace that names a declared name (as Name or the last part of a.Name
-- or the first part of Svc.Rpc): list of { file, line, col, len }.
function Server:occurrences(name)
  local r = self:current()
  local out = {}
  for _, file in ipairs(r.files) do
    local src = r.sources[file]
    local toks = lexer.lex(src)
    for i = 1, toks.n do
      if toks.kind[i] == "IDENT" and toks.len[i] == #name
        and src:sub(toks.pos[i], toks.pos[i] + toks.len[i] - 1) == name then
        out[#out + 1] = { file = file, line = toks.line[i], col = toks.col[i], len = #name }
      end
    end
  end
  return out
end

-- Requests --------------------------------------------------------------------------------------

local handlers = {}

local SEMANTIC_TYPES = { "keyword", "type", "string", "number", "comment", "decorator",
  "property", "enumMember" }

handlers.initialize = function(self, params)
  local root = params.rootUri ~= nil and params.rootUri ~= null and uri_to_path(params.rootUri)
    or (params.rootPath ~= null and params.rootPath) or nil
  self.root = root and root:gsub("/+$", "") or nil
  local o = params.initializationOptions
  if type(o) == "table" and type(o.debounce_ms) == "number" then self.debounce = o.debounce_ms end
  self.initialized = true
  return {
    capabilities = {
      textDocumentSync = { openClose = true, change = 1, save = { includeText = false } },
      hoverProvider = true,
      definitionProvider = true,
      referencesProvider = true,
      documentSymbolProvider = true,
      completionProvider = { triggerCharacters = { "@", ":", " " } },
      documentFormattingProvider = true,
      renameProvider = { prepareProvider = false },
      codeActionProvider = { codeActionKinds = { "quickfix" } },
      semanticTokensProvider = { legend = { tokenTypes = SEMANTIC_TYPES,
        tokenModifiers = json.array() }, full = true },
    },
    serverInfo = { name = "zever lsp", version = "0.1.0" },
  }
end

handlers.shutdown = function(self)
  self.shutdown = true
  return null
end

local function doc_path(params)
  return uri_to_path(params.textDocument.uri)
end

function Server:source(path)
  local d = self.docs[path]
  if d then return d.text end
  local r = self:current()
  return r.sources[path]
end

-- The IR node of a declaration (entity, enum, ...) by name and module.
function Server:ir_node(kind, name)
  local ir = self:current().ir
  local lists = { entity = ir.entities, message = ir.messages, enum = ir.enums,
    service = ir.services, job = ir.jobs, schedule = ir.schedules, saga = ir.sagas }
  for _, n in ipairs(lists[kind] or {}) do
    if n.name == name then return n end
  end
  return nil
end

handlers["textDocument/hover"] = function(self, params)
  local path = doc_path(params)
  local src = self:source(path)
  if not src then return null end
  local word = word_at(src, params.position.line, params.position.character)
  if not word then return null end
  local lines = {}
  local target = self:resolve_word(word, path)
  if target and target.kind == "rpc" then
    local svc = self:ir_node("service", target.service.name)
    for _, rpc in ipairs(svc and svc.rpcs or {}) do
      if rpc.name == target.name then
        lines[#lines + 1] = format("**rpc %s.%s**", svc.name, rpc.name)
        if rpc.method then lines[#lines + 1] = format("`%s %s`", rpc.method, rpc.path) end
        lines[#lines + 1] = format("auth: %s%s", rpc.auth or "required",
          rpc.permission and (", permission " .. rpc.permission) or "")
        if rpc.output then lines[#lines + 1] = "returns `" .. rpc.output .. "`" end
        if rpc.doc then lines[#lines + 1] = "\n" .. rpc.doc end
      end
    end
  elseif target then
    local node = self:ir_node(target.kind, target.name)
    lines[#lines + 1] = format("**%s %s**%s", target.kind, target.name,
      node and node.module and (" (module " .. node.module .. ")") or "")
    if node and node.table then lines[#lines + 1] = "table `" .. node.table .. "`" end
    if node and node.values then
      local v = {}
      for i, x in ipairs(node.values) do v[i] = x.name end
      lines[#lines + 1] = "values: " .. concat(v, ", ")
    end
    local doc = (node and node.doc) or (target.decl and target.decl.doc)
    if doc then lines[#lines + 1] = "\n" .. doc end
  elseif ir_mod.SCALARS[word] then
    lines[#lines + 1] = format("**%s** (scalar; SQL type `%s`)", word, ir_mod.SCALARS[word])
  elseif word == "datetime" then
    lines[#lines + 1] = "**datetime** (an alias of timestamp)"
  else
    -- A field or input: its type from the tree of this file.
    local r = self:current()
    local line = params.position.line + 1
    for i, f in ipairs(r.files) do
      if f == path then
        for _, d in ipairs(r.trees[i].decls) do
          local members = {}
          for _, m in ipairs(d.members or {}) do members[#members + 1] = m end
          for _, rpc in ipairs(d.rpcs or {}) do
            for _, p in ipairs(rpc.params or {}) do members[#members + 1] = p end
          end
          for _, p in ipairs(d.params or {}) do members[#members + 1] = p end
          for _, m in ipairs(members) do
            if m.line == line and m.name == word and m.type then
              local t = m.type
              local tt = t.values and ("enum(" .. #t.values .. " values)") or
                (t.list and "[...]" or t.name)
              lines[#lines + 1] = format("**%s %s**: `%s%s`", m.kind, m.name, tt or "?",
                t.optional and "?" or "")
              if m.doc then lines[#lines + 1] = "\n" .. m.doc end
            end
          end
        end
      end
    end
  end
  if #lines == 0 then return null end
  return { contents = { kind = "markdown", value = concat(lines, "\n") } }
end

handlers["textDocument/definition"] = function(self, params)
  local path = doc_path(params)
  local src = self:source(path)
  if not src then return null end
  local word = word_at(src, params.position.line, params.position.character)
  local target = word and self:resolve_word(word, path)
  if not target then return null end
  return { uri = path_to_uri(target.file), range = range(target.line, target.col, target.len) }
end

handlers["textDocument/references"] = function(self, params)
  local path = doc_path(params)
  local src = self:source(path)
  if not src then return json.array() end
  local word = word_at(src, params.position.line, params.position.character)
  local target = word and self:resolve_word(word, path)
  if not target then return json.array() end
  local out = json.array()
  for _, o in ipairs(self:occurrences(target.name)) do
    local is_decl = o.file == target.file and o.line == target.line and o.col == target.col
    if not is_decl or params.context == nil or params.context.includeDeclaration ~= false then
      out[#out + 1] = { uri = path_to_uri(o.file), range = range(o.line, o.col, o.len) }
    end
  end
  return out
end

local SYMBOL_KIND = { entity = 23, message = 23, enum = 10, service = 11, job = 12,
  schedule = 12, saga = 12, field = 8, relation = 8, index = 8, rpc = 6, value = 22,
  option = 7, param = 8, step = 6 }

handlers["textDocument/documentSymbol"] = function(self, params)
  local path = doc_path(params)
  local src = self:source(path)
  if not src then return json.array() end
  local tree = parser.parse(src, path)
  local out = json.array()
  local function sym(node, name, kind, children)
    local r = range(node.line, node.col, #name)
    return { name = name, kind = SYMBOL_KIND[kind] or 13, range = r, selectionRange = r,
      children = children }
  end
  for _, d in ipairs(tree.decls) do
    if d.name then
      local kids = json.array()
      for _, m in ipairs(d.members or d.values or d.rpcs or d.steps or {}) do
        if m.name then kids[#kids + 1] = sym(m, m.name, m.kind) end
      end
      out[#out + 1] = sym({ line = d.name_line or d.line, col = d.name_col or d.col }, d.name,
        d.kind, kids)
    end
  end
  return out
end

handlers["textDocument/completion"] = function(self, params)
  local path = doc_path(params)
  local src = self:source(path) or ""
  local text = line_text(src, params.position.line + 1):sub(1, params.position.character)
  local items = json.array()
  local function add(label, kind, detail)
    items[#items + 1] = { label = label, kind = kind, detail = detail }
  end
  local label = text:match("([%w_]+):%s*[%w_\"]*$")
  if text:match("@[%w_]*$") then
    for _, a in ipairs(ATTRIBUTES) do add(a, 14, "attribute") end
  elseif label and OPTION_VALUES[label] then
    for _, v in ipairs(OPTION_VALUES[label]) do add(v, 12, label) end
  elseif label and (label == "execute" or label == "compensate") then
    for _, d in pairs(self:declarations()) do
      for _, x in ipairs(d) do
        if x.kind == "service" then
          for _, rpc in ipairs(x.decl.rpcs or {}) do add(x.name .. "." .. rpc.name, 3, "rpc") end
        end
      end
    end
  elseif label then
    -- A type: scalars, then the declared entities, messages and enums.
    local scalars = {}
    for s in pairs(ir_mod.SCALARS) do scalars[#scalars + 1] = s end
    sort(scalars)
    for _, s in ipairs(scalars) do add(s, 25, "scalar") end
    add("datetime", 25, "alias of timestamp")
    add("enum()", 13, "inline enum")
    local names = {}
    for name, list in pairs(self:declarations()) do
      local k = list[1].kind
      if k == "entity" or k == "message" or k == "enum" then names[#names + 1] = { name, k } end
    end
    sort(names, function(a, b) return a[1] < b[1] end)
    for _, n in ipairs(names) do add(n[1], n[2] == "enum" and 13 or 7, n[2]) end
  elseif text:match("^%s*[%w_]*$") then
    if text:match("^%s+") then
      for _, o in ipairs(OPTIONS) do add(o, 10, "option") end
    end
    for _, k in ipairs(KEYWORDS) do add(k, 14, "keyword") end
  end
  return { isIncomplete = false, items = items }
end

handlers["textDocument/formatting"] = function(self, params)
  local path = doc_path(params)
  local src = self:source(path)
  if not src then return json.array() end
  local out = format_mod.format(src, path)
  if not out or out == src then return json.array() end
  local n = 0
  for _ in (src .. "\n"):gmatch("[^\n]*\n") do n = n + 1 end
  return json.array({ { range = { start = { line = 0, character = 0 },
    ["end"] = { line = n, character = 0 } }, newText = out } })
end

local IDENT = "^[%a_][%w_]*$"

handlers["textDocument/rename"] = function(self, params)
  local path = doc_path(params)
  local src = self:source(path)
  local new = params.newName
  if type(new) ~= "string" or not new:match(IDENT) then
    return nil, { code = -32602, message = "the new name must be an identifier" }
  end
  local word = src and word_at(src, params.position.line, params.position.character)
  local target = word and self:resolve_word(word, path)
  if not target then return nil, { code = -32602, message = "no declared name here to rename" } end
  local changes = {}
  for _, o in ipairs(self:occurrences(target.name)) do
    local uri = path_to_uri(o.file)
    changes[uri] = changes[uri] or json.array()
    local l = changes[uri]
    l[#l + 1] = { range = range(o.line, o.col, o.len), newText = new }
  end
  return { changes = changes }
end

handlers["textDocument/codeAction"] = function(self, params)
  local out = json.array()
  local path = doc_path(params)
  local src = self:source(path)
  for _, d in ipairs(params.context and params.context.diagnostics or {}) do
    local fix = type(d.message) == "string" and d.message:match("%(did you mean ([^%)%?]+)%?%)")
    if fix and src then
      local s = d.range.start
      local text = line_text(src, s.line + 1)
      local e = word_end(text, s.character + 1) - 1
      local old = text:sub(s.character + 1, e)
      -- A quoted value stays quoted ("emial" -> "email").
      local new = old:match('^".*"$') and ('"' .. fix .. '"') or fix
      out[#out + 1] = { title = format("Change %s to %s", old, new), kind = "quickfix",
        diagnostics = { d }, isPreferred = true,
        edit = { changes = { [params.textDocument.uri] = { { range = { start = s,
          ["end"] = { line = s.line, character = e } }, newText = new } } } } }
    end
  end
  return out
end

handlers["textDocument/semanticTokens/full"] = function(self, params)
  local path = doc_path(params)
  local src = self:source(path) or ""
  local toks = lexer.lex(src)
  local decls = self:declarations()
  local data, pl, pc = {}, 1, 1
  local TYPE = { keyword = 0, type = 1, string = 2, number = 3, comment = 4, decorator = 5,
    property = 6 }
  local i = 1
  while i <= toks.n do
    local kd = toks.kind[i]
    local t, len = nil, toks.len[i]
    local text = src:sub(toks.pos[i], toks.pos[i] + len - 1)
    if kd == "KEYWORD" then
      t = (text == "true" or text == "false") and "number" or "keyword"
    elseif kd == "STRING" then
      t = "string"
    elseif kd == "INT" or kd == "FLOAT" or kd == "DURATION" then
      t = "number"
    elseif kd == "COMMENT" then
      t = "comment"
    elseif kd == "@" and (toks.kind[i + 1] == "IDENT" or toks.kind[i + 1] == "KEYWORD") then
      t, len = "decorator", len + toks.len[i + 1]
      i = i + 1
    elseif kd == "IDENT" then
      if ir_mod.SCALARS[text] or text == "datetime" or decls[text] then
        t = "type"
      elseif text == "saga" or text == "step" then
        t = "keyword"
      else
        t = "property"
      end
    end
    if t and not text:find("\n", 1, true) then
      local line, col = toks.line[kd == "@" and i - 1 or i], toks.col[kd == "@" and i - 1 or i]
      local dl = line - pl
      local dc = dl == 0 and (col - pc) or (col - 1)
      data[#data + 1] = dl
      data[#data + 1] = dc
      data[#data + 1] = len
      data[#data + 1] = TYPE[t]
      data[#data + 1] = 0
      pl, pc = line, col
    end
    i = i + 1
  end
  return { data = json.array(data) }
end

-- Notifications ---------------------------------------------------------------------------------

local notes = {}

notes["textDocument/didOpen"] = function(self, params)
  local td = params.textDocument
  self.docs[uri_to_path(td.uri)] = { text = td.text, version = td.version }
  self.dirty = true
end

notes["textDocument/didChange"] = function(self, params)
  local path = doc_path(params)
  local d = self.docs[path] or {}
  for _, c in ipairs(params.contentChanges or {}) do
    if c.range == nil then d.text = c.text end -- full sync (the capability we announce)
  end
  d.version = params.textDocument.version
  self.docs[path] = d
  self.dirty = true
end

notes["textDocument/didClose"] = function(self, params)
  self.docs[doc_path(params)] = nil
  self.dirty = true
end

notes["textDocument/didSave"] = function(self)
  self.dirty = true
end

notes["initialized"] = function() end
notes["workspace/didChangeConfiguration"] = function() end

-- Dispatch --------------------------------------------------------------------------------------

-- Handles one decoded message; returns the replies to send (a list, maybe empty). A request
-- whose id is in cancelled is answered with RequestCancelled.
function Server:handle(msg, cancelled)
  if type(msg) ~= "table" or msg.jsonrpc ~= "2.0" then
    return { { jsonrpc = "2.0", id = null, error = { code = -32600, message = "invalid request" } } }
  end
  local method, id = msg.method, msg.id
  if id == nil then -- a notification
    if method == "exit" then
      self.exit = self.shutdown and 0 or 1
    elseif notes[method] then
      notes[method](self, msg.params or {})
      if self.dirty then self.dirty_at = self.clock and self.clock() or 0 end
    end
    return {}
  end
  if cancelled and cancelled[id] then
    cancelled[id] = nil
    return { { jsonrpc = "2.0", id = id, error = { code = -32800, message = "request cancelled" } } }
  end
  if not self.initialized and method ~= "initialize" then
    return { { jsonrpc = "2.0", id = id, error = { code = -32002, message = "server not initialized" } } }
  end
  local h = handlers[method]
  if not h then
    return { { jsonrpc = "2.0", id = id,
      error = { code = -32601, message = "method not found: " .. tostring(method) } } }
  end
  -- A request about the documents sees the edits: compile before answering when they changed.
  if self.dirty and method ~= "initialize" and method ~= "shutdown" then self.result = nil end
  local ok, result, err = pcall(h, self, msg.params or {})
  if not ok then
    return { { jsonrpc = "2.0", id = id, error = { code = -32603, message = tostring(result) } } }
  end
  if err then return { { jsonrpc = "2.0", id = id, error = err } } end
  return { { jsonrpc = "2.0", id = id, result = result } }
end

-- Framing ---------------------------------------------------------------------------------------

-- Splits complete messages off the front of buf: messages (decoded or a parse-error marker),
-- the rest of buf.
function M.unframe(buf)
  local out = {}
  while true do
    local head_end = buf:find("\r\n\r\n", 1, true)
    if not head_end then break end
    local head = buf:sub(1, head_end - 1)
    local len = tonumber(head:match("[Cc]ontent%-[Ll]ength:%s*(%d+)"))
    if not len then
      out[#out + 1] = { bad = "a header without Content-Length" }
      buf = buf:sub(head_end + 4)
    else
      if #buf < head_end + 3 + len then break end
      local body = buf:sub(head_end + 4, head_end + 3 + len)
      buf = buf:sub(head_end + 4 + len)
      local v = json.decode(body)
      out[#out + 1] = v ~= nil and { msg = v } or { bad = "the body is not JSON" }
    end
  end
  return out, buf
end

function M.frame(msg)
  local body = json.encode(msg)
  return "Content-Length: " .. #body .. "\r\n\r\n" .. body
end

-- stdio through poll(2) and read(2), so that a debounce can wait for input with a timeout.
local ffi = require "ffi"
require "zever.cdef.libc" -- poll, read

local function now_ms()
  return sys.now() * 1000
end

-- Serves on stdin/stdout until exit; returns the exit code (0 after shutdown, 1 otherwise).
function M.serve(opts)
  local server = Server.new(opts)
  server.clock = now_ms
  local out = io.stdout
  local pfd = ffi.new("struct pollfd[1]")
  pfd[0].fd, pfd[0].events = 0, 1 -- POLLIN
  local chunk = ffi.new("char[?]", 65536)
  local buf = ""
  local pending = false -- diagnostics owed after an edit
  local function send(list)
    for _, m in ipairs(list) do out:write(M.frame(m)) end
    out:flush()
  end
  while true do
    local timeout = -1
    if pending then
      timeout = math.max(0, math.floor(server.debounce - (now_ms() - server.dirty_at)))
    end
    local n = ffi.C.poll(pfd, 1, timeout)
    if n > 0 then
      local got = ffi.C.read(0, chunk, 65536)
      if got <= 0 then return server.shutdown and 0 or 1 end
      buf = buf .. ffi.string(chunk, got)
      local msgs
      msgs, buf = M.unframe(buf)
      -- Cancellations first: a cancel read together with its request wins.
      local cancelled = {}
      for _, m in ipairs(msgs) do
        if m.msg and m.msg.method == "$/cancelRequest" and type(m.msg.params) == "table" then
          cancelled[m.msg.params.id] = true
        end
      end
      for _, m in ipairs(msgs) do
        if m.bad then
          send({ { jsonrpc = "2.0", id = null,
            error = { code = -32700, message = "parse error: " .. m.bad } } })
        elseif m.msg.method ~= "$/cancelRequest" then
          local before = server.dirty
          send(server:handle(m.msg, cancelled))
          if server.exit then return server.exit end
          if server.dirty and not before then pending = true end
          if server.dirty then pending = true end
          -- A request compiled the edits already: diagnostics are still owed.
        end
      end
    elseif n == 0 and pending then
      pending = false
      send(server:diagnostics_notes())
    end
  end
end

return M
