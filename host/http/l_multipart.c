/*
 * l_multipart.c: the zever.multipart binding: a multipart/form-data body into its parts, with
 * limits, small values in memory and large files spooled to temporary files.
 *
 *   multipart.parse(body, content_type, opts) -> parts | nil, message, kind
 *     opts: max_parts, max_field_bytes, max_file_bytes, spool_bytes (a file part larger than
 *           this goes to a temporary file), tmpdir (where those go)
 *     parts: a list in body order of { name, filename (files only), content_type (when
 *           given), size, data (in memory) or path (spooled) }
 *     kind: "too_large" (a limit: answer 413) or "invalid" (a malformed body: 400)
 *   multipart.boundary(content_type) -> boundary | nil
 *   multipart.new(content_type, opts) -> parser | nil, message, kind
 *     parser:feed(chunk) -> true | nil, message, kind     the next bytes of the body, as they
 *                                                         come from the socket
 *     parser:finish() -> parts | nil, message, kind       the body ended
 *     parser:spooled() -> {path, ...}   the temporary files made so far (a live list: the
 *                                       caller removes them after the response, whatever
 *                                       happened)
 *   parse is new + feed + finish.
 *
 * The core parser (multipart.c) is streaming: a body arrives in chunks of any size. A field's
 * value collects as a list of pieces in the parser's own table (Lua strings: nothing malloc'd),
 * joined when the part ends; a file part past spool_bytes is written to a new file made with
 * mkstemp in tmpdir (mode 0600; its name never comes from the client). On a failure every file
 * made so far is removed before returning. zever.request removes the others after the response.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/lbind.h"
#include "multipart.h"

#define NAME_MAX_BYTES 1024
#define CTYPE_MAX 256

#define PARSER_MT "zever.multipart.parser"

/* The parser object (a userdata) and its environment table {parts, spooled, pieces}: those
 * three are pushed on the stack for each feed, at parts_idx, spooled_idx and pieces_idx. */
typedef struct {
  zv_multipart_t m;
  lua_State *L;
  int parts_idx, spooled_idx, pieces_idx;
  int nparts, nspooled, npieces;
  int failed;    /* a feed failed: the parser is done */
  /* the current part */
  char name[NAME_MAX_BYTES], filename[NAME_MAX_BYTES], ctype[CTYPE_MAX];
  int has_disp, has_filename, has_ctype;
  size_t size;
  int buffering; /* the part's bytes so far are pieces[1..npieces] */
  int fd;        /* the spool file, or -1 */
  char path[4096];
  /* limits */
  size_t max_field, max_file, spool;
  char tmpdir[1024];
  /* the failure */
  const char *kind;
  char msg[1536]; /* room for tmpdir in a message */
} ctx_t;

static int stop(ctx_t *x, const char *kind, const char *fmt, const char *arg, size_t n) {
  x->kind = kind;
  snprintf(x->msg, sizeof x->msg, fmt, arg, (unsigned long long)n);
  return 1;
}

static int on_header(void *ud, const char *name, size_t nlen, const char *value, size_t vlen) {
  ctx_t *x = ud;
  if (nlen == 19 && !strncasecmp(name, "content-disposition", 19)) {
    if (x->has_disp ||
        zv_multipart_disposition(value, vlen, x->name, sizeof x->name, x->filename,
                                 sizeof x->filename, &x->has_filename))
      return stop(x, "invalid", "a part's Content-Disposition is not form-data with a name%s",
                  "", 0);
    x->has_disp = 1;
  } else if (nlen == 12 && !strncasecmp(name, "content-type", 12)) {
    if (vlen >= sizeof x->ctype)
      return stop(x, "invalid", "a part's Content-Type is too long%s", "", 0);
    memcpy(x->ctype, value, vlen);
    x->ctype[vlen] = 0;
    x->has_ctype = 1;
  }
  return 0;
}

static int on_headers_done(void *ud) {
  ctx_t *x = ud;
  if (!x->has_disp)
    return stop(x, "invalid", "a part has no Content-Disposition header%s", "", 0);
  x->size = 0;
  x->fd = -1;
  x->npieces = 0;
  x->buffering = 1;
  return 0;
}

/* Pushes the pieces of the current part joined into one string, and forgets them. */
static void push_pieces(ctx_t *x) {
  lua_State *L = x->L;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 1; i <= x->npieces; i++) {
    lua_rawgeti(L, x->pieces_idx, i);
    luaL_addvalue(&b);
    lua_pushnil(L);
    lua_rawseti(L, x->pieces_idx, i);
  }
  luaL_pushresult(&b);
  x->npieces = 0;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Moves the part's buffered bytes into a new temporary file (the part is a large file). */
