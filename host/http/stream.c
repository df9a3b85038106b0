/*
 * stream.c: the HTTP/1.1 server's connections, their life: the pool of closed connections kept
 * for reuse, the idle keep-alive list, the timer of each connection, accepting and closing.
 * server.c listens, accepts and runs the server's lifecycle; it hands each accepted socket to
 * zv__http_conn_accept (stream.h). Reading and dispatch are stream_read.c's, writing and
 * responses stream_write.c's, static files stream_static.c's (stream_int.h says who calls what).
 * This file never calls server.c: it reports a connection that closed or went idle through
 * s->on_conn_change.
 *
 * It must not call into Lua, and must not allocate per request in steady state: connections and
 * their buffers are reused.
 *
 * Timeouts: each connection has one timer, armed for what it waits for (timer_mode):
 *   HEADER     a fresh connection or a partial request line/headers: 408 (or a quiet close when
 *              nothing arrived) after header_timeout
 *   BODY       the rest of a body: 408 after body_timeout
 *   KEEPALIVE  an idle keep-alive connection: a quiet close after keepalive_timeout
 *   LINGER     after a final response and shutdown(SHUT_WR), unread input is drained for a
 *              moment so that closing does not reset the connection before the client read it
 *   HANDLER    a request waits for its response after on_request returned (its handler yields):
 *              on_handler_timeout after handler_timeout (or the request's own handler_ms)
 *   NONE       a request waits for its response: the application decides how long
 *
 * Writes have a deadline of their own beside the mode: while uv_write requests are queued, no
 * progress for write_timeout closes the connection, which frees what was queued (a client that
 * never reads a large response holds nothing for long). Progress is a write that completed,
 * or, looked at when the deadline comes, libuv's write queue or the kernel's send queue
 * (SIOCOUTQ: bytes not yet acknowledged by the client) having shrunk: the kernel buffers
 * megabytes and wakes a writer only when much of that is gone, so a client that reads slowly
 * but steadily shows progress there first. The close comes between one and two write_timeouts
 * after the last byte moved.
 *
 * Idle keep-alive connections are on a list, oldest first, so that server.c can close the
 * oldest to admit a new connection at max_connections.
 */
#include "stream_int.h"

#include <string.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../core/zv.h"

#define LINGER_MS 2000
#define POOL_MAX 1024           /* closed connections kept for reuse (HTTP/2 streams: many at once) */

const char *zv_http_error_body(int status) {
  switch (status) {
  case 400: return "{\"error\":\"bad_request\"}";
  case 408: return "{\"error\":\"request_timeout\"}";
  case 413: return "{\"error\":\"content_too_large\"}";
  case 414: return "{\"error\":\"uri_too_long\"}";
  case 417: return "{\"error\":\"expectation_failed\"}";
  case 431: return "{\"error\":\"header_fields_too_large\"}";
  case 500: return "{\"error\":\"internal\"}";
  case 501: return "{\"error\":\"not_implemented\"}";
  case 503: return "{\"error\":\"unavailable\"}";
  case 505: return "{\"error\":\"http_version_not_supported\"}";
  default: return "{\"error\":\"error\"}";
  }
}

/* --- the idle keep-alive list ---------------------------------------------------------------- */

static void idle_link(zv_http_sconn_t *c) {
  zv_http_server_t *s = c->srv;
  c->in_idle = 1;
  c->idle_next = NULL;
  c->idle_prev = s->idle_tail;
  if (s->idle_tail) s->idle_tail->idle_next = c;
  else s->idle_head = c;
  s->idle_tail = c;
}

static void idle_unlink(zv_http_sconn_t *c) {
  zv_http_server_t *s = c->srv;
  c->in_idle = 0;
  if (c->idle_prev) c->idle_prev->idle_next = c->idle_next;
  else s->idle_head = c->idle_next;
  if (c->idle_next) c->idle_next->idle_prev = c->idle_prev;
  else s->idle_tail = c->idle_prev;
  c->idle_prev = c->idle_next = NULL;
}

/* --- timers --------------------------------------------------------------------------------- */

