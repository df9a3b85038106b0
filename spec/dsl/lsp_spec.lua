-- zever lsp spoken to directly (JSON-RPC over pipes, spec/support/lsp_client.py): framing,
-- diagnostics after an edit, hover, definition, references, symbols, completion, formatting,
-- rename, quick fixes, semantic tokens, cancellation and the shutdown/exit handshake. The
-- Neovim spec (lsp_nvim_spec.lua) drives the same server from a real editor.

local json = require "zever.json"
local process = require "spec.support.process"
local fs = require "spec.support.files"
local sys = require "zever.sys"

local APP = [[
// A customer.
entity User {
  id: uuid @primary
  email: string @validate(format: "email")
  has_many orders: Order @foreign_key(user_id)
}

entity Order {
  id: uuid @primary
  user_id: uuid
  belongs_to user: User @foreign_key(user_id)
}

service UserService {
  rpc GetUser(id: uuid) -> User {
    http: GET "/v1/users/{id}"
    auth: required
  }
}
]]

-- Runs the script against a fresh `zever lsp` in root; the transcript { got =, code = }.
local function run(root, script)
  local path = root .. "/script.json"
  fs.write(path, json.encode(script))
  local r = process.run(process.PYTHON .. " -S " .. process.quote(sys.home() .. "/spec/support/lsp_client.py") .. " "
    .. process.quote(sys.exe()) .. " " .. process.quote(root) .. " " .. process.quote(path))
  local t = json.decode(r.stdout)
  assert(t and not t.error, r.stdout .. r.stderr)
  return t
end

local function req(id, method, params)
  return { send = { jsonrpc = "2.0", id = id, method = method, params = params or json.object() } }
end

local function note(method, params)
  return { send = { jsonrpc = "2.0", method = method, params = params } }
end

