/*
 * l_password_core.c: the zever.password_core binding: argon2id (password.c) on libuv's thread
 * pool, so hashing (tens of milliseconds by design) never stalls a worker's event loop.
 *
 *   core.hash(pw, salt, t, m, p, len, fn)   queues the work; later fn(encoded) or fn(nil, msg)
 *   core.verify(encoded, pw, fn)            later fn(true) / fn(false) / fn(nil, msg) (not an
 *                                           argon2id hash, out of memory)
 *   core.hash_sync(...), core.verify_sync(...)  the same, blocking (no loop: specs, scripts)
 *   core.raw(pw, salt, secret, ad, t, m, p, len) -> tag   (blocking; known-answer vectors)
 *   core.params(encoded)                    -> t, m, p, len | nil
 *
 * fn runs on the loop of the calling Lua state, through zv_loop_pcall, and is held in the
 * registry until then. A request copies its inputs (the password is wiped when the work is
 * done) and is freed in its after-work callback, which runs even when the loop closes first
 * (then without calling Lua). Nothing raises while holding a request: arguments are checked
 * before it is allocated.
 */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/runtime.h"
#include "password.h"

typedef struct {
  uv_work_t work;
  zv_loop_item_t item;
  zv_loop_t *loop;
  int fn_ref;
  int verify;                        /* 0: hash, 1: verify */
  int rc;
  zv_password_params_t params;
  char encoded[ZV_PASSWORD_ENCODED_MAX];
  unsigned char salt[64];
  size_t saltlen, pwlen;
  char pw[];                          /* the password, wiped after the work */
} job_t;

#define MAX_PW 4096

static void work_cb(uv_work_t *w) {
  job_t *j = w->data;
  if (j->verify)
    j->rc = zv_password_verify(j->encoded, j->pw, j->pwlen);
  else
    j->rc = zv_password_hash(&j->params, j->pw, j->pwlen, j->salt, j->saltlen, j->encoded,
                             sizeof j->encoded);
  memset(j->pw, 0, j->pwlen);
}

/* Results go to fn: hash -> encoded | nil, msg; verify -> true | false | nil, msg. */
static int push_result(lua_State *L, job_t *j) {
  if (j->verify) {
    if (j->rc == 0 || j->rc == ZV_ENOTFOUND) {
      lua_pushboolean(L, j->rc == 0);
      return 1;
    }
  } else if (j->rc == 0) {
    lua_pushstring(L, j->encoded);
    return 1;
  }
  lua_pushnil(L);
  lua_pushstring(L, j->rc == ZV_EINVAL ? (j->verify ? "not an argon2id hash" : "invalid parameters")
                                       : zv_strerror(j->rc));
  return 2;
}

static void after_cb(uv_work_t *w, int status) {
  job_t *j = w->data;
  lua_State *L = j->loop->L;
  zv_loop_remove(&j->item);
  if (status == 0 && L && !j->loop->closing && j->fn_ref != LUA_NOREF) {
    int n;
    lua_rawgeti(L, LUA_REGISTRYINDEX, j->fn_ref);
    luaL_unref(L, LUA_REGISTRYINDEX, j->fn_ref);
    n = push_result(L, j);
    zv_free(j);
    zv_loop_pcall(L, n, 0, "password callback");
    return;
  }
  zv_free(j);
}

/* The loop closes with the work queued or running: cancel it if it has not started; the
 * after-work callback frees it either way, without calling Lua. */
static void teardown(zv_loop_item_t *item) {
  job_t *j = ZV_CONTAINER_OF(item, job_t, item);
  zv_loop_remove(&j->item);
  j->fn_ref = LUA_NOREF;
  uv_cancel((uv_req_t *)&j->work);
}

static void check_params(lua_State *L, int i, zv_password_params_t *p) {
  lua_Integer t = luaL_checkinteger(L, i), m = luaL_checkinteger(L, i + 1);
  lua_Integer par = luaL_checkinteger(L, i + 2), len = luaL_checkinteger(L, i + 3);
  luaL_argcheck(L, t >= 1 && t <= 1000, i, "want 1..1000 passes");
  luaL_argcheck(L, m >= 8 && m <= 4194304, i + 1, "want 8..4194304 KiB");
  luaL_argcheck(L, par >= 1 && par <= 64 && m >= 8 * par, i + 2, "want 1..64 lanes, m >= 8p");
  luaL_argcheck(L, len >= 4 && len <= 64, i + 3, "want 4..64 bytes");
  p->t_cost = (uint32_t)t;
  p->m_cost = (uint32_t)m;
  p->lanes = (uint32_t)par;
  p->hash_len = (uint32_t)len;
  p->version = 0x13;
}

static job_t *new_job(lua_State *L, const char *pw, size_t n) {
  job_t *j = zv_alloc(sizeof *j + n + 1);
  if (!j) return NULL;
  memset(j, 0, sizeof *j);
  memcpy(j->pw, pw, n);
  j->pwlen = n;
  j->loop = zv_loop_of(L);
  j->work.data = j;
  j->fn_ref = LUA_NOREF;
  return j;
}

static int queue(lua_State *L, job_t *j, int fn_index) {
  int rc;
  lua_pushvalue(L, fn_index);
  j->fn_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  j->item.teardown = teardown;
  zv_loop_add(j->loop, &j->item);
  rc = uv_queue_work(&j->loop->uv, &j->work, work_cb, after_cb);
  if (rc) {
    zv_loop_remove(&j->item);
    luaL_unref(L, LUA_REGISTRYINDEX, j->fn_ref);
    memset(j->pw, 0, j->pwlen);
    zv_free(j);
    return luaL_error(L, "password: cannot queue work: %s", uv_strerror(rc));
  }
  return 0;
}