/*
 * Timers are lazy: zv__http_arm() records a deadline and starts the uv timer only when it is not
 * running or would fire after the new deadline. A timer that fires early re-arms itself for the
 * rest; one that fires with nothing to wait for (T_NONE) just stops. A keep-alive connection thus
 * costs no timer operation per request.
 */

/* Starts the timer for the earliest of the mode's deadline and the write deadline, unless it
 * runs already and fires no later. */
void zv__http_rearm(zv_http_sconn_t *c, uint64_t now) {
  uint64_t due = UINT64_MAX;
  if (c->timer_mode != T_NONE) due = c->deadline;
  if ((c->writes || c->file_wait || (c->parent && c->pending)) && c->wdeadline < due)
    due = c->wdeadline;
  if (due == UINT64_MAX) return;
  if (uv_is_active((uv_handle_t *)&c->timer) && c->timer_due <= due) return;
  zv__http_timer_start(c, now, due > now ? due - now : 0);
}

/* Bytes in the kernel's send queue of c (not yet acknowledged by the peer). */
uint64_t zv__http_kernel_outq(zv_http_sconn_t *c) {
  int n = 0;
  if (c->fd < 0 || ioctl(c->fd, SIOCOUTQ, &n) < 0 || n < 0) return 0;
  return (uint64_t)n;
}

static void timer_cb(uv_timer_t *t) {
  zv_http_sconn_t *c = t->data;
  zv_http_server_t *s = c->srv;
  zv_http_str_t hdrs[2] = {{"Content-Type", 12}, {"application/json", 16}};
  uint64_t now = uv_now(s->loop);
  const char *body;
  int mode;
  if (c->closing) return;
  if (c->parent && c->pending && now >= c->wdeadline) {
    /* A stream whose bytes the client's window has held back for write_timeout: the transport
     * reports progress (zv__http_conn_progress), so nothing moved. Reset, as a stalled socket. */
    s->write_timeouts++;
    zv__http_conn_close_now(c);
    return;
  }
  if ((c->writes || c->file_wait) && now >= c->wdeadline) {
    uint64_t done = c->queued - uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp);
    uint64_t outq = zv__http_kernel_outq(c);
    int moved = done != c->wmark || outq < c->koutq;
    c->koutq = outq;
    if (!moved) {
      /* Nothing moved for write_timeout: drop the connection and what it queued. */
      s->write_timeouts++;
      zv__http_conn_close_now(c);
      return;
    }
    c->wmark = done;
    c->wdeadline = now + s->opts.write_timeout_ms;
  }
  if (c->timer_mode == T_NONE || now < c->deadline) {
    zv__http_rearm(c, now);
    return;
  }
  mode = c->timer_mode;
  c->timer_mode = T_NONE;
  if (mode == T_HANDLER) {
    if (c->resp == ZV_HTTP_RESP_NONE && s->cb.on_handler_timeout) {
      s->handler_timeouts++;
      s->cb.on_handler_timeout(s, c);
    }
  } else if (c->lingering || c->shutting || c->core.state == ZV_HTTP_IDLE) {
    zv__http_conn_close_now(c);
    return;
  } else if (c->core.state == ZV_HTTP_HEAD || c->core.state == ZV_HTTP_BODY) {
    body = zv_http_error_body(408);
    c->core.state = ZV_HTTP_ERROR;
    c->core.status = 408;
    c->body_streaming = 0;
    if (c->resp == ZV_HTTP_RESP_NONE) {
      c->must_close = 1;
      c->is_head = 0;
      zv_http_respond(c, 408, hdrs, 1, body, strlen(body));
    } else {
      zv__http_conn_close_now(c); /* a response is streaming: it cannot be a 408 now */
    }
    /* A streamed body's reader waited for this body: it learns of the timeout. */
    zv__http_body_notify(c);
  }
  if (!c->closing) zv__http_rearm(c, uv_now(s->loop));
}

void zv__http_conn_progress(zv_http_sconn_t *c) {
  uint64_t now;
  if (c->closing || !c->pending) return;
  now = uv_now(c->srv->loop);
  c->wdeadline = now + c->srv->opts.write_timeout_ms;
  zv__http_rearm(c, now);
}

