# zever: build, test, bench, lint, asan and fuzz.
#
#   make            deps + bin/zever
#   make run        serves examples/hello on 127.0.0.1:8080
#   make test       deps, build, luacheck, every spec; ends with "N passed, M failed"
#   make asan       the same specs under AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench      C and Lua benchmarks (BENCH=Name: C by benchmark, Lua by file name)
#   make bench-http zever serve against nginx + ngx_lua, side by side (bench/http/NOTES.md)
#   make bench-tfb  the six TechEmpower test types, zever against nginx + ngx_lua (bench/tfb/)
#   make fuzz       libFuzzer targets, FUZZ_TIME seconds each
#   make install    PREFIX=/usr/local
#   make deb        a Debian package (dpkg-deb) in build/ (docs/deploy.md)
#
# A C module is a folder host/<name>/ with a pure core and one binding l_<name>.c exporting
# luaopen_zever_<name>; adding the folder is all it takes to build it and preload it as
# zever.<name> (a folder that links a heavy library joins LAZY below: it becomes
# lib/zever/<name>.so, loaded on first require; docs/cli.md, start-up). (A binding that a Lua module wraps is named l_<name>_core.c: zever.<name>_core.)
# A binding too long for one file is split by phase: l_<name>.c keeps the entry points, and
# host/<name>/lx_*.c files are its other parts. Parts are compiled into the host with the
# binding's flags, never preloaded as modules, and left out of the cores that benchmarks and
# fuzz targets link (they use Lua). host/runtime/ is what bindings share (binding helpers, the
# loop of a state, a new state for a worker): no l_*.c, so not a module; its .c files are built
# into the host only. A binding includes runtime/, core/ and its own folder (`make check-includes`).

CC       ?= cc
PREFIX   ?= /usr/local
BENCH    ?=
FUZZ_TIME ?= 20

WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CSTD     := -std=c99 -D_GNU_SOURCE
LUAJIT_CFLAGS := $(shell pkg-config --cflags luajit 2>/dev/null || echo -I/usr/include/luajit-2.1)
CFLAGS   ?= -O2 -g
# libpq (Debian libpq-dev): host/pg/ includes <libpq-fe.h>.
PQ_CFLAGS := $(shell pkg-config --cflags libpq 2>/dev/null || echo -I/usr/include/postgresql)
PQ_LIBS   := $(shell pkg-config --libs libpq 2>/dev/null || echo -lpq)
ALL_CFLAGS = $(CSTD) $(WARN) $(CFLAGS) $(LUAJIT_CFLAGS) $(PQ_CFLAGS) -Ihost -Ibuild
# The host links what every command needs; a folder listed in LAZY is built into
# lib/<binary>/<folder>.so instead, linked with its own libraries (LIBS_<folder>), and dlopen'd
# by the first require of one of its modules (runtime/state.c). Mapping and relocating libpq,
# OpenSSL or SQLite costs 1-10 M instructions a start (BENCHMARKS.md, start-up), which every
# `zever --help` would pay otherwise.
# LuaJIT and libuv link statically when Debian's static archives are there (they are, in
# libluajit2-5.1-dev and libuv1-dev): ~290 K instructions of symbol relocation less per start.
# Whole archives: the lazy modules and the FFI may call any of their functions.
LIBDIR_OF = $(shell pkg-config --variable=libdir $(1) 2>/dev/null)
STATIC_A := $(wildcard $(call LIBDIR_OF,luajit)/libluajit-5.1.a $(call LIBDIR_OF,libuv)/libuv_a.a)
WHOLE    := -Wl,--whole-archive
NOWHOLE  := -Wl,--no-whole-archive
LDLIBS   := $(if $(STATIC_A),$(WHOLE) $(STATIC_A) $(NOWHOLE)) \
            $(if $(filter %libluajit-5.1.a,$(STATIC_A)),,-lluajit-5.1) \
            $(if $(filter %libuv_a.a,$(STATIC_A)),,-luv) -lpthread -lm -ldl
