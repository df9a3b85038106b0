/*
 * client.c: the asynchronous Redis connection (see client.h). It owns one uv_timer_t and at
 * most one hiredis async context at a time; hiredis' libuv adapter owns the poll handle.
 *
 * The glue between hiredis and libuv (watch_t) is ours rather than hiredis' adapters/libuv.h:
 * the 0.14 adapter ignores a poll error (libuv reports a refused connect as UV_EBADF and stops
 * the handle), so hiredis never learnt that its connect failed and the caller waited forever.
 *
 * It must not call into Lua (the binding does, from on_reply) and must not free the struct
 * before the timer's close callback: hiredis may still call on_disconnect after a
 * zv_redis_client_close made from inside one of its callbacks. Error texts come from hiredis
 * or from here and never contain the password.
 */
#include <stdio.h>
#include <string.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "../core/zv.h"
#include "client.h"

static void arm_reconnect(zv_redis_client_t *c);
static void connect_now(zv_redis_client_t *c);
static void timer_cb(uv_timer_t *t);

static uint64_t to_ms(double s) {
  return s <= 0 ? 0 : (uint64_t)(s * 1000.0 + 0.999);
}

/* --- hiredis <-> libuv ---------------------------------------------------------------------- */

/*
 * hiredis asks for write readiness on every command and for read readiness on every read
 * (0.14 re-adds it each time). Handed straight to uv_poll_start, each of those is a stop and a
 * start of the poll: libuv drops the descriptor from epoll and adds it back, six epoll_ctl
 * calls per command, two of them failing. So:
 *   - the poll changes only when the wanted events change (reads stay on once connected);
 *   - on a connected socket a wanted write is not polled for: a prepare handle (it runs just
 *     before the loop polls, no system call to start or stop) writes the output buffer, so
 *     every command queued in one loop iteration leaves in one write(). Only a write that the
 *     socket did not take whole falls back to waiting for POLLOUT.
 * While connecting, writability is how the connect's end is seen, so it is polled as before.
 */
typedef struct {
  uv_poll_t poll;
  uv_prepare_t flush;     /* the deferred write */
  redisAsyncContext *ac;  /* NULL once hiredis let go of the context */
  int events;             /* what the poll watches */
  int want_write;         /* hiredis has output to write */
  int open_handles;       /* freed when both handles are closed */
} watch_t;

static void watch_cb(uv_poll_t *h, int status, int events);

static void watch_poll(watch_t *w, int events) {
  if (events == w->events) return;
  w->events = events;
  if (events) uv_poll_start(&w->poll, events, watch_cb);
  else uv_poll_stop(&w->poll);
}

static void watch_cb(uv_poll_t *h, int status, int events) {
  watch_t *w = h->data;
  /* On an error libuv stops the handle: let hiredis find the socket error itself. */
  if (status < 0) {
    events = w->events ? w->events : UV_READABLE;
    w->events = 0;
  }
  if (w->ac && (events & UV_READABLE)) redisAsyncHandleRead(w->ac);
  if (w->ac && (events & UV_WRITABLE)) redisAsyncHandleWrite(w->ac);
}

static void flush_cb(uv_prepare_t *h) {
  watch_t *w = h->data;
  uv_prepare_stop(h);
  if (!w->ac || !w->want_write) return;
  redisAsyncHandleWrite(w->ac);
  /* A short write: the rest goes when the socket is writable again. */
  if (w->ac && w->want_write) watch_poll(w, w->events | UV_WRITABLE);
}

static void watch_add_read(void *p) {
  watch_t *w = p;
  watch_poll(w, w->events | UV_READABLE);
}

static void watch_del_read(void *p) {
  watch_t *w = p;
  watch_poll(w, w->events & ~UV_READABLE);
}

static void watch_add_write(void *p) {
  watch_t *w = p;
  w->want_write = 1;
  if (!(w->ac->c.flags & REDIS_CONNECTED)) watch_poll(w, w->events | UV_WRITABLE);
  else if (!(w->events & UV_WRITABLE)) uv_prepare_start(&w->flush, flush_cb);
}

static void watch_del_write(void *p) {
  watch_t *w = p;
  w->want_write = 0;
  watch_poll(w, w->events & ~UV_WRITABLE);
}

static void watch_closed(uv_handle_t *h) {
  watch_t *w = h->data;
  if (--w->open_handles == 0) zv_free(w);
}

static void watch_cleanup(void *p) {
  watch_t *w = p;
  w->ac = NULL;
  uv_close((uv_handle_t *)&w->poll, watch_closed);
  uv_close((uv_handle_t *)&w->flush, watch_closed);
}