void zv__http_timer_start(zv_http_sconn_t *c, uint64_t now, uint64_t ms) {
  c->timer_due = now + ms;
  uv_timer_start(&c->timer, timer_cb, ms, 0);
}

void zv__http_arm(zv_http_sconn_t *c, int mode) {
  uint64_t ms = 0, now;
  if (mode == c->timer_mode) return;
  c->timer_mode = (uint8_t)mode;
  if (c->in_idle) idle_unlink(c);
  switch (mode) {
  case T_NONE: return;
  case T_HANDLER: ms = c->handler_ms ? c->handler_ms : c->srv->opts.handler_timeout_ms; break;
  case T_HEADER: ms = c->srv->opts.header_timeout_ms; break;
  case T_BODY: ms = c->srv->opts.body_timeout_ms; break;
  case T_KEEPALIVE:
    ms = c->srv->opts.keepalive_timeout_ms;
    idle_link(c);
    break;
  case T_LINGER: ms = LINGER_MS; break;
  }
  now = uv_now(c->srv->loop);
  c->deadline = now + ms;
  if (!uv_is_active((uv_handle_t *)&c->timer) || c->timer_due > c->deadline)
    zv__http_timer_start(c, now, ms);
}

/* Arms the timer for what the parser waits for now. */
void zv__http_arm_for_state(zv_http_sconn_t *c) {
  switch (c->core.state) {
  case ZV_HTTP_IDLE: zv__http_arm(c, c->fresh ? T_HEADER : T_KEEPALIVE); break;
  case ZV_HTTP_HEAD: zv__http_arm(c, T_HEADER); break;
  case ZV_HTTP_BODY: zv__http_arm(c, T_BODY); break;
  default: zv__http_arm(c, T_NONE); break;
  }
}

/* --- connections: memory ------------------------------------------------------------------- */

static zv_http_sconn_t *conn_get(zv_http_server_t *s) {
  zv_http_sconn_t *c = s->free;
  if (c) {
    s->free = c->next;
    s->nfree--;
    zv_http_conn_reset(&c->core);
  } else {
    c = zv_alloc(sizeof *c);
    if (!c) return NULL;
    memset(&c->head, 0, sizeof c->head);
    if (zv_http_conn_init(&c->core, &s->opts.limits)) {
      zv_free(c);
      return NULL;
    }
  }
  c->srv = s;
  c->prev = c->next = c->ready_next = NULL;
  c->idle_prev = c->idle_next = NULL;
  c->in_idle = 0;
  c->data = NULL;
  c->wdeadline = c->queued = c->wmark = c->koutq = c->handler_ms = 0;
  c->pending = c->low_water = c->up_cap = 0;
  c->want_writable = c->upgraded = c->corked = 0;
  c->body_streaming = c->body_wait = 0;
  c->writes = 0;
  c->nclose = 0;
  c->timer_mode = T_NONE;
  c->deadline = c->timer_due = 0;
  c->resp = ZV_HTTP_RESP_NONE;
  c->fresh = 1;
  c->reading = c->closing = c->lingering = c->shutting = c->in_dispatch = c->ready = 0;
  c->must_close = c->is_head = c->stream_raw = c->no_body = 0;
  c->fd = -1;
  c->rd_ready = c->rd_eof = c->in_read = c->want_process = c->want_read = 0;
  c->file_fd = -1;
  c->file_wait = 0;
  c->file_off = c->file_end = 0;
  c->xp = NULL;
  c->parent = NULL;
  c->xp_hold = c->xp_busy = c->want_shutdown = c->want_notify = 0;
  c->want_flush = 0;
  c->flush_next = NULL;
  c->hc_len = 0;
  return c;
}

static void conn_release(zv_http_server_t *s, zv_http_sconn_t *c) {
  if (s->nfree < POOL_MAX && !s->torn_down) {
    c->next = s->free;
    s->free = c;
    s->nfree++;
    return;
  }
  zv_http_conn_free(&c->core);
  zv_http_buf_free(&c->head);
  zv_free(c);
}

