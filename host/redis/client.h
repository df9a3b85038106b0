/*
 * client.h: an asynchronous Redis connection on a zever loop (hiredis' async API with our own
 * libuv glue), which reconnects with backoff when the connection drops.
 *
 * No Lua here: the binding (l_redis_core.c) turns replies into Lua values and resumes the
 * coroutines that wait on them. The client sends AUTH and SELECT from the URL on every connect.
 *
 *   states:   connecting --connect ok--> connected --drop/timeout--> waiting (backoff timer)
 *                 ^                                                     |
 *                 +------------------------- timer fires ---------------+
 *
 * While waiting, zv_redis_client_send fails at once (ZV_EIO): callers see "unavailable" instead
 * of queueing behind a dead server. The backoff doubles from opts.backoff_min to
 * opts.backoff_max and resets on a successful connect.
 *
 * Handles: the poll handle (inside hiredis' adapter) keeps the loop alive only while replies are
 * pending, and the timer never does, so an idle client does not keep loop.run() from returning.
 */
#ifndef ZV_REDIS_CLIENT_H
#define ZV_REDIS_CLIENT_H

#include <uv.h>

#include "../loop/loop.h"
#include "redis_url.h"

/* Why a command got no reply: */
#define ZV_REDIS_OK 0
#define ZV_REDIS_UNAVAILABLE 1 /* the connection dropped or timed out; zv_redis_client_error says why */
#define ZV_REDIS_CLOSED 2      /* the client was closed before the reply came */

typedef struct zv_redis_client_s zv_redis_client_t;

/*
 * Called once per command sent with zv_redis_client_send: reply is the hiredis redisReply
 * (owned by hiredis, valid during the call only) when failure is ZV_REDIS_OK, NULL otherwise.
 * It may send more commands or close the client.
 */
typedef void (*zv_redis_reply_fn)(zv_redis_client_t *c, void *reply, int failure, void *data);
/* Called once, just before the client's memory is freed. */
typedef void (*zv_redis_free_fn)(zv_redis_client_t *c);

typedef struct {
  double timeout;     /* seconds for a connect, or between replies while some are pending; 0: none */
  double backoff_min; /* seconds before the first reconnect */
  double backoff_max; /* cap of the doubling */
} zv_redis_opts_t;

struct zv_redis_client_s {
  zv_loop_item_t item;
  zv_loop_t *loop;
  uv_timer_t timer;   /* reconnect backoff while ac is NULL, reply deadline otherwise */
  void *ac;           /* redisAsyncContext *, NULL while waiting to reconnect */
  zv_redis_url_t url;
  zv_redis_opts_t opts;
  zv_redis_reply_fn on_reply;
  zv_redis_free_fn on_free;
  void *user;         /* the binding's */
  uint64_t backoff_ms;
  int pending;        /* commands sent on ac without a reply yet (AUTH and SELECT included) */
  int connected;
  int closed;
  unsigned long connects; /* successful connects so far */
  char err[160];      /* the last connection error; never contains the password */
};

/*
 * Allocates a client, registers it with the loop (closed with it) and starts connecting. The
 * url and opts are copied. Returns 0 or ZV_ENOMEM.
 */
int zv_redis_client_new(zv_loop_t *loop, const zv_redis_url_t *url, const zv_redis_opts_t *opts,
                        zv_redis_reply_fn on_reply, zv_redis_free_fn on_free, void *user,
                        zv_redis_client_t **out);

/*
 * Queues one command (argc arguments of the given lengths; copied). On 0, on_reply will be
 * called exactly once with data. Returns ZV_EIO when the client is waiting to reconnect (or
 * hiredis refuses: on_reply is not called), ZV_EINVAL when it is closed.
 */
int zv_redis_client_send(zv_redis_client_t *c, int argc, const char **argv, const size_t *lens,
                         void *data);

/*
 * Closes the client: every pending command gets on_reply(..., ZV_REDIS_CLOSED, data) now, or
 * right after the current hiredis callback when called from one; then on_free runs from the
 * loop's close callback and the memory is freed. Calling it twice is harmless.
 */
void zv_redis_client_close(zv_redis_client_t *c);

/* The last connection error ("Connection refused", "timed out", "AUTH failed: ..."). */
const char *zv_redis_client_error(const zv_redis_client_t *c);

#endif