static int watch_attach(redisAsyncContext *ac, uv_loop_t *loop) {
  watch_t *w = zv_alloc(sizeof *w);
  if (!w) return ZV_ENOMEM;
  memset(w, 0, sizeof *w);
  if (uv_poll_init(loop, &w->poll, ac->c.fd)) {
    zv_free(w);
    return ZV_EIO;
  }
  uv_prepare_init(loop, &w->flush);
  w->open_handles = 2;
  w->poll.data = w;
  w->flush.data = w;
  w->ac = ac;
  ac->ev.data = w;
  ac->ev.addRead = watch_add_read;
  ac->ev.delRead = watch_del_read;
  ac->ev.addWrite = watch_add_write;
  ac->ev.delWrite = watch_del_write;
  ac->ev.cleanup = watch_cleanup;
  return 0;
}

/* --- the connection ------------------------------------------------------------------------- */

/* The poll handle keeps the loop alive only while replies are pending. */
static void update_ref(zv_redis_client_t *c) {
  redisAsyncContext *ac = c->ac;
  watch_t *w;
  if (!ac || !ac->ev.data) return;
  w = ac->ev.data;
  if (c->pending > 0) uv_ref((uv_handle_t *)&w->poll);
  else uv_unref((uv_handle_t *)&w->poll);
}

/* Restarts the deadline while something is outstanding (a connect or a reply); stops it else. */
static void update_deadline(zv_redis_client_t *c) {
  uint64_t ms = to_ms(c->opts.timeout);
  if (!c->ac || c->closed) return;
  /* While replies are due the deadline keeps the loop alive, so a waiter cannot spin. */
  if (ms && (c->pending > 0 || !c->connected)) {
    /* The loop's cached time may be stale (a script worked for seconds without running the
     * loop): without a refresh the deadline could already be past when it is armed. */
    uv_update_time(c->timer.loop);
    uv_timer_start(&c->timer, timer_cb, ms, 0);
    if (c->pending > 0) uv_ref((uv_handle_t *)&c->timer);
    else uv_unref((uv_handle_t *)&c->timer);
  } else {
    uv_timer_stop(&c->timer);
  }
}