static int l_hash(lua_State *L) {
  size_t n, saltlen;
  zv_password_params_t p;
  job_t *j;
  const char *pw = luaL_checklstring(L, 1, &n);
  const char *salt = luaL_checklstring(L, 2, &saltlen);
  check_params(L, 3, &p);
  luaL_checktype(L, 7, LUA_TFUNCTION);
  luaL_argcheck(L, n <= MAX_PW, 1, "password longer than 4096 bytes");
  luaL_argcheck(L, saltlen >= 8 && saltlen <= 64, 2, "want an 8..64-byte salt");
  zv_loop_of(L); /* may raise: before the allocation */
  j = new_job(L, pw, n);
  if (!j) return luaL_error(L, "password: out of memory");
  j->params = p;
  memcpy(j->salt, salt, saltlen);
  j->saltlen = saltlen;
  return queue(L, j, 7);
}

static int l_verify(lua_State *L) {
  size_t elen, n;
  job_t *j;
  const char *encoded = luaL_checklstring(L, 1, &elen);
  const char *pw = luaL_checklstring(L, 2, &n);
  luaL_checktype(L, 3, LUA_TFUNCTION);
  luaL_argcheck(L, n <= MAX_PW, 2, "password longer than 4096 bytes");
  zv_loop_of(L);
  j = new_job(L, pw, n);
  if (!j) return luaL_error(L, "password: out of memory");
  j->verify = 1;
  if (elen >= sizeof j->encoded || memchr(encoded, 0, elen)) {
    strcpy(j->encoded, "-"); /* not a hash: the work reports EINVAL */
  } else {
    memcpy(j->encoded, encoded, elen + 1);
  }
  return queue(L, j, 3);
}

static int l_hash_sync(lua_State *L) {
  size_t n, saltlen;
  zv_password_params_t p;
  char out[ZV_PASSWORD_ENCODED_MAX];
  const char *pw = luaL_checklstring(L, 1, &n);
  const char *salt = luaL_checklstring(L, 2, &saltlen);
  int rc;
  check_params(L, 3, &p);
  luaL_argcheck(L, n <= MAX_PW, 1, "password longer than 4096 bytes");
  luaL_argcheck(L, saltlen >= 8 && saltlen <= 64, 2, "want an 8..64-byte salt");
  rc = zv_password_hash(&p, pw, n, salt, saltlen, out, sizeof out);
  if (rc) {
    lua_pushnil(L);
    lua_pushstring(L, rc == ZV_EINVAL ? "invalid parameters" : zv_strerror(rc));
    return 2;
  }
  lua_pushstring(L, out);
  return 1;
}

static int l_verify_sync(lua_State *L) {
  size_t elen, n;
  const char *encoded = luaL_checklstring(L, 1, &elen);
  const char *pw = luaL_checklstring(L, 2, &n);
  int rc;
  luaL_argcheck(L, n <= MAX_PW, 2, "password longer than 4096 bytes");
  rc = (elen >= ZV_PASSWORD_ENCODED_MAX || memchr(encoded, 0, elen))
         ? ZV_EINVAL : zv_password_verify(encoded, pw, n);
  if (rc == 0 || rc == ZV_ENOTFOUND) {
    lua_pushboolean(L, rc == 0);
    return 1;
  }
  lua_pushnil(L);
  lua_pushstring(L, rc == ZV_EINVAL ? "not an argon2id hash" : zv_strerror(rc));
  return 2;
}

static int l_raw(lua_State *L) {
  size_t n, saltlen, slen, alen;
  zv_password_params_t p;
  unsigned char out[64];
  const char *pw = luaL_checklstring(L, 1, &n);
  const char *salt = luaL_checklstring(L, 2, &saltlen);
  const char *secret = luaL_optlstring(L, 3, "", &slen);
  const char *ad = luaL_optlstring(L, 4, "", &alen);
  int rc;
  check_params(L, 5, &p);
  rc = zv_password_raw(&p, pw, n, salt, saltlen, slen ? secret : NULL, slen, alen ? ad : NULL,
                       alen, out);
  if (rc) return luaL_error(L, "password.raw: %s", zv_strerror(rc));
  lua_pushlstring(L, (const char *)out, p.hash_len);
  return 1;
}

static int l_params(lua_State *L) {
  zv_password_params_t p;
  const char *encoded = luaL_checkstring(L, 1);
  if (zv_password_params(encoded, &p)) {
    lua_pushnil(L);
    return 1;
  }
  lua_pushinteger(L, (lua_Integer)p.t_cost);
  lua_pushinteger(L, (lua_Integer)p.m_cost);
  lua_pushinteger(L, (lua_Integer)p.lanes);
  lua_pushinteger(L, (lua_Integer)p.hash_len);
  return 4;
}

int luaopen_zever_password_core(lua_State *L);
int luaopen_zever_password_core(lua_State *L) {
  static const luaL_Reg funcs[] = {
    {"hash", l_hash}, {"verify", l_verify}, {"hash_sync", l_hash_sync},
    {"verify_sync", l_verify_sync}, {"raw", l_raw}, {"params", l_params}, {NULL, NULL}};
  lua_newtable(L);
  luaL_register(L, NULL, funcs);
  return 1;
}