static void conn_closed(uv_handle_t *h) {
  zv_http_sconn_t *c = h->data;
  zv_http_server_t *s = c->srv;
  if (--c->nclose > 0) return;
  s->nconns--;
  if (c->parent) s->nstreams--;
  conn_release(s, c);
  s->on_conn_change(s);
}

static void unlink_ready(zv_http_sconn_t *c) {
  zv_http_sconn_t **pp = &c->srv->ready;
  if (!c->ready) return;
  while (*pp && *pp != c) pp = &(*pp)->ready_next;
  if (*pp) *pp = c->ready_next;
  c->ready = 0;
  c->want_process = c->want_read = c->want_shutdown = c->want_notify = 0;
}

static void unlink_flush(zv_http_sconn_t *c) {
  zv_http_sconn_t **pp = &c->srv->flushq;
  if (!c->want_flush) return;
  while (*pp && *pp != c) pp = &(*pp)->flush_next;
  if (*pp) *pp = c->flush_next;
  c->want_flush = 0; /* (flush_next stays: the idle callback may be walking its list) */
}

/* Closes c's handles now; its memory goes back to the pool in the close callbacks. */
void zv__http_conn_close_now(zv_http_sconn_t *c) {
  zv_http_server_t *s = c->srv;
  if (c->closing) return;
  c->closing = 1;
  if (!c->parent) s->nlive--;
  unlink_ready(c);
  unlink_flush(c);
  if (c->in_idle) idle_unlink(c);
  if (c->prev) c->prev->next = c->next;
  else s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  c->prev = c->next = NULL;
  if (s->cb.on_conn_close) s->cb.on_conn_close(s, c);
  c->data = NULL;
  if (c->fd >= 0) {
    /* Closing the descriptor would drop it from epfd too, but only once libuv closes it. */
    epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    c->fd = -1;
  }
  if (c->file_fd >= 0) {
    close(c->file_fd);
    c->file_fd = -1;
  }
  c->file_wait = 0;
  c->reading = c->rd_ready = 0;
  if (c->xp) {
    void *xp = c->xp;
    c->xp = NULL;
    s->opts.xport->close(c, xp);
  }
  if (c->parent) { /* a virtual connection: no socket */
    c->nclose = 1;
    uv_close((uv_handle_t *)&c->timer, conn_closed);
    return;
  }
  c->nclose = 2;
  uv_close((uv_handle_t *)&c->tcp, conn_closed);
  uv_close((uv_handle_t *)&c->timer, conn_closed);
}

void zv_http_abort(zv_http_sconn_t *c) {
  zv__http_conn_close_now(c);
}

/* --- graceful close ------------------------------------------------------------------------ */

static void shutdown_cb(uv_shutdown_t *req, int status) {
  zv_http_sconn_t *c = req->data;
  if (c->closing) return;
  if (status < 0) {
    zv__http_conn_close_now(c);
    return;
  }
  /* Read and drop what the client still sends until it closes, for a moment at most. */
  c->lingering = 1;
  c->core.len = c->core.pos = 0;
  zv__http_arm(c, T_LINGER);
  zv__http_start_reading(c);
}

/* Sends FIN after the queued writes, then lingers; used after a final response. */
void zv__http_conn_close_graceful(zv_http_sconn_t *c) {
  if (c->closing || c->shutting) return;
  if (c->parent) { /* a virtual connection: its one response is with the transport */
    zv__http_conn_close_now(c);
    return;
  }
  /* What an upgraded connection collected for the end of the idle pass goes before the FIN. */
  if (c->upgraded && zv__http_conn_uncork(c)) return;
  c->shutting = 1;
  c->shutdown.data = c;
  zv__http_arm(c, T_NONE);
  if (c->xp) {
    c->srv->opts.xport->shutdown(c, c->xp);
    /* Streams in flight: the FIN waits for them (zv__http_conn_busy). */
    if (c->closing || c->xp_busy) return;
  }
  if (uv_shutdown(&c->shutdown, (uv_stream_t *)&c->tcp, shutdown_cb)) zv__http_conn_close_now(c);
}

/* --- accepting ------------------------------------------------------------------------------ */

/* Takes the next connection from the listener l: a pooled connection, its handles, epfd
 * membership and the header timer. Returns 0, or -1 when none could be taken (the caller
 * rejects the socket). */