LAZY     := sqlite redis smtp pg compress crypto password tls h2
LIBS_sqlite := -lsqlite3
LIBS_redis  := -lhiredis
LIBS_smtp   := -lssl -lcrypto
LIBS_pg     := $(PQ_LIBS)
LIBS_compress := -lz -lbrotlienc
LIBS_crypto := -lcrypto
LIBS_password := -largon2
LIBS_tls    := -lssl -lcrypto
LIBS_h2     := -lnghttp2
# The HTTP client's TLS (host/httpc_tls/, OpenSSL): the client itself is in the core.
LAZY     += httpc_tls
LIBS_httpc_tls := -lssl -lcrypto
# Libraries the pure cores may need (benchmarks and fuzz targets link cores without Lua).
CORE_LIBS := -luv -lsqlite3 -lhiredis $(PQ_LIBS) -lssl -lcrypto -lz -lbrotlienc -largon2 -lnghttp2 -lpthread -lm
LDFLAGS  ?=
# -Wl,-E exports the host's symbols so LuaJIT's FFI can call per-request C functions.
ALL_LDFLAGS = -Wl,-E $(LDFLAGS)

MODULES   := $(sort $(patsubst l_%.c,%,$(notdir $(wildcard host/*/l_*.c))))
BIND_SRC  := $(sort $(wildcard host/*/l_*.c))
PART_SRC  := $(sort $(wildcard host/*/lx_*.c))
RT_SRC    := $(sort $(wildcard host/runtime/*.c))
CORE_SRC  := $(sort $(filter-out $(BIND_SRC) $(PART_SRC) $(RT_SRC),$(wildcard host/*/*.c)))
ALL_SRC   := host/main.c $(RT_SRC) $(CORE_SRC) $(BIND_SRC) $(PART_SRC)
LAZY_SRC  := $(foreach f,$(LAZY),$(wildcard host/$(f)/*.c))
HOST_SRC  := $(filter-out $(LAZY_SRC),$(ALL_SRC))
LAZY_SO   := $(LAZY:%=lib/zever/%.so)
LAZY_ASAN_SO := $(LAZY:%=lib/zever-asan/%.so)
HEADERS   := $(wildcard host/*.h host/*/*.h)
# FFI declarations: host/<dir>/<name>_ffi.h, preprocessed into build/ffi.h, preloaded as
# zever.cdef.<name> (the one declaration of each C function and type that Lua calls via the FFI).
FFI_HDR   := $(sort $(wildcard host/*/*_ffi.h))

OBJ       := $(HOST_SRC:host/%.c=build/obj/%.o)
ASAN_OBJ  := $(HOST_SRC:host/%.c=build/asan/%.o)
# The module a binding's file opens, and the folder it lives in: host/<folder>/l_<module>.c.
lazy_of    = $(filter $(LAZY),$(notdir $(patsubst %/,%,$(dir $(1)))))
BENCH_SRC := $(sort $(wildcard bench/*_bench.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=build/bench/%)
LUA_BENCH := $(sort $(wildcard bench/*_bench.lua) bench/limiter_redis_accuracy.lua \
               bench/queue_throughput.lua)
FUZZ_SRC  := $(sort $(wildcard fuzz/*_fuzz.c))
FUZZ_BIN  := $(FUZZ_SRC:fuzz/%.c=build/fuzz/%)

# Debian packages: build, run, test and benchmark needs. `make deps` installs what is missing.
# LuaJIT is OpenResty's branch (luajit2, 2.1-20230119), the LuaJIT OpenResty and our nginx peer
# run, not Debian's luajit (a 2.1 snapshot of 2022-03-20): that snapshot predates the x64 fix
# of LuaJIT issue #829 (a compiled next()/pairs() loop moved the 64-bit pointer lj_vm_next
# returns through a 32-bit xchg), which crashed the suite in sessions 9 and 12. The packages
# are drop-in replacements (same headers and archive paths); apt removes the other set.
DEBS := build-essential pkg-config clang libclang-rt-14-dev \
        libluajit2-5.1-dev luajit2 lua-lpeg lua-cjson lua-yaml lua-busted lua-check \
        libsqlite3-dev libhiredis-dev libuv1-dev nginx-light \
        libssl-dev openssl redis-server curl wrk hyperfine python3 python3-aiosmtpd swaks \
        lua-sql-sqlite3 postgresql libpq-dev sqlite3 zlib1g-dev libbrotli-dev libargon2-dev \
        python3-websockets neovim
# HTTP/2 (host/h2, libnghttp2) and its load generator h2load (bench/http/tls.sh).
DEBS += libnghttp2-dev nghttp2-client
# Observability and the /_zever dashboard: promtool (package prometheus, ~19 MB) checks the
# /metrics exposition; headless chromium (~81 MB) drives the dashboard page through the DevTools
# protocol with python3-websockets (spec/dashboard/, skipped with a message when absent).
DEBS += prometheus chromium
# Deploy specs (spec/deploy/): systemd-socket-activate and systemd-analyze; dpkg-deb for make deb.
DEBS += systemd dpkg-dev
# The storage battery's s3 adapter: its SigV4 signer is checked against botocore's (the AWS SDK's).
DEBS += python3-botocore
# zever completion: spec/cmd/completion_spec.lua checks the zsh and fish scripts with zsh -n and
# fish --no-execute (bash is always there).
DEBS += zsh fish
# strace: spec/host/redis_spec.lua counts the epoll_ctl calls a Redis command costs (a count, not a time).
DEBS += strace

.PHONY: all deps run test asan bench bench-http fuzz lint check-includes install clean
all: deps bin/zever $(LAZY_SO) build/bc/.stamp build/commands.lua

deps:
	@missing=$$(for p in $(DEBS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	  | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  cmd="apt-get install -y --no-install-recommends $$(echo $$missing)"; \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "zever: missing Debian packages; run: sudo apt-get update && sudo $$cmd" >&2; exit 1; \
	  fi; \
	  echo "deps: installing $$(echo $$missing)"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && $$cmd >/dev/null || exit 1; \
	fi
	@# The .zen compiler's OpenAPI spec validates with npm packages (swagger-parser for the
	@# document, ajv for live responses against it; node from Debian if absent).
	@if ! command -v npm >/dev/null 2>&1; then \
	  [ "$$(id -u)" = 0 ] || { echo "zever: npm is missing; run: sudo apt-get install nodejs npm" >&2; exit 1; }; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs npm >/dev/null || exit 1; \
	fi
	@[ -d spec/support/openapi/node_modules/@apidevtools ] && [ -d spec/support/openapi/node_modules/ajv ] || \
	  npm ci --prefix spec/support/openapi --no-audit --no-fund --loglevel=error >/dev/null || \
	  echo "deps: npm ci failed: the OpenAPI validator rows will be skipped" >&2

# ZV_MODULE(name) for a module built into the host, ZV_LAZY(name, folder) for one in a LAZY
# folder's shared object.
build/modules.h: Makefile $(BIND_SRC)
	@mkdir -p build
	@printf '%s\n' $(foreach b,$(BIND_SRC),$(if $(call lazy_of,$(b)),\
	  'ZV_LAZY($(patsubst l_%.c,%,$(notdir $(b))), $(call lazy_of,$(b)))',\
	  'ZV_MODULE($(patsubst l_%.c,%,$(notdir $(b))))')) > $@.tmp && mv $@.tmp $@

# One ZV_FFI(name, "declarations") per *_ffi.h, preprocessed with -DZV_FFI_CDEF (macros expanded,
# comments and includes gone) and quoted as a C string; a directive left over is an error.
build/ffi.h: Makefile $(FFI_HDR)
	@mkdir -p build
	@for h in $(FFI_HDR); do \
	  $(CC) $(CSTD) -E -P -DZV_FFI_CDEF -Ihost $$h > $@.one || exit 1; \
	  if grep -q '^[[:space:]]*#' $@.one; then echo "$$h: a directive reached the FFI" >&2; exit 1; fi; \
	  printf 'ZV_FFI(%s,\n' $$(basename $$h _ffi.h); \
	  sed 's/\\/\\\\/g; s/"/\\"/g; s/^/  "/; s/$$/\\n"/' $@.one; printf ')\n'; \
	done > $@.tmp && rm -f $@.one && mv $@.tmp $@

build/obj/%.o: host/%.c $(HEADERS) build/modules.h build/ffi.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

bin/zever: $(OBJ)
	@mkdir -p bin
	$(CC) $(ALL_LDFLAGS) $(OBJ) $(LDLIBS) -o $@

# LuaJIT bytecode of the Lua tree (build/bc/, found before the sources while newer than them:
# host/runtime/state.c). $? is what changed since the last run.
LUA_TREE := $(shell find lua cmd dsl -name '*.lua' 2>/dev/null)
build/bc/.stamp: $(LUA_TREE) | bin/zever $(LAZY_SO)
	@bin/zever run lua/zever/cli/bytecode.lua $?
	@touch $@

# The command index `zever --help` lists from (lua/zever/cli/index.lua).
build/commands.lua: $(wildcard cmd/zever/*.lua) lua/zever/cli/index.lua | bin/zever $(LAZY_SO) build/bc/.stamp
	@bin/zever run lua/zever/cli/index.lua $@

# A LAZY folder's shared object: its core, binding and parts, position-independent. Symbols of
# the host it uses (runtime/, core/, loop/) resolve against the host, which exports them (-E).
build/pic/%.o: host/%.c $(HEADERS) build/modules.h build/ffi.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -c $< -o $@

.SECONDEXPANSION:
pic_objs  = $(patsubst host/%.c,build/$(2)/%.o,$(wildcard host/$(1)/*.c))
lib/zever/%.so: $$(call pic_objs,$$*,pic)
	@mkdir -p $(dir $@)
	$(CC) -shared $(LDFLAGS) $^ $(LIBS_$*) -o $@

# The README's first command: build and serve the example app on its embedded defaults.
run: all
	bin/zever serve examples/hello

# --- tests --------------------------------------------------------------------------------
LUA_DIRS := $(wildcard lua cmd dsl spec bench examples)
lint: deps check-includes
	@luacheck -q --no-color $(LUA_DIRS)

# The layering rule: a binding (l_*.c, lx_*.c) includes system headers, host/runtime/,
# host/core/ and headers of its own folder; the runtime includes no binding's header.
check-includes:
	@bad=$$(grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' $(BIND_SRC) $(PART_SRC) \
	  | grep -Ev '#[[:space:]]*include[[:space:]]*"(\.\./(runtime|core)/)?[a-z0-9_]+\.h"'; \
	  grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' host/runtime/*.[ch] \
	  | grep -Ev '"(\.\./[a-z0-9_]+/)?[a-z0-9_]+\.h"' ; \
	  grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"\.\./[a-z0-9_]+/l_' host/runtime/*.[ch]); \
	if [ -n "$$bad" ]; then \
	  echo "check-includes: a binding may include runtime/, core/ and its own folder only:" >&2; \
	  echo "$$bad" >&2; exit 1; fi

# Specs run in a random order, the seed printed first. SEEDS="7 1 12345" runs the whole suite
# once per seed instead (each run ~3 min alone, ~8 min on a loaded 2-core machine).
# CI_SEEDS=3 (.ci/run) runs it under 3 random seeds, each in its own process, and ends with one
# summed "N passed, M failed" line (zever test --seeds; docs/testing.md).
SEEDS ?=
CI_SEEDS ?=
test: all lint
ifneq ($(strip $(CI_SEEDS)),)
	@bin/zever test spec examples --seeds $(CI_SEEDS)
else ifeq ($(strip $(SEEDS)),)
	@bin/zever test spec examples
else
	@set -e; for s in $(SEEDS); do bin/zever test spec examples --seed $$s; done
endif

# --- sanitizers -----------------------------------------------------------------------------
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
build/asan/%.o: host/%.c $(HEADERS) build/modules.h build/ffi.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -O1 $(SAN) -c $< -o $@

bin/zever-asan: $(ASAN_OBJ) $(LAZY_ASAN_SO)
	@mkdir -p bin
	$(CC) $(ALL_LDFLAGS) $(SAN) $(ASAN_OBJ) $(LDLIBS) -o $@

build/asan-pic/%.o: host/%.c $(HEADERS) build/modules.h build/ffi.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -O1 $(SAN) -fPIC -c $< -o $@

lib/zever-asan/%.so: $$(call pic_objs,$$*,asan-pic)
	@mkdir -p $(dir $@)
	$(CC) -shared $(SAN) $(LDFLAGS) $^ $(LIBS_$*) -o $@

asan: deps bin/zever bin/zever-asan
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  bin/zever-asan test

# --- benchmarks -----------------------------------------------------------------------------
build/bench/%: bench/%.c bench/bench.h $(CORE_SRC) $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) $(WARN) -O2 -g -DZV_ALLOC_STATS $(PQ_CFLAGS) -Ihost $< $(CORE_SRC) $(CORE_LIBS) -o $@

# C benchmarks filter by benchmark name; Lua ones (run in the host) and scripts by file name.
bench: deps bin/zever $(BENCH_BIN)
	@for b in $(BENCH_BIN); do BENCH='$(BENCH)' $$b || exit 1; done
	@for f in $(LUA_BENCH); do \
	  if [ -z '$(BENCH)' ] || basename $$f | grep -qi '$(BENCH)'; then \
	    echo "== bin/zever run $$f"; bin/zever run $$f || exit 1; fi; \
	done
	@if [ -z '$(BENCH)' ] || echo Cli | grep -q '$(BENCH)'; then bash bench/cli_bench.sh; fi
	@if [ -z '$(BENCH)' ] || echo Check200Entities | grep -q '$(BENCH)'; then bash bench/check_bench.sh; fi
	@if [ -z '$(BENCH)' ] || echo WsEcho | grep -q '$(BENCH)'; then bash bench/ws_echo.sh; fi
	@if [ -z '$(BENCH)' ] || echo WsFanout | grep -q '$(BENCH)'; then bash bench/ws_fanout.sh; fi
	@if [ -z '$(BENCH)' ] || echo Tls | grep -q '$(BENCH)'; then bash bench/http/tls.sh; fi
	@if [ -z '$(BENCH)' ] || echo Lsp | grep -q '$(BENCH)'; then bash bench/lsp_bench.sh; fi
	@if [ -z '$(BENCH)' ] || echo Bundle | grep -q '$(BENCH)'; then bash bench/bundle_bench.sh; fi

# zever serve against nginx + ngx_lua (OpenResty's LuaJIT, unpacked into bench/http/vendor).
bench-http: deps bin/zever
	bash bench/http/run.sh

# The TechEmpower test types (plaintext, json, db, queries, updates, fortunes) on zever and on
# nginx + ngx_lua with FFI SQLite, checked against the TFB rules, at 1 and 2 workers.
.PHONY: bench-tfb
bench-tfb: deps bin/zever
	bash bench/tfb/run.sh

# --- fuzzing ------------------------------------------------------------------------------
build/fuzz/%: fuzz/%.c $(CORE_SRC) $(HEADERS)
	@mkdir -p $(dir $@)
	clang $(CSTD) -g -O1 -fsanitize=fuzzer,address,undefined $(PQ_CFLAGS) -Ihost $< $(CORE_SRC) $(CORE_LIBS) -o $@

# zen_parse_fuzz runs the Lua parser: it embeds LuaJIT and links the lexer's binding.
build/fuzz/zen_parse_fuzz: fuzz/zen_parse_fuzz.c $(CORE_SRC) host/lexer/l_lexer.c $(HEADERS)
	@mkdir -p $(dir $@)
	clang $(CSTD) -g -O1 -fsanitize=fuzzer,address,undefined $(LUAJIT_CFLAGS) $(PQ_CFLAGS) -Ihost $< $(CORE_SRC) \
	  host/lexer/l_lexer.c $(CORE_LIBS) -lluajit-5.1 -ldl -o $@

fuzz: deps $(FUZZ_BIN)
	@for f in $(FUZZ_BIN); do \
	  name=$$(basename $$f); mkdir -p build/fuzz/corpus/$$name; \
	  seeds=; [ -d fuzz/corpus/$$name ] && seeds=fuzz/corpus/$$name; \
	  echo "fuzz: $$name for $(FUZZ_TIME)s"; \
	  $$f -max_total_time=$(FUZZ_TIME) -print_final_stats=1 build/fuzz/corpus/$$name $$seeds \
	    2>build/fuzz/$$name.log || { tail -50 build/fuzz/$$name.log; exit 1; }; \
	  grep -E 'stat::number_of_executed_units' build/fuzz/$$name.log; \
	done

# --- install ------------------------------------------------------------------------------
# The layout the host finds on its own (host/sys/sys.c, runtime/state.c): <prefix>/bin/zever,
# <prefix>/lib/zever/*.so, the Lua tree in <prefix>/share/zever, its bytecode and the command
# index in share/zever/build (copied after the sources, so newer than them: the bytecode is used).
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/zever $(DESTDIR)$(PREFIX)/lib/zever
	install -m 755 bin/zever $(DESTDIR)$(PREFIX)/bin/zever
	install -m 644 $(LAZY_SO) $(DESTDIR)$(PREFIX)/lib/zever/
	cp -R $(wildcard lua cmd dsl) $(DESTDIR)$(PREFIX)/share/zever/
	install -d $(DESTDIR)$(PREFIX)/share/zever/build
	cp -R build/bc build/commands.lua build/commands.luac $(DESTDIR)$(PREFIX)/share/zever/build/

# make deb: a Debian package of zever, built with dpkg-deb from `make install PREFIX=/usr` in
# DEB_DIR, written to DEB_OUT. Depends: the shared libraries the host and the LAZY modules link
# (dpkg-shlibdeps finds them and their versions) and the Lua modules the framework loads.
DEB_VERSION := $(shell sed -n 's/^\#define ZV_VERSION "\(.*\)"$$/\1/p' host/sys/sys.h)
DEB_ARCH    := $(shell dpkg --print-architecture 2>/dev/null)
DEB_DIR     ?= build/deb
DEB_OUT     ?= build
DEB_LUA     := lua-lpeg, lua-yaml
.PHONY: deb
deb: all
	@rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/root/DEBIAN $(DEB_DIR)/debian $(DEB_OUT)
	@$(MAKE) --no-print-directory install DESTDIR=$(abspath $(DEB_DIR))/root PREFIX=/usr >/dev/null
	@printf 'Source: zever\n\nPackage: zever\nArchitecture: any\n' > $(DEB_DIR)/debian/control
	@shlibs=$$(cd $(DEB_DIR) && dpkg-shlibdeps -O -eroot/usr/bin/zever \
	  $$(for f in root/usr/lib/zever/*.so; do printf ' -e%s' $$f; done) 2>/dev/null \
	  | sed -n 's/^shlibs:Depends=//p'); \
	[ -n "$$shlibs" ] || { echo "deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }; \
	printf '%s\n' "Package: zever" "Version: $(DEB_VERSION)" "Architecture: $(DEB_ARCH)" \
	  "Maintainer: zever developers <zever@localhost>" "Section: interpreters" \
	  "Priority: optional" "Depends: $$shlibs, $(DEB_LUA)" "Recommends: lua-busted, lua-check" \
	  "Installed-Size: $$(du -sk $(DEB_DIR)/root/usr | cut -f1)" \
	  "Description: batteries-included application framework for Lua" \
	  " One C program embeds LuaJIT and serves HTTP on libuv; batteries and the CLI are Lua." \
	  > $(DEB_DIR)/root/DEBIAN/control
	@dpkg-deb --root-owner-group -Zgzip --build $(DEB_DIR)/root \
	  $(DEB_OUT)/zever_$(DEB_VERSION)_$(DEB_ARCH).deb

clean:
	rm -rf build bin lib