static int spool(ctx_t *x) {
  lua_State *L = x->L;
  const char *s;
  size_t n;
  push_pieces(x);
  x->buffering = 0;
  s = lua_tolstring(L, -1, &n);
  snprintf(x->path, sizeof x->path, "%s/zever-upload-XXXXXX", x->tmpdir);
  x->fd = mkstemp(x->path);
  if (x->fd < 0) {
    lua_pop(L, 1);
    return stop(x, "unavailable", "cannot make a temporary file in %s (%llu)", x->tmpdir,
                (size_t)errno);
  }
  /* Remembered at once, so that a failure below removes it too. */
  lua_pushstring(L, x->path);
  lua_rawseti(L, x->spooled_idx, ++x->nspooled);
  if (write_all(x->fd, s, n)) {
    lua_pop(L, 1);
    return stop(x, "unavailable", "cannot write a temporary file in %s (%llu)", x->tmpdir,
                (size_t)errno);
  }
  lua_pop(L, 1);
  return 0;
}

static int on_data(void *ud, const char *p, size_t n) {
  ctx_t *x = ud;
  size_t limit = x->has_filename ? x->max_file : x->max_field;
  x->size += n;
  if (x->size > limit)
    return stop(x, "too_large", x->has_filename ? "file '%s' is larger than %llu bytes"
                                                : "field '%s' is larger than %llu bytes",
                x->name, limit);
  if (x->buffering && x->has_filename && x->size > x->spool && spool(x)) return 1;
  if (x->buffering) {
    lua_pushlstring(x->L, p, n);
    lua_rawseti(x->L, x->pieces_idx, ++x->npieces);
    return 0;
  }
  if (write_all(x->fd, p, n))
    return stop(x, "unavailable", "cannot write a temporary file in %s (%llu)", x->tmpdir,
                (size_t)errno);
  return 0;
}

static int on_part_end(void *ud) {
  ctx_t *x = ud;
  lua_State *L = x->L;
  int in_mem = x->buffering;
  if (in_mem) {
    push_pieces(x); /* the value, on top */
    x->buffering = 0;
  }
  lua_createtable(L, 0, 6);
  if (x->fd >= 0) {
    close(x->fd);
    x->fd = -1;
    lua_pushstring(L, x->path);
    lua_setfield(L, -2, "path");
  } else {
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "data");
  }
  lua_pushstring(L, x->name);
  lua_setfield(L, -2, "name");
  if (x->has_filename) {
    lua_pushstring(L, x->filename);
    lua_setfield(L, -2, "filename");
  }
  if (x->has_ctype) {
    lua_pushstring(L, x->ctype);
    lua_setfield(L, -2, "content_type");
  }
  lua_pushnumber(L, (lua_Number)x->size);
  lua_setfield(L, -2, "size");
  lua_rawseti(L, x->parts_idx, ++x->nparts);
  if (in_mem) lua_pop(L, 1); /* the value */
  x->has_disp = x->has_filename = x->has_ctype = 0;
  x->name[0] = x->filename[0] = x->ctype[0] = 0;
  return 0;
}

static size_t opt_size(lua_State *L, int t, const char *k, size_t dflt) {
  lua_Number v;
  lua_getfield(L, t, k);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return dflt;
  }
  v = lua_tonumber(L, -1);
  if (lua_type(L, -1) != LUA_TNUMBER || !(v >= 0) || v > 9e15)
    luaL_error(L, "multipart: %s must be a number >= 0", k);
  lua_pop(L, 1);
  return (size_t)v;
}

static ctx_t *check_parser(lua_State *L) {
  return luaL_checkudata(L, 1, PARSER_MT);
}

/* Pushes the parser's three tables (its environment) and points x at them. */
static void push_tables(lua_State *L, ctx_t *x, int ud) {
  lua_getfenv(L, ud);
  lua_rawgeti(L, -1, 1);
  x->parts_idx = lua_gettop(L);
  lua_rawgeti(L, -2, 2);
  x->spooled_idx = lua_gettop(L);
  lua_rawgeti(L, -3, 3);
  x->pieces_idx = lua_gettop(L);
  x->L = L;
}

