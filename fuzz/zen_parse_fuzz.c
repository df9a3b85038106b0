/*
 * zen_parse_fuzz.c: libFuzzer target for the .zen lexer and parser together (host/lexer/ through
 * its binding zever.lexer, then dsl/parser.lua), and for the formatter on what parses.
 *
 * The parser is Lua, so this target embeds LuaJIT: one state, opened once, with zever.lexer
 * preloaded from the binding (host/lexer/l_lexer.c, linked in) and dsl.parser and dsl.format
 * loaded from the source tree (ZEVER_HOME, default the current folder: run it from the repo
 * root). For each input it checks that:
 *   - parser.parse(input) never raises and returns a "file" tree and a list of diagnostics, each
 *     with a message, a phase and a line and column of at least 1;
 *   - when no diagnostic is an error, format.format(input) never raises, returns text, and
 *     formatting that text gives it back unchanged (fmt(fmt(x)) == fmt(x));
 *   - lexer.lex(input, true), the parser's form, is lexer.lex(input) without its COMMENT and
 *     ILLEGAL tokens, with the names' text and the doc comments that the reference below (the
 *     parser's own Lua pass until session 9) collects from the full form.
 * A hang shows as libFuzzer's timeout. It must not leave anything on the Lua stack between
 * inputs.
 *
 * libFuzzer's own coverage sees only C (the lexer), so a Lua line hook feeds the parser's
 * coverage in too: each pair (previous line, line) of the Lua code run, hashed AFL-style, bumps
 * one of 64K extra counters that libFuzzer reads like its own (the dsl files run interpreted, so
 * every line fires the hook).
 *
 * Leak checking is off: LuaJIT's heap is mmap'd memory that LeakSanitizer does not scan, so the
 * lexer's buffers, reachable only from a Lua userdata, would be reported as leaks
 * (fuzz/lexer_fuzz.c checks the lexer core's own memory).
 *
 * Build (needs LuaJIT, see the Makefile's fuzz section) and run from the repo root:
 *   make build/fuzz/zen_parse_fuzz && build/fuzz/zen_parse_fuzz -max_total_time=60 \
 *     build/fuzz/corpus/zen_parse_fuzz fuzz/corpus/zen_parse_fuzz
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

int luaopen_zever_lexer(lua_State *L);

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__asan_default_options(void);

const char *__asan_default_options(void) {
  return "detect_leaks=0";
}

/* The check, run once per input with the input on top of the stack: returns nil when every
 * property holds, or a message saying which does not. */
static const char CHECK[] =
  "local parser, format = require 'dsl.parser', require 'dsl.format'\n"
  "local lexer = require 'zever.lexer'\n"
  "local function same_form(src)\n"
  "  local full, part = lexer.lex(src), lexer.lex(src, true)\n"
  "  local block, block_last, last_line, n = nil, -1, 0, 0\n"
  "  for i = 1, full.n do\n"
  "    local kd, l = full.kind[i], full.line[i]\n"
  "    if kd == 'COMMENT' then\n"
  "      if l == last_line then block = nil else\n"
  "        if not block or l ~= block_last + 1 then block = {} end\n"
  "        local t = src:sub(full.pos[i] + 2, full.pos[i] + full.len[i] - 1)\n"
  "        block[#block + 1] = t:gsub('^ ', '', 1)\n"
  "        block_last = l\n"
  "      end\n"
  "    elseif kd ~= 'ILLEGAL' then\n"
  "      n = n + 1\n"
  "      if part.kind[n] ~= kd or part.pos[n] ~= full.pos[i] or part.len[n] ~= full.len[i]\n"
  "        or part.line[n] ~= l or part.col[n] ~= full.col[i]\n"
  "        or part.value[n] ~= full.value[i] then\n"
  "        return 'lex(src, true) differs at token ' .. n\n"
  "      end\n"
  "      local name = (kd == 'IDENT' or kd == 'KEYWORD')\n"
  "        and src:sub(full.pos[i], full.pos[i] + full.len[i] - 1) or nil\n"
  "      if part.text[n] ~= name then return 'lex(src, true) text differs at token ' .. n end\n"
  "      local doc\n"
  "      if block then\n"
  "        if block_last == l - 1 then doc = table.concat(block, '\\n') end\n"
  "        block = nil\n"
  "      end\n"
  "      if part.doc[n] ~= doc then return 'lex(src, true) doc differs at token ' .. n end\n"
  "      last_line = l\n"
  "    end\n"
  "  end\n"
  "  if part.n ~= n then return 'lex(src, true) has ' .. part.n .. ' tokens, not ' .. n end\n"
  "  return nil\n"
  "end\n"
  "return function(src)\n"
  "  local lerr = same_form(src)\n"
  "  if lerr then return lerr end\n"
  "  local ok, tree, diags = pcall(parser.parse, src, 'fuzz.zen')\n"
  "  if not ok then return 'parse raised: ' .. tostring(tree) end\n"
  "  if type(tree) ~= 'table' or tree.kind ~= 'file' or type(tree.decls) ~= 'table' then\n"
  "    return 'parse returned no file tree'\n"
  "  end\n"
  "  if type(diags) ~= 'table' then return 'parse returned no diagnostics list' end\n"
  "  local errors = 0\n"
  "  for _, d in ipairs(diags) do\n"
  "    if type(d.message) ~= 'string' or type(d.phase) ~= 'string' then\n"
  "      return 'a diagnostic without message or phase'\n"
  "    end\n"
  "    if not (d.line and d.line >= 1 and d.col and d.col >= 1) then\n"
  "      return 'a diagnostic without a position: ' .. d.message\n"
  "    end\n"
  "    if d.severity == 'error' then errors = errors + 1 end\n"
  "  end\n"
  "  if errors > 0 then return nil end\n"
  "  local fok, once, err = pcall(format.format, src, 'fuzz.zen')\n"
  "  if not fok then return 'format raised: ' .. tostring(once) end\n"
  "  if not once then return 'format refused a clean parse: ' .. err.message end\n"
  "  local tok, twice = pcall(format.format, once, 'fuzz.zen')\n"
  "  if not tok then return 'format raised on its own output: ' .. tostring(twice) end\n"
  "  if twice ~= once then return 'format is not idempotent on:\\n' .. once end\n"
  "  return nil\n"
  "end\n";

