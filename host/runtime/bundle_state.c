/*
 * bundle_state.c: what a Lua state of a bundled host (sys/bundle.h) loads from the payload
 * instead of the zever home: Lua modules (a searcher ahead of Lua's own) and the LAZY folders'
 * shared objects (copied from the payload into a memfd and dlopen'd through /proc/self/fd).
 *
 * Every byte comes from the read-only mapping and is checked against its hash before use; a
 * file that fails is an error naming it, never loaded. It must not write to disk: a bundle
 * runs under ProtectSystem=strict with no writable cache.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../sys/bundle.h"
#include "runtime.h"

/*
 * Where a module name is looked for in the payload, in package.path's order for a checkout:
 * the framework (lua/), the home's root (cmd/, dsl/), then the app's folder (app/).
 */
static const char *const PATTERNS[] = {
  "lua/%s.lua", "lua/%s/init.lua", "%s.lua", "%s/init.lua", "app/%s.lua", "app/%s/init.lua",
};

/* Checks e's hash and pushes its chunk; raises on a damaged file or a chunk that fails to load. */
static int load_entry(lua_State *L, const zv_bundle_t *b, const zv_bundle_entry_t *e) {
  char chunk[300];
  if (zv_bundle_check(b, e) != 0)
    return luaL_error(L, "zever: this bundle is damaged: %.*s does not match its hash "
                      "(rebuild it with zever bundle)", (int)e->name_len, e->name);
  snprintf(chunk, sizeof chunk, "=%.*s", (int)e->name_len, e->name);
  if (luaL_loadbuffer(L, (const char *)zv_bundle_data(b, e), (size_t)e->size, chunk) != 0)
    return lua_error(L);
  return 1;
}

/* package.loaders[2] in a bundle: the module's chunk from the payload, or a note. */
static int bundle_searcher(lua_State *L) {
  const zv_bundle_t *b = zv_bundle_self();
  size_t len, i;
  const char *name = luaL_checklstring(L, 1, &len);
  char mod[256], path[300];
  if (!b || len >= sizeof mod) return 0;
  for (i = 0; i < len; i++) mod[i] = name[i] == '.' ? '/' : name[i];
  mod[len] = '\0';
  for (i = 0; i < sizeof PATTERNS / sizeof *PATTERNS; i++) {
    const zv_bundle_entry_t *e;
    int n = snprintf(path, sizeof path, PATTERNS[i], mod);
    if (n < 0 || (size_t)n >= sizeof path) continue;
    e = zv_bundle_find(b, path, (size_t)n);
    if (e) return load_entry(L, b, e);
  }
  lua_pushfstring(L, "\n\tno file '%s' in the bundle", mod);
  return 1;
}

int zv__bundle_active(void) { return zv_bundle_self() != NULL; }

void zv__bundle_searcher(lua_State *L) {
  int i, n;
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "loaders");
  n = (int)lua_objlen(L, -1);
  for (i = n; i >= 2; i--) {
    lua_rawgeti(L, -1, i);
    lua_rawseti(L, -2, i + 1);
  }
  lua_pushcfunction(L, bundle_searcher);
  lua_rawseti(L, -2, 2);
  lua_pop(L, 2);
}

/*
 * One dlopen per folder for the whole process: worker threads require the same modules, and
 * a second memfd of the same object would load a second copy with its own globals. The memfd
 * stays open (its /proc/self/fd/N name must not be reused for another object: the dynamic
 * loader recognises an object it loaded by that name).
 */
#define MAX_LAZY 32
static pthread_mutex_t lazy_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  char folder[32];
  void *handle;
} lazy[MAX_LAZY];
static int nlazy;

static void *open_memfd(const zv_bundle_t *b, const zv_bundle_entry_t *e, const char *folder,
                        char *err, size_t cap) {
  const unsigned char *p = zv_bundle_data(b, e);
  size_t left = (size_t)e->size;
  char path[64];
  void *h;
  int fd = memfd_create(folder, MFD_CLOEXEC);
  if (fd < 0) {
    snprintf(err, cap, "memfd_create: %s", strerror(errno));
    return NULL;
  }
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      snprintf(err, cap, "writing %s.so to a memfd: %s", folder, strerror(errno));
      close(fd);
      return NULL;
    }
    p += w;
    left -= (size_t)w;
  }
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    snprintf(err, cap, "%s", dlerror());
    close(fd);
  }
  return h;
}

void *zv__bundle_dlopen(const char *folder, char *err, size_t cap) {
  const zv_bundle_t *b = zv_bundle_self();
  const zv_bundle_entry_t *e;
  char name[64];
  void *h = NULL;
  int i, n;
  if (!b) {
    snprintf(err, cap, "not a bundle");
    return NULL;
  }
  pthread_mutex_lock(&lazy_mu);
  for (i = 0; i < nlazy; i++) {
    if (strcmp(lazy[i].folder, folder) == 0) {
      h = lazy[i].handle;
      goto out;
    }
  }
  n = snprintf(name, sizeof name, "lib/%s.so", folder);
  e = (n > 0 && (size_t)n < sizeof name) ? zv_bundle_find(b, name, (size_t)n) : NULL;
  if (!e) {
    snprintf(err, cap, "the bundle carries no %s (bundle it from a host built with make)", name);
  } else if (zv_bundle_check(b, e) != 0) {
    snprintf(err, cap, "this bundle is damaged: %s does not match its hash (rebuild it)", name);
  } else if (nlazy == MAX_LAZY || strlen(folder) >= sizeof lazy[0].folder) {
    snprintf(err, cap, "too many lazy modules");
  } else {
    h = open_memfd(b, e, folder, err, cap);
    if (h) {
      strcpy(lazy[nlazy].folder, folder);
      lazy[nlazy++].handle = h;
    }
  }
out:
  pthread_mutex_unlock(&lazy_mu);
  return h;
}
