/*
 * sync.c: the blocking Redis connection (see sync.h). It must not touch the event loop or Lua;
 * its error texts come from hiredis and never include the password.
 */
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "../core/zv.h"
#include "sync.h"

static void set_err(zv_redis_sync_t *s, const char *what, const char *detail) {
  snprintf(s->err, sizeof s->err, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
}

void zv_redis_sync_close(zv_redis_sync_t *s) {
  if (s->ctx) redisFree(s->ctx);
  s->ctx = NULL;
}

void zv_redis_sync_free_reply(void *reply) {
  if (reply) freeReplyObject(reply);
}

/* Runs one setup command; 0 or ZV_EIO with s->err set (the password never appears in it). */
static int setup(zv_redis_sync_t *s, const char *what, int argc, const char **argv,
                 const size_t *lens) {
  redisReply *r = redisCommandArgv(s->ctx, argc, argv, lens);
  int rc = 0;
  if (!r) {
    set_err(s, ((redisContext *)s->ctx)->errstr, NULL);
    return ZV_EIO;
  }
  if (r->type == REDIS_REPLY_ERROR) {
    set_err(s, what, r->str);
    rc = ZV_EIO;
  }
  freeReplyObject(r);
  return rc;
}

int zv_redis_sync_connect(zv_redis_sync_t *s) {
  redisContext *c;
  struct timeval tv;
  if (s->ctx) return 0;
  tv.tv_sec = (long)s->timeout;
  tv.tv_usec = (long)((s->timeout - (double)tv.tv_sec) * 1e6);
  c = s->timeout > 0 ? redisConnectWithTimeout(s->url.host, s->url.port, tv)
                     : redisConnect(s->url.host, s->url.port);
  if (!c) {
    set_err(s, "out of memory", NULL);
    return ZV_EIO;
  }
  if (c->err) {
    set_err(s, c->errstr, NULL);
    redisFree(c);
    return ZV_EIO;
  }
  if (s->timeout > 0) redisSetTimeout(c, tv);
  s->ctx = c;
  if (s->url.password[0]) {
    const char *argv[3] = {"AUTH", s->url.username, s->url.password};
    size_t lens[3] = {4, strlen(s->url.username), strlen(s->url.password)};
    int argc = 3;
    if (!s->url.username[0]) {
      argv[1] = argv[2];
      lens[1] = lens[2];
      argc = 2;
    }
    if (setup(s, "AUTH failed", argc, argv, lens)) goto fail;
  }
  if (s->url.db) {
    char db[16];
    const char *argv[2] = {"SELECT", db};
    size_t lens[2] = {6, 0};
    lens[1] = (size_t)snprintf(db, sizeof db, "%d", s->url.db);
    if (setup(s, "SELECT failed", 2, argv, lens)) goto fail;
  }
  return 0;
fail:
  zv_redis_sync_close(s);
  return ZV_EIO;
}

int zv_redis_sync_append(zv_redis_sync_t *s, int argc, const char **argv, const size_t *lens) {
  if (!s->ctx) return ZV_EIO;
  return redisAppendCommandArgv(s->ctx, argc, argv, lens) == REDIS_OK ? 0 : ZV_ENOMEM;
}

int zv_redis_sync_read(zv_redis_sync_t *s, void **reply) {
  redisContext *c = s->ctx;
  *reply = NULL;
  if (!c) return ZV_EIO;
  if (redisGetReply(c, reply) == REDIS_OK && *reply) return 0;
  set_err(s, c->errstr[0] ? c->errstr : "connection lost", NULL);
  if (*reply) freeReplyObject(*reply);
  *reply = NULL;
  zv_redis_sync_close(s);
  return ZV_EIO;
}