describe("zever lsp over JSON-RPC", function()
  local root, uri, file

  local function at(line, character)
    return { textDocument = { uri = uri }, position = { line = line, character = character } }
  end

  local function open(text, version)
    return note("textDocument/didOpen", { textDocument = { uri = uri, languageId = "zen",
      version = version or 1, text = text } })
  end

  local function start()
    return {
      req(1, "initialize", { rootUri = "file://" .. root, capabilities = json.object(),
        initializationOptions = { debounce_ms = 5 } }),
      { expect = { id = 1 } },
      note("initialized", json.object()),
    }
  end

  local function finish(script)
    script[#script + 1] = req(999, "shutdown")
    script[#script + 1] = { expect = { id = 999 } }
    script[#script + 1] = note("exit")
    return script
  end

  -- The responses of a script, by request id (and "diagnostics" for the last publish).
  local function answers(script)
    local t = run(root, finish(script))
    local by = { code = t.code, list = t.got }
    for _, g in ipairs(t.got) do
      local m = g[2]
      if m.id ~= nil then by[m.id] = m end
      if m.method == "textDocument/publishDiagnostics" then by.diagnostics = m.params end
    end
    return by
  end

  before_each(function()
    root = fs.tmpdir()
    assert(os.execute("mkdir -p " .. process.quote(root .. "/schema/app")))
    file = root .. "/schema/app/app.zen"
    fs.write(file, APP)
    uri = "file://" .. file
  end)

  after_each(function() fs.rm_rf(root) end)

  it("initializes with its capabilities and exits 0 after shutdown and exit", function()
    local a = answers(start())
    local caps = a[1].result.capabilities
    assert.is_true(caps.hoverProvider)
    assert.is_true(caps.definitionProvider)
    assert.is_true(caps.renameProvider ~= nil)
    assert.are.same({ "@", ":", " " }, caps.completionProvider.triggerCharacters)
    assert.are.equal(0, a.code)
  end)

  it("exits 1 when the input ends without shutdown", function()
    local script = start()
    script[#script + 1] = { close = true }
    assert.are.equal(1, run(root, script).code)
  end)

  it("publishes the resolver's diagnostics after an edit, and clears them when fixed", function()
    local script = start()
    script[#script + 1] = open((APP:gsub("email: string", "email: strng")))
    script[#script + 1] = { expect = { method = "textDocument/publishDiagnostics" } }
    script[#script + 1] = note("textDocument/didChange", { textDocument = { uri = uri, version = 2 },
      contentChanges = { { text = APP } } })
    script[#script + 1] = { expect = { method = "textDocument/publishDiagnostics" } }
    local t = run(root, finish(script))
    local first, second = t.got[2][2].params, t.got[3][2].params
    assert.are.equal(uri, first.uri)
    assert.are.equal(1, #first.diagnostics)
    local d = first.diagnostics[1]
    assert.are.equal("unknown type strng (did you mean string?)", d.message)
    assert.are.same({ start = { line = 3, character = 9 }, ["end"] = { line = 3, character = 14 } }, d.range)
    assert.are.equal(1, d.severity)
    assert.are.same({}, second.diagnostics)
    assert.are.equal(2, second.version)
  end)

  it("answers hover, definition, references and document symbols", function()
    local script = start()
    script[#script + 1] = open(APP)
    script[#script + 1] = req(2, "textDocument/hover", at(10, 20))       -- User in belongs_to
    script[#script + 1] = { expect = { id = 2 } }
    script[#script + 1] = req(3, "textDocument/definition", at(10, 20))
    script[#script + 1] = { expect = { id = 3 } }
    script[#script + 1] = req(4, "textDocument/references", at(1, 8))
    script[#script + 1] = { expect = { id = 4 } }
    script[#script + 1] = req(5, "textDocument/documentSymbol", { textDocument = { uri = uri } })
    script[#script + 1] = { expect = { id = 5 } }
    script[#script + 1] = req(6, "textDocument/hover", at(14, 7))        -- rpc GetUser
    script[#script + 1] = { expect = { id = 6 } }
    script[#script + 1] = req(7, "textDocument/hover", at(2, 8))         -- uuid
    script[#script + 1] = { expect = { id = 7 } }
    local a = answers(script)
    assert.are.equal("**entity User** (module app)\ntable `users`\n\nA customer.", a[2].result.contents.value)
    assert.are.same({ uri = uri, range = { start = { line = 1, character = 7 },
      ["end"] = { line = 1, character = 11 } } }, a[3].result)
    local lines = {}
    for _, l in ipairs(a[4].result) do lines[#lines + 1] = l.range.start.line end
    assert.are.same({ 1, 10, 14 }, lines)
    local names = {}
    for _, s in ipairs(a[5].result) do names[#names + 1] = s.name .. "/" .. #s.children end
    assert.are.same({ "User/3", "Order/3", "UserService/1" }, names)
    assert.are.equal("**rpc UserService.GetUser**\n`GET /v1/users/{id}`\nauth: required\nreturns `User`",
      a[6].result.contents.value)
    assert.matches("uuid", a[7].result.contents.value, 1, true)
  end)

  it("completes types after a colon, attributes after @ and auth values", function()
    local text = APP:gsub("  user_id: uuid\n", "  user_id: uuid\n  note: \n  extra: string @\n", 1)
    text = text:gsub("    auth: required\n", "    auth: \n", 1)
    local script = start()
    script[#script + 1] = open(text)
    script[#script + 1] = req(2, "textDocument/completion", at(10, 8))
    script[#script + 1] = { expect = { id = 2 } }
    script[#script + 1] = req(3, "textDocument/completion", at(11, 17))
    script[#script + 1] = { expect = { id = 3 } }
    script[#script + 1] = req(4, "textDocument/completion", at(18, 10))
    script[#script + 1] = { expect = { id = 4 } }
    local a = answers(script)
    local function labels(r)
      local set = {}
      for _, i in ipairs(r.result.items) do set[i.label] = true end
      return set
    end
    local types = labels(a[2])
    assert.is_true(types.uuid and types.timestamp and types.User and types.Order and types.datetime)
    local attrs = labels(a[3])
    assert.is_true(attrs.validate and attrs.primary and attrs.schema)
    assert.is_nil(attrs.uuid)
    local auth = labels(a[4])
    assert.is_true(auth.required and auth.none)
  end)

  it("formats with zever fmt and renames a declaration in every file", function()
    fs.write(root .. "/schema/app/more.zen", "entity Note { id: uuid @primary  belongs_to user: User @foreign_key(user_id) }\n")
    local script = start()
    script[#script + 1] = open("entity   A {  id: uuid @primary }\n")
    script[#script + 1] = req(2, "textDocument/formatting", { textDocument = { uri = uri },
      options = { tabSize = 2, insertSpaces = true } })
    script[#script + 1] = { expect = { id = 2 } }
    script[#script + 1] = note("textDocument/didChange", { textDocument = { uri = uri, version = 2 },
      contentChanges = { { text = APP } } })
    script[#script + 1] = req(3, "textDocument/rename", { textDocument = { uri = uri },
      position = { line = 1, character = 9 }, newName = "Customer" })
    script[#script + 1] = { expect = { id = 3 } }
    script[#script + 1] = req(4, "textDocument/rename", { textDocument = { uri = uri },
      position = { line = 1, character = 9 }, newName = "not a name" })
    script[#script + 1] = { expect = { id = 4 } }
    local a = answers(script)
    assert.are.equal("entity A {\n  id: uuid @primary\n}\n", a[2].result[1].newText)
    local changes = a[3].result.changes
    assert.are.equal(3, #changes[uri])
    assert.are.equal(1, #changes["file://" .. root .. "/schema/app/more.zen"])
    assert.are.equal("Customer", changes[uri][1].newText)
    assert.are.equal(-32602, a[4].error.code)
  end)

  it("offers the did-you-mean of a diagnostic as a quick fix", function()
    local text = APP:gsub('format: "email"', 'format: "emial"')
    local script = start()
    script[#script + 1] = open(text)
    script[#script + 1] = { expect = { method = "textDocument/publishDiagnostics" } }
    local t = run(root, finish(script))
    local diag = t.got[2][2].params.diagnostics[1]
    assert.matches("did you mean email", diag.message, 1, true)
    script = start()
    script[#script + 1] = open(text)
    script[#script + 1] = req(2, "textDocument/codeAction", { textDocument = { uri = uri },
      range = diag.range, context = { diagnostics = { diag } } })
    script[#script + 1] = { expect = { id = 2 } }
    local a = answers(script)
    local action = a[2].result[1]
    assert.are.equal("quickfix", action.kind)
    local edit = action.edit.changes[uri][1]
    assert.are.equal('"email"', edit.newText)
    assert.are.equal(diag.range.start.character, edit.range.start.character)
  end)

  it("gives semantic tokens: keywords, types, decorators", function()
    local script = start()
    script[#script + 1] = open("entity A {\n  id: uuid @primary\n}\n")
    script[#script + 1] = req(2, "textDocument/semanticTokens/full", { textDocument = { uri = uri } })
    script[#script + 1] = { expect = { id = 2 } }
    local a = answers(script)
    -- entity(keyword) A(type) id(property) uuid(type) @primary(decorator)
    assert.are.same({ 0, 0, 6, 0, 0,  0, 7, 1, 1, 0,  1, 2, 2, 6, 0,  0, 4, 4, 1, 0,  0, 5, 8, 5, 0 },
      a[2].result.data)
  end)

  it("answers a request cancelled in the same read with RequestCancelled, and keeps going", function()
    local script = start()
    script[#script + 1] = open(APP)
    script[#script + 1] = { send_all = {
      { jsonrpc = "2.0", id = 2, method = "textDocument/hover", params = at(10, 20) },
      { jsonrpc = "2.0", method = "$/cancelRequest", params = { id = 2 } },
      { jsonrpc = "2.0", id = 3, method = "textDocument/hover", params = at(10, 20) },
    } }
    script[#script + 1] = { expect = { id = 2 } }
    script[#script + 1] = { expect = { id = 3 } }
    local a = answers(script)
    assert.are.equal(-32800, a[2].error.code)
    assert.matches("entity User", a[3].result.contents.value, 1, true)
  end)

  it("reports framing and protocol errors without dying", function()
    local script = start()
    script[#script + 1] = { raw = "Content-Length: 5\r\n\r\n{bad}" }
    script[#script + 1] = { expect = { id = json.null } }
    script[#script + 1] = req(2, "no/such")
    script[#script + 1] = { expect = { id = 2 } }
    script[#script + 1] = { raw = "Content-Length: 10\r\n\r\n" }
    script[#script + 1] = { raw = '{"a":1234}' }
    script[#script + 1] = req(3, "textDocument/hover", at(0, 0))
    script[#script + 1] = { expect = { id = 3 } }
    local t = run(root, finish(script))
    assert.are.equal(-32700, t.got[2][2].error.code)
    assert.are.equal(-32601, t.got[3][2].error.code)
    assert.are.equal(3, t.got[4][2].id)
    assert.are.equal(0, t.code)
  end)

  it("refuses requests before initialize", function()
    local t = run(root, { req(1, "textDocument/hover", at(0, 0)), { expect = { id = 1 } },
      req(2, "initialize", { rootUri = "file://" .. root, capabilities = json.object() }),
      { expect = { id = 2 } }, req(3, "shutdown"), { expect = { id = 3 } }, note("exit") })
    assert.are.equal(-32002, t.got[1][2].error.code)
    assert.are.equal(0, t.code)
  end)
end)
