-- zever lsp with a real editor: Neovim's built-in LSP client, headless
-- (spec/support/lsp_nvim.lua), opens a schema, reads the diagnostics, asks for hover, definition
-- and completion, fixes the typo and sees the diagnostics cleared, then applies a rename.

local json = require "zever.json"
local process = require "spec.support.process"
local fs = require "spec.support.files"
local sys = require "zever.sys"

local APP = [[
// A customer.
entity User {
  id: uuid @primary
  email: strng
  has_many orders: Order @foreign_key(user_id)
}

entity Order {
  id: uuid @primary
  user_id: uuid
  belongs_to user: User @foreign_key(user_id)
}
]]

describe("zever lsp in Neovim", function()
  local has_nvim = process.run("command -v nvim").code == 0

  it("shows diagnostics, hover, definition, completion, and renames", function()
    assert(has_nvim, "nvim is not installed (neovim is in the Makefile's DEBS: make deps)")
    local root = fs.tmpdir()
    assert(os.execute("mkdir -p " .. process.quote(root .. "/schema/app")))
    fs.write(root .. "/schema/app/app.zen", APP)
    local out = root .. "/out.json"
    local r = process.run("cd " .. process.quote(root) .. " && ZEVER=" .. process.quote(sys.exe())
      .. " ZEN_ROOT=" .. process.quote(root) .. " ZEN_OUT=" .. process.quote(out)
      .. " timeout 120 nvim --headless -u NONE -i NONE -c " .. process.quote("luafile " .. sys.home()
      .. "/spec/support/lsp_nvim.lua"))
    local seen = json.decode(fs.read(out) or "null")
    assert(type(seen) == "table", "nvim wrote nothing: " .. r.stdout .. r.stderr)
    assert.is_nil(seen.error)
    assert.is_true(seen.attached)
    assert.are.same({ { lnum = 3, col = 9, message = "unknown type strng (did you mean string?)" } },
      seen.diagnostics)
    assert.are.equal("**entity User** (module app)\ntable `users`\n\nA customer.", seen.hover)
    assert.are.same({ line = 1, character = 7 }, seen.definition)
    local labels = {}
    for _, l in ipairs(seen.completion) do labels[l] = true end
    assert.is_true(labels.string and labels.uuid and labels.Order)
    assert.is_true(seen.cleared)
    assert.are.equal("entity Customer {", seen.renamed[2])
    assert.are.equal("  belongs_to user: Customer @foreign_key(user_id)", seen.renamed[11])
    fs.rm_rf(root)
  end)
end)
