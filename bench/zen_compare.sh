#!/usr/bin/env bash
# bench/zen_compare.sh [BASE]: `zever check` and one LSP refresh of the 200-entity bench schema
# with the dsl/ of BASE (a git revision, default 16a63d2: main before session 8's compiler work)
# against the dsl/ of the working tree, side by side, on the same binary. For a quiet machine:
# wall time is what the issue's targets are about, and a loaded machine makes it noise. Takes
# about a minute.
#
# Each side is a zever home of its own (ZEVER_HOME): the tree's lua/, cmd/ and lib/ (symlinks),
# its dsl/ (BASE's from git archive, or the tree's), each precompiled to build/bc as `make` does.
# hyperfine alternates nothing, so the two commands run one after the other, RUNS times each
# (default 30); the LSP refresh is timed in-process (os.clock, the least of REFRESH runs).
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-16a63d2}
runs=${RUNS:-30}
refresh=${REFRESH:-20}
bin=$PWD/bin/zever
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
KEEP_SCHEMA="$tmp/ws" RUNS=1 bash bench/check_bench.sh >/dev/null

home() { # home DIR [REV]: a zever home in DIR with REV's dsl/ (the working tree's without REV)
  local h=$1
  mkdir -p "$h/build/bc"
  for d in lua cmd lib; do ln -s "$PWD/$d" "$h/$d"; done
  ln -s "$PWD/build/commands.lua" "$h/build/commands.lua"
  ln -s "$PWD/build/bc/lua" "$h/build/bc/lua"
  ln -s "$PWD/build/bc/cmd" "$h/build/bc/cmd"
  if [ -n "${2:-}" ]; then git archive "$2" dsl | tar -x -C "$h"; else cp -r dsl "$h/dsl"; fi
  (cd "$h" && find dsl -name '*.lua' | sort |
    ZEVER_HOME="$h" xargs "$bin" run "$PWD/lua/zever/cli/bytecode.lua")
}
home "$tmp/base" "$base"
home "$tmp/new"

echo "zever check, 200 entities: dsl/ of $base against the working tree's (load: $(cut -d' ' -f1-3 /proc/loadavg))"
hyperfine --warmup 3 --runs "$runs" -N \
  -n "base $base" "env ZEVER_HOME=$tmp/base $bin check $tmp/ws/schema" \
  -n "working tree" "env ZEVER_HOME=$tmp/new $bin check $tmp/ws/schema"

cat > "$tmp/refresh.lua" <<'EOF'
-- One LSP refresh after an edit of items00.zen: the least CPU time of n.
local lsp = require "dsl.lsp"
local root, n = arg[1], tonumber(arg[2])
local s = lsp.Server.new({ debounce_ms = 0 })
s:handle({ jsonrpc = "2.0", id = 1, method = "initialize",
  params = { rootUri = "file://" .. root, capabilities = {} } })
local f = root .. "/schema/shop/items00.zen"
local h = assert(io.open(f))
local text = h:read("*a")
h:close()
local uri = "file://" .. f
s:handle({ jsonrpc = "2.0", method = "textDocument/didOpen",
  params = { textDocument = { uri = uri, languageId = "zen", version = 1, text = text } } })
s:diagnostics_notes()
local best = math.huge
for k = 1, n do
  local edited = text:gsub("  name: string", k % 2 == 1 and "  name: string?" or "  name: string", 1)
  s:handle({ jsonrpc = "2.0", method = "textDocument/didChange", params = {
    textDocument = { uri = uri, version = k + 1 }, contentChanges = { { text = edited } } } })
  local t = os.clock()
  s:diagnostics_notes()
  best = math.min(best, os.clock() - t)
end
print(string.format("%.2f", best * 1e3))
EOF
for side in base new; do
  echo "LSP refresh after an edit ($side): least of $refresh: $(ZEVER_HOME=$tmp/$side "$bin" run \
    "$tmp/refresh.lua" "$tmp/ws" "$refresh") ms CPU"
done