int zv__http_conn_accept(zv_http_server_t *s, uv_stream_t *l) {
  zv_http_sconn_t *c = conn_get(s);
  if (!c) return -1;
  uv_tcp_init(s->loop, &c->tcp);
  uv_timer_init(s->loop, &c->timer);
  c->tcp.data = c;
  c->timer.data = c;
  s->nconns++;
  s->nlive++;
  c->next = s->conns;
  if (s->conns) s->conns->prev = c;
  s->conns = c;
  if (uv_accept(l, (uv_stream_t *)&c->tcp)) {
    zv__http_conn_close_now(c);
    return 0;
  }
  {
    uv_os_fd_t fd;
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = c;
    if (uv_fileno((uv_handle_t *)&c->tcp, &fd) || epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
      zv__http_conn_close_now(c);
      return 0;
    }
    c->fd = fd;
  }
  if (s->opts.xport && !(c->xp = s->opts.xport->open(s->opts.xport_ctx, c))) {
    zv__http_conn_close_now(c);
    return 0;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  zv__http_arm(c, T_HEADER);
  /* Bytes that came with the connection are reported by epfd at once (the add polls). */
  zv__http_start_reading(c);
  return 0;
}

zv_http_sconn_t *zv__http_conn_open_virtual(zv_http_sconn_t *parent, void *xp) {
  zv_http_server_t *s = parent->srv;
  zv_http_sconn_t *c = conn_get(s);
  if (!c) return NULL;
  uv_timer_init(s->loop, &c->timer);
  c->timer.data = c;
  c->parent = parent;
  c->xp = xp;
  s->nconns++;
  s->nstreams++;
  c->next = s->conns;
  if (s->conns) s->conns->prev = c;
  s->conns = c;
  c->rd_ready = 1;
  zv__http_start_reading(c);
  return c;
}

uint32_t zv__http_conn_close_idle(zv_http_server_t *s, uint64_t grace_ms) {
  zv_http_sconn_t *c, *next;
  /* Connections that go idle from now on wait no longer than the grace either. */
  if (grace_ms && s->opts.keepalive_timeout_ms > grace_ms) s->opts.keepalive_timeout_ms = grace_ms;
  for (c = s->conns; c; c = next) {
    next = c->next;
    if (c->parent) continue; /* a stream: its connection's transport decides */
    if (c->xp_hold) {
      /* The transport runs streams on it (HTTP/2): it says goodbye (GOAWAY), the streams in
       * flight finish, then it closes. */
      zv__http_conn_close_graceful(c);
      if (next && next->closing) next = s->conns; /* it closed streams of its own: again */
      continue;
    }
    if (c->core.state != ZV_HTTP_IDLE || zv_http_conn_pending(&c->core) || c->writes ||
        c->resp != ZV_HTTP_RESP_NONE || c->want_process)
      continue; /* busy: its response says Connection: close (s->stopping) */
    if (!grace_ms) {
      zv__http_conn_close_now(c);
    } else if (!c->shutting && !c->lingering) {
      /* Idle, or fresh with nothing received: the keep-alive timer (now at most the grace)
       * closes it quietly; a request that comes first is answered, then the connection closes.
       * Armed afresh, so a deadline already nearer is kept by the rule of zv__http_rearm. */
      uint64_t now = uv_now(s->loop), due = now + grace_ms;
      if (c->timer_mode != T_KEEPALIVE) zv__http_arm(c, T_KEEPALIVE);
      if (c->deadline > due) c->deadline = due;
      zv__http_rearm(c, now);
    }
  }
  return s->nlive;
}

int zv__http_conn_evict(zv_http_server_t *s) {
  if (!s->idle_head) return -1;
  s->evicted++;
  zv__http_conn_close_now(s->idle_head);
  return 0;
}

void zv__http_pool_free(zv_http_server_t *s) {
  while (s->free) {
    zv_http_sconn_t *c = s->free;
    s->free = c->next;
    zv_http_conn_free(&c->core);
    zv_http_buf_free(&c->head);
    zv_free(c);
  }
  s->nfree = 0;
}