/* A failed parse: removes every file made so far, returns nil, message, kind. */
static int failed(lua_State *L, ctx_t *x, int rc) {
  const char *kind = "invalid";
  if (x->fd >= 0) {
    close(x->fd);
    x->fd = -1;
  }
  x->failed = 1;
  x->buffering = 0;
  for (int i = 1; i <= x->nspooled; i++) {
    lua_rawgeti(L, x->spooled_idx, i);
    unlink(lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  if (rc == ZV_MULTIPART_E_ABORTED && x->kind) {
    kind = x->kind;
  } else {
    if (rc == ZV_MULTIPART_E_TOO_MANY_PARTS || rc == ZV_MULTIPART_E_HEADER_TOO_LARGE)
      kind = "too_large";
    snprintf(x->msg, sizeof x->msg, "%s", zv_multipart_strerror(rc));
  }
  return zv_l_failure(L, x->msg, kind);
}

static int p_feed(lua_State *L) {
  ctx_t *x = check_parser(L);
  size_t n;
  const char *p = luaL_checklstring(L, 2, &n);
  zv_multipart_cb_t cb = {on_header, on_headers_done, on_data, on_part_end};
  int rc;
  if (x->failed) return zv_l_failure(L, x->msg, x->kind ? x->kind : "invalid");
  push_tables(L, x, 1);
  rc = zv_multipart_feed(&x->m, p, n, &cb, x);
  if (rc) return failed(L, x, rc);
  lua_pushboolean(L, 1);
  return 1;
}

static int p_finish(lua_State *L) {
  ctx_t *x = check_parser(L);
  int rc;
  if (x->failed) return zv_l_failure(L, x->msg, x->kind ? x->kind : "invalid");
  push_tables(L, x, 1);
  rc = zv_multipart_finish(&x->m);
  if (rc) return failed(L, x, rc);
  if (x->fd >= 0) {
    close(x->fd);
    x->fd = -1;
  }
  x->failed = 1; /* done: a later feed is refused */
  snprintf(x->msg, sizeof x->msg, "the body was finished already");
  lua_pushvalue(L, x->parts_idx);
  return 1;
}

static int p_spooled(lua_State *L) {
  check_parser(L);
  lua_getfenv(L, 1);
  lua_rawgeti(L, -1, 2);
  return 1;
}

static int p_gc(lua_State *L) {
  ctx_t *x = lua_touserdata(L, 1);
  if (x->fd >= 0) close(x->fd);
  x->fd = -1;
  return 0;
}

/* multipart.new(content_type, opts): the parser userdata on top, or the failure's 3 values. */
static int l_new(lua_State *L) {
  size_t clen, bn;
  const char *ctype = luaL_checklstring(L, 1, &clen);
  const char *b, *tmpdir;
  ctx_t *x;
  uint32_t max_parts;
  luaL_checktype(L, 2, LUA_TTABLE);
  max_parts = (uint32_t)opt_size(L, 2, "max_parts", 1000);
  /* A Lua userdata: collected whatever happens, nothing to free by hand. */
  x = lua_newuserdata(L, sizeof *x);
  memset(x, 0, sizeof *x);
  x->fd = -1;
  x->max_field = opt_size(L, 2, "max_field_bytes", 1 << 20);
  x->max_file = opt_size(L, 2, "max_file_bytes", (size_t)1 << 40);
  x->spool = opt_size(L, 2, "spool_bytes", 64 << 10);
  lua_getfield(L, 2, "tmpdir");
  tmpdir = lua_isnil(L, -1) ? "/tmp" : luaL_checkstring(L, -1);
  if (strlen(tmpdir) >= sizeof x->tmpdir) return luaL_error(L, "multipart: tmpdir is too long");
  strcpy(x->tmpdir, tmpdir);
  lua_pop(L, 1);
  luaL_getmetatable(L, PARSER_MT);
  lua_setmetatable(L, -2);
  if (zv_multipart_boundary(ctype, clen, &b, &bn) || zv_multipart_init(&x->m, b, bn, max_parts))
    return zv_l_failure(L, zv_multipart_strerror(ZV_MULTIPART_E_BOUNDARY), "invalid");
  lua_createtable(L, 3, 0);
  for (int i = 1; i <= 3; i++) {
    lua_newtable(L);
    lua_rawseti(L, -2, i);
  }
  lua_setfenv(L, -2);
  return 1;
}

static int l_parse(lua_State *L) {
  luaL_checkstring(L, 1);
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_pushcfunction(L, l_new);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 3);
  lua_call(L, 2, 3);
  if (lua_isnil(L, -3)) return 3;
  lua_pop(L, 2);
  /* parser:feed(body), then parser:finish() */
  lua_replace(L, 3);
  lua_settop(L, 3);
  lua_pushcfunction(L, p_feed);
  lua_pushvalue(L, 3);
  lua_pushvalue(L, 1);
  lua_call(L, 2, 3);
  if (lua_isnil(L, -3)) return 3;
  lua_settop(L, 3);
  lua_pushcfunction(L, p_finish);
  lua_pushvalue(L, 3);
  lua_call(L, 1, 3);
  if (lua_isnil(L, -3)) return 3;
  lua_pop(L, 2);
  return 1;
}

static int l_boundary(lua_State *L) {
  size_t clen, bn;
  const char *ctype = luaL_checklstring(L, 1, &clen), *b;
  if (zv_multipart_boundary(ctype, clen, &b, &bn)) return 0;
  lua_pushlstring(L, b, bn);
  return 1;
}

int luaopen_zever_multipart(lua_State *L);
int luaopen_zever_multipart(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"parse", l_parse}, {"boundary", l_boundary}, {"new", l_new}, {NULL, NULL},
  };
  static const luaL_Reg methods[] = {
    {"feed", p_feed}, {"finish", p_finish}, {"spooled", p_spooled}, {NULL, NULL},
  };
  luaL_newmetatable(L, PARSER_MT);
  lua_newtable(L);
  luaL_register(L, NULL, methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, p_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lua_newtable(L);
  luaL_register(L, NULL, fns);
  return 1;
}
