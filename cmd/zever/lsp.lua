-- zever lsp: the Language Server of .zen on stdin/stdout (dsl/lsp.lua), for editors: diagnostics
-- as you type, hover, definition, references, symbols, completion, formatting, rename, quick
-- fixes and semantic tokens, from the same parser, resolver and formatter as the CLI.

return {
  name = "lsp",
  json = false,
  dry_run = false,
  why = "speaks LSP on stdin/stdout",
  summary = "Serve the .zen Language Server over stdio (JSON-RPC) for editors",
  usage = "zever lsp [--debounce MS]",
  help = "Speaks LSP 3.17 on stdin/stdout (Content-Length framing). The workspace is the\n"
    .. "client's root folder: every .zen file under it (open documents over the disk).\n"
    .. "Neovim: vim.lsp.start({ name = 'zever', cmd = { 'zever', 'lsp' }, root_dir = ... }).\n"
    .. "Exit codes: 0 after shutdown and exit, 1 when the input ends without them.",
  flags = {
    { name = "debounce", arg = "MS", summary = "wait this long after an edit before diagnostics (5)" },
  },
  run = function(_, flags)
    local ms = flags.debounce and tonumber(flags.debounce)
    if flags.debounce and not ms then return 2, "--debounce takes milliseconds" end
    return require("dsl.lsp").serve({ debounce_ms = ms })
  end,
}