static void set_err(zv_redis_client_t *c, const char *what, const char *detail) {
  snprintf(c->err, sizeof c->err, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
}

/* Forgets ac (hiredis frees it now or right after the running callback). */
static void drop(zv_redis_client_t *c) {
  c->ac = NULL;
  c->pending = 0;
  c->connected = 0;
  if (!c->closed) arm_reconnect(c);
}

static void reply_cb(redisAsyncContext *ac, void *reply, void *data) {
  zv_redis_client_t *c = ac->data;
  int failure = ZV_REDIS_OK;
  if (ac == c->ac && c->pending > 0) c->pending--;
  if (!reply) {
    failure = c->closed ? ZV_REDIS_CLOSED : ZV_REDIS_UNAVAILABLE;
    if (ac->err && ac->errstr[0] && !c->closed) set_err(c, ac->errstr, NULL);
  } else if (ac == c->ac) {
    update_deadline(c);
    update_ref(c);
  }
  c->on_reply(c, reply, failure, data);
}

/* AUTH and SELECT: a failure closes this connection, and the pending commands say why. */
static void setup_cb(redisAsyncContext *ac, void *reply, void *data) {
  zv_redis_client_t *c = ac->data;
  redisReply *r = reply;
  if (ac == c->ac && c->pending > 0) c->pending--;
  if (!r || ac != c->ac) return;
  if (r->type == REDIS_REPLY_ERROR) {
    set_err(c, data ? "SELECT failed" : "AUTH failed", r->str);
    drop(c);
    redisAsyncFree(ac);
    return;
  }
  update_deadline(c);
  update_ref(c);
}

static void on_connect(const redisAsyncContext *ac, int status) {
  zv_redis_client_t *c = ac->data;
  if (ac != c->ac) return;
  if (status != REDIS_OK) {
    set_err(c, ac->errstr[0] ? ac->errstr : "connect failed", NULL);
    drop(c); /* hiredis frees the context after this callback */
    return;
  }
  c->connected = 1;
  c->connects++;
  c->backoff_ms = to_ms(c->opts.backoff_min);
  update_deadline(c);
}

static void on_disconnect(const redisAsyncContext *ac, int status) {
  zv_redis_client_t *c = ac->data;
  if (ac != c->ac) return;
  if (status != REDIS_OK && ac->errstr[0]) set_err(c, ac->errstr, NULL);
  drop(c);
}

static void timer_cb(uv_timer_t *t) {
  zv_redis_client_t *c = ZV_CONTAINER_OF(t, zv_redis_client_t, timer);
  redisAsyncContext *ac = c->ac;
  if (c->closed) return;
  if (!ac) {
    connect_now(c);
    return;
  }
  set_err(c, c->connected ? "timed out waiting for a reply" : "connect timed out", NULL);
  /* Pending commands fail now; on_disconnect (connected only) or we ourselves forget ac. */
  redisAsyncFree(ac);
  if (c->ac == ac) drop(c);
}

static void arm_reconnect(zv_redis_client_t *c) {
  uint64_t max = to_ms(c->opts.backoff_max);
  uv_update_time(c->timer.loop);
  uv_timer_start(&c->timer, timer_cb, c->backoff_ms, 0);
  uv_unref((uv_handle_t *)&c->timer);
  c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : 1;
  if (c->backoff_ms > max) c->backoff_ms = max;
}

static void send_setup(zv_redis_client_t *c) {
  redisAsyncContext *ac = c->ac;
  char db[16];
  if (c->url.password[0]) {
    const char *argv[3] = {"AUTH", c->url.username, c->url.password};
    size_t lens[3] = {4, strlen(c->url.username), strlen(c->url.password)};
    if (c->url.username[0]) {
      redisAsyncCommandArgv(ac, setup_cb, NULL, 3, argv, lens);
    } else {
      argv[1] = c->url.password;
      lens[1] = lens[2];
      redisAsyncCommandArgv(ac, setup_cb, NULL, 2, argv, lens);
    }
    c->pending++;
  }
  if (c->url.db) {
    const char *argv[2] = {"SELECT", db};
    size_t lens[2] = {6, 0};
    lens[1] = (size_t)snprintf(db, sizeof db, "%d", c->url.db);
    redisAsyncCommandArgv(ac, setup_cb, c, 2, argv, lens);
    c->pending++;
  }
}

static void connect_now(zv_redis_client_t *c) {
  redisAsyncContext *ac = redisAsyncConnect(c->url.host, c->url.port);
  if (!ac) {
    set_err(c, "out of memory", NULL);
    arm_reconnect(c);
    return;
  }
  if (ac->err || watch_attach(ac, &c->loop->uv)) {
    set_err(c, ac->err ? ac->errstr : "cannot watch the socket", NULL);
    redisAsyncFree(ac);
    arm_reconnect(c);
    return;
  }
  ac->data = c;
  redisAsyncSetConnectCallback(ac, on_connect);
  redisAsyncSetDisconnectCallback(ac, on_disconnect);
  c->ac = ac;
  c->connected = 0;
  c->pending = 0;
  send_setup(c);
  update_ref(c);
  update_deadline(c);
}

static void timer_closed(uv_handle_t *h) {
  zv_redis_client_t *c = ZV_CONTAINER_OF((uv_timer_t *)h, zv_redis_client_t, timer);
  if (c->on_free) c->on_free(c);
  zv_free(c);
}

void zv_redis_client_close(zv_redis_client_t *c) {
  redisAsyncContext *ac = c->ac;
  if (c->closed) return;
  c->closed = 1;
  zv_loop_remove(&c->item);
  uv_timer_stop(&c->timer);
  if (ac) {
    c->ac = NULL;
    c->pending = 0;
    redisAsyncFree(ac);
  }
  uv_close((uv_handle_t *)&c->timer, timer_closed);
}

static void teardown(zv_loop_item_t *item) {
  zv_redis_client_close(ZV_CONTAINER_OF(item, zv_redis_client_t, item));
}

int zv_redis_client_new(zv_loop_t *loop, const zv_redis_url_t *url, const zv_redis_opts_t *opts,
                        zv_redis_reply_fn on_reply, zv_redis_free_fn on_free, void *user,
                        zv_redis_client_t **out) {
  zv_redis_client_t *c = zv_alloc(sizeof *c);
  if (!c) return ZV_ENOMEM;
  memset(c, 0, sizeof *c);
  c->loop = loop;
  c->url = *url;
  c->opts = *opts;
  c->on_reply = on_reply;
  c->on_free = on_free;
  c->user = user;
  c->backoff_ms = to_ms(opts->backoff_min);
  c->item.teardown = teardown;
  uv_timer_init(&loop->uv, &c->timer);
  uv_unref((uv_handle_t *)&c->timer);
  zv_loop_add(loop, &c->item);
  connect_now(c);
  *out = c;
  return 0;
}

int zv_redis_client_send(zv_redis_client_t *c, int argc, const char **argv, const size_t *lens,
                         void *data) {
  redisAsyncContext *ac = c->ac;
  if (c->closed) return ZV_EINVAL;
  if (!ac) return ZV_EIO;
  if (redisAsyncCommandArgv(ac, reply_cb, data, argc, argv, lens) != REDIS_OK) return ZV_EIO;
  if (c->pending++ == 0) {
    update_ref(c);
    update_deadline(c);
  }
  return 0;
}

const char *zv_redis_client_error(const zv_redis_client_t *c) {
  return c->err[0] ? c->err : "not connected";
}
