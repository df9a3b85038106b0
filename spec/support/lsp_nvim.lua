-- luacheck: globals vim
-- Neovim (headless) as the client of `zever lsp`, for spec/dsl/lsp_nvim_spec.lua:
--   ZEVER=bin/zever ZEN_ROOT=dir ZEN_OUT=out.json nvim --headless -u NONE -c "luafile this"
-- Opens ZEN_ROOT/schema/app/app.zen (which has a typo on line 4), attaches the built-in LSP
-- client, and writes what it saw to ZEN_OUT as JSON: the diagnostics, a hover, a definition, a
-- completion, the diagnostics after fixing the typo, and the buffer after a rename.
local out = {}
local root, zever = os.getenv("ZEN_ROOT"), os.getenv("ZEVER")
local function finish()
  vim.fn.writefile({ vim.fn.json_encode(out) }, os.getenv("ZEN_OUT"))
  vim.cmd("qa!")
end
local ok, err = pcall(function()
  vim.cmd("edit " .. root .. "/schema/app/app.zen")
  local buf = vim.api.nvim_get_current_buf()
  local id = vim.lsp.start_client({ name = "zever", cmd = { zever, "lsp" }, root_dir = root })
  vim.lsp.buf_attach_client(buf, id)
  local client = vim.lsp.get_client_by_id(id)
  out.attached = vim.wait(10000, function() return #vim.diagnostic.get(buf) > 0 end, 10)
  out.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    out.diagnostics[#out.diagnostics + 1] = { lnum = d.lnum, col = d.col, message = d.message }
  end
  local function at(line, col, method, extra)
    vim.api.nvim_win_set_cursor(0, { line, col })
    local params = vim.lsp.util.make_position_params()
    for k, v in pairs(extra or {}) do params[k] = v end
    local r = client.request_sync(method, params, 10000, buf)
    return r and r.result
  end
  local hover = at(11, 20, "textDocument/hover") -- "User" in belongs_to user: User
  out.hover = hover and hover.contents.value
  local def = at(11, 20, "textDocument/definition")
  out.definition = def and def.range.start
  local comp = at(4, 17, "textDocument/completion")
  out.completion = {}
  for _, item in ipairs(comp and comp.items or {}) do out.completion[#out.completion + 1] = item.label end
  -- Fix the typo: the server compiles the change and clears the diagnostics.
  local line = vim.api.nvim_buf_get_lines(buf, 3, 4, false)[1]
  vim.api.nvim_buf_set_lines(buf, 3, 4, false, { (line:gsub("strng", "string")) })
  out.cleared = vim.wait(10000, function() return #vim.diagnostic.get(buf) == 0 end, 10)
  local edit = at(2, 8, "textDocument/rename", { newName = "Customer" })
  if edit then vim.lsp.util.apply_workspace_edit(edit, client.offset_encoding or "utf-16") end
  out.renamed = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  vim.lsp.stop_client(id)
end)
if not ok then out.error = tostring(err) end
finish()