static lua_State *L;
static int check_ref;

#define NCOUNTERS 65536
__attribute__((used, section("__libfuzzer_extra_counters"))) static uint8_t counters[NCOUNTERS];
static uintptr_t prev_loc;

/* Line hook: marks the edge from the previous Lua line to this one. ar->source is the chunk's
 * name, interned for the life of the state, so its address tells files apart. */
static void line_hook(lua_State *S, lua_Debug *ar) {
  uintptr_t loc;
  if (!lua_getinfo(S, "S", ar)) return;
  loc = ((uintptr_t)ar->source * 2654435761u) ^ ((uintptr_t)ar->currentline * 40503u);
  loc = (loc ^ (loc >> 16)) & (NCOUNTERS - 1);
  counters[loc ^ prev_loc]++;
  prev_loc = loc >> 1;
}

static void fail(const char *what, const char *msg) {
  fprintf(stderr, "zen_parse_fuzz: %s: %s\n", what, msg ? msg : "(no message)");
  abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *home = getenv("ZEVER_HOME");
  (void)argc;
  (void)argv;
  if (!home) home = ".";
  L = luaL_newstate();
  if (!L) fail("init", "luaL_newstate failed");
  luaL_openlibs(L);
  /* package.path = home/?.lua;home/?/init.lua; package.preload["zever.lexer"] = binding */
  lua_getglobal(L, "package");
  lua_pushfstring(L, "%s/?.lua;%s/?/init.lua", home, home);
  lua_setfield(L, -2, "path");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, luaopen_zever_lexer);
  lua_setfield(L, -2, "zever.lexer");
  lua_pop(L, 2);
  if (luaL_loadbuffer(L, CHECK, sizeof CHECK - 1, "=zen_parse_fuzz") || lua_pcall(L, 0, 1, 0))
    fail("init", lua_tostring(L, -1));
  if (!lua_isfunction(L, -1)) fail("init", "the check is not a function");
  check_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, check_ref);
  lua_pushlstring(L, (const char *)data, size);
  prev_loc = 0;
  lua_sethook(L, line_hook, LUA_MASKLINE, 0);
  if (lua_pcall(L, 1, 1, 0)) fail("check raised", lua_tostring(L, -1));
  lua_sethook(L, NULL, 0, 0);
  if (!lua_isnil(L, -1)) fail("property", lua_tostring(L, -1));
  lua_pop(L, 1);
  if (lua_gettop(L) != 0) fail("stack", "values left on the Lua stack");
  return 0;
}
