/*
 * sync.h: a blocking Redis connection (hiredis' synchronous API) for the CLI, migrations and
 * scripts that must not touch the event loop. It reconnects on the next call after a drop.
 *
 * No Lua here. Replies are hiredis redisReply trees that the caller frees with
 * zv_redis_sync_free_reply.
 */
#ifndef ZV_REDIS_SYNC_H
#define ZV_REDIS_SYNC_H

#include <stddef.h>

#include "redis_url.h"

typedef struct {
  void *ctx;          /* redisContext *, NULL while disconnected */
  zv_redis_url_t url;
  double timeout;     /* seconds for connect and for each reply; 0: none */
  char err[160];      /* the last connection error; never contains the password */
} zv_redis_sync_t;

/*
 * Connects (AUTH and SELECT from the URL) unless already connected. Returns 0, or ZV_EIO with
 * s->err set. Allocates through hiredis.
 */
int zv_redis_sync_connect(zv_redis_sync_t *s);

/*
 * Queues one command (argc arguments argv with lengths lens; copied) in the output buffer; a
 * pipeline is several appends followed by as many reads. Returns 0 or ZV_ENOMEM.
 */
int zv_redis_sync_append(zv_redis_sync_t *s, int argc, const char **argv, const size_t *lens);

/*
 * Writes what is queued (first read only) and reads the next reply into *reply, which the
 * caller frees with zv_redis_sync_free_reply. Returns 0, or ZV_EIO with s->err set: the
 * connection is then closed (the next zv_redis_sync_connect reconnects) and no reply is set.
 */
int zv_redis_sync_read(zv_redis_sync_t *s, void **reply);

void zv_redis_sync_free_reply(void *reply);

/* Closes the connection; s may connect again later. */
void zv_redis_sync_close(zv_redis_sync_t *s);

#endif
