/*
 * stream.c: the HTTP/1.1 server's connections: timers, the connection pool, reading (recv(2)
 * from the server's edge-triggered epoll set), dispatching parsed requests, writing responses and
 * closing. server.c listens, accepts and runs the server's lifecycle; it hands each accepted
 * socket to zv__http_conn_accept (stream.h). This file never calls server.c: it reports a
 * connection that closed or went idle through s->on_conn_change.
 *
 * It must not call into Lua, and must not allocate per request in steady state: connections and
 * their buffers are reused, responses go out with one send(2) of head + body (a small body is
 * copied behind the head; a larger one goes as a second iovec of sendmsg(2)), and only the
 * part the kernel did not take is copied into a uv_write request.
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
 *
 * Static files (app:static, opts.statics): a GET or HEAD under a mount is answered here before
 * on_request when the file exists (anything else goes on to the application). The head goes
 * out with MSG_MORE, the body with sendfile(2) straight from the page cache; when the socket is
 * full the connection adds EPOLLOUT to its epfd entry and goes on when it drains, under the
 * same write deadline as queued writes (bytes sent by sendfile count as progress).
 */
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/zv.h"
#include "static.h"

enum { T_NONE, T_HEADER, T_BODY, T_KEEPALIVE, T_LINGER, T_HANDLER };

#define LINGER_MS 2000
#define MAX_PENDING (64u << 20) /* unsent bytes per connection before it is dropped */
#define POOL_MAX 64             /* closed connections kept for reuse */
#define STACK_HDRS 16
#define SMALL_BODY 1024          /* a body up to this size is copied behind the head: one send */
#define EVENTS_MAX 256          /* epoll events taken from epfd per epoll_wait */
#define READS_MAX 32            /* reads in a row on one connection before the others' turn */
typedef struct {
  uv_write_t req;
  size_t len;
  char data[];
} wreq_t;

static void conn_process(zv_http_sconn_t *c);
static void conn_close_now(zv_http_sconn_t *c);
static void conn_close_graceful(zv_http_sconn_t *c);

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

/* Formats the Date header when the wall-clock second changed; checked against the loop's cached
 * time, so a response costs no clock read. */
static const char *server_date(zv_http_server_t *s) {
  uint64_t now = uv_now(s->loop);
  if (now >= s->date_next) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    zv_http_date(ts.tv_sec, s->date);
    s->date_next = now + 1000 - (uint64_t)(ts.tv_nsec / 1000000);
  }
  return s->date;
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
 * Timers are lazy: arm() records a deadline and starts the uv timer only when it is not running
 * or would fire after the new deadline. A timer that fires early re-arms itself for the rest;
 * one that fires with nothing to wait for (T_NONE) just stops. A keep-alive connection thus
 * costs no timer operation per request.
 */
static void timer_start(zv_http_sconn_t *c, uint64_t now, uint64_t ms);

/* Starts the timer for the earliest of the mode's deadline and the write deadline, unless it
 * runs already and fires no later. */
static void rearm(zv_http_sconn_t *c, uint64_t now) {
  uint64_t due = UINT64_MAX;
  if (c->timer_mode != T_NONE) due = c->deadline;
  if ((c->writes || c->file_wait) && c->wdeadline < due) due = c->wdeadline;
  if (due == UINT64_MAX) return;
  if (uv_is_active((uv_handle_t *)&c->timer) && c->timer_due <= due) return;
  timer_start(c, now, due > now ? due - now : 0);
}

/* Bytes in the kernel's send queue of c (not yet acknowledged by the peer). */
static uint64_t kernel_outq(zv_http_sconn_t *c) {
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
  if ((c->writes || c->file_wait) && now >= c->wdeadline) {
    uint64_t done = c->queued - uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp);
    uint64_t outq = kernel_outq(c);
    int moved = done != c->wmark || outq < c->koutq;
    c->koutq = outq;
    if (!moved) {
      /* Nothing moved for write_timeout: drop the connection and what it queued. */
      s->write_timeouts++;
      conn_close_now(c);
      return;
    }
    c->wmark = done;
    c->wdeadline = now + s->opts.write_timeout_ms;
  }
  if (c->timer_mode == T_NONE || now < c->deadline) {
    rearm(c, now);
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
    conn_close_now(c);
    return;
  } else if (c->core.state == ZV_HTTP_HEAD || c->core.state == ZV_HTTP_BODY) {
    body = zv_http_error_body(408);
    c->core.state = ZV_HTTP_ERROR;
    c->resp = ZV_HTTP_RESP_NONE;
    c->must_close = 1;
    c->is_head = 0;
    zv_http_respond(c, 408, hdrs, 1, body, strlen(body));
  }
  if (!c->closing) rearm(c, uv_now(s->loop));
}

static void timer_start(zv_http_sconn_t *c, uint64_t now, uint64_t ms) {
  c->timer_due = now + ms;
  uv_timer_start(&c->timer, timer_cb, ms, 0);
}

static void arm(zv_http_sconn_t *c, int mode) {
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
    timer_start(c, now, ms);
}

/* Arms the timer for what the parser waits for now. */
static void arm_for_state(zv_http_sconn_t *c) {
  switch (c->core.state) {
  case ZV_HTTP_IDLE: arm(c, c->fresh ? T_HEADER : T_KEEPALIVE); break;
  case ZV_HTTP_HEAD: arm(c, T_HEADER); break;
  case ZV_HTTP_BODY: arm(c, T_BODY); break;
  default: arm(c, T_NONE); break;
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
  conn_release(s, c);
  s->on_conn_change(s);
}

static void unlink_ready(zv_http_sconn_t *c) {
  zv_http_sconn_t **pp = &c->srv->ready;
  if (!c->ready) return;
  while (*pp && *pp != c) pp = &(*pp)->ready_next;
  if (*pp) *pp = c->ready_next;
  c->ready = 0;
  c->want_process = c->want_read = 0;
}

/* Closes c's handles now; its memory goes back to the pool in the close callbacks. */
static void conn_close_now(zv_http_sconn_t *c) {
  zv_http_server_t *s = c->srv;
  if (c->closing) return;
  c->closing = 1;
  s->nlive--;
  unlink_ready(c);
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
  c->nclose = 2;
  uv_close((uv_handle_t *)&c->tcp, conn_closed);
  uv_close((uv_handle_t *)&c->timer, conn_closed);
}

void zv_http_abort(zv_http_sconn_t *c) {
  conn_close_now(c);
}

/* --- connections: writing ------------------------------------------------------------------ */

static void write_cb(uv_write_t *req, int status);

/* What uv_try_write does, without the VFS write path: send(2) for one buffer, sendmsg(2) for
 * more. Only while no uv_write is queued (the caller checks). Bytes sent, or a libuv error. */
static int try_send(zv_http_sconn_t *c, uv_buf_t *bufs, unsigned n) {
  ssize_t r;
  do {
    if (n == 1) {
      r = send(c->fd, bufs[0].base, bufs[0].len,
               MSG_NOSIGNAL | MSG_DONTWAIT | (c->file_fd >= 0 ? MSG_MORE : 0));
    } else {
      struct iovec iov[4];
      struct msghdr m;
      if (n > 4) return uv_try_write((uv_stream_t *)&c->tcp, bufs, n);
      for (unsigned i = 0; i < n; i++) {
        iov[i].iov_base = bufs[i].base;
        iov[i].iov_len = bufs[i].len;
      }
      memset(&m, 0, sizeof m);
      m.msg_iov = iov;
      m.msg_iovlen = n;
      r = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  } while (r < 0 && errno == EINTR);
  if (r >= 0) return (int)r;
  return errno == EWOULDBLOCK ? UV_EAGAIN : uv_translate_sys_error(errno);
}

/* Sends bufs as they are (raw: below the transport, if any). */
static int conn_send(zv_http_sconn_t *c, uv_buf_t *bufs, unsigned n) {
  size_t total = 0, skip, len;
  wreq_t *w;
  uv_buf_t b;
  int r;
  for (unsigned i = 0; i < n; i++) total += bufs[i].len;
  if (total == 0) return 0;
  if (c->writes == 0) {
    r = c->fd >= 0 ? try_send(c, bufs, n) : UV_EBADF;
    if (r >= 0 && (size_t)r == total) return 0;
    if (r < 0 && r != UV_EAGAIN) {
      conn_close_now(c);
      return ZV_EIO;
    }
    skip = r < 0 ? 0 : (size_t)r;
  } else {
    skip = 0;
  }
  len = total - skip;
  if (c->writes == 0) {
    /* The write deadline starts with the first queued write (see the file comment). */
    uint64_t now = uv_now(c->srv->loop);
    c->wmark = c->queued;
    c->koutq = kernel_outq(c);
    c->wdeadline = now + c->srv->opts.write_timeout_ms;
    if (!uv_is_active((uv_handle_t *)&c->timer) || c->timer_due > c->wdeadline)
      timer_start(c, now, c->srv->opts.write_timeout_ms);
  }
  if (c->pending + len > MAX_PENDING) {
    conn_close_now(c);
    return ZV_EIO;
  }
  w = zv_alloc(sizeof *w + len);
  if (!w) {
    conn_close_now(c);
    return ZV_EIO;
  }
  w->len = len;
  len = 0;
  for (unsigned i = 0; i < n; i++) {
    size_t bl = bufs[i].len;
    if (skip >= bl) {
      skip -= bl;
      continue;
    }
    memcpy(w->data + len, bufs[i].base + skip, bl - skip);
    len += bl - skip;
    skip = 0;
  }
  b = uv_buf_init(w->data, (unsigned)w->len);
  if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, write_cb)) {
    zv_free(w);
    conn_close_now(c);
    return ZV_EIO;
  }
  c->writes++;
  c->pending += w->len;
  c->queued += w->len;
  c->srv->pending += w->len;
  return 0;
}

int zv__http_conn_send(zv_http_sconn_t *c, const uv_buf_t *bufs, unsigned n) {
  return conn_send(c, (uv_buf_t *)bufs, n); /* try_send and uv_write only read the buffers */
}

/* Sends bufs through the transport when there is one (xport.h). */
static int conn_write(zv_http_sconn_t *c, uv_buf_t *bufs, unsigned n) {
  if (c->xp) return c->srv->opts.xport->write(c, c->xp, bufs, n);
  return conn_send(c, bufs, n);
}

static void next_request(zv_http_sconn_t *c);
static void file_continue(zv_http_sconn_t *c);

static void write_cb(uv_write_t *req, int status) {
  wreq_t *w = ZV_CONTAINER_OF(req, wreq_t, req);
  zv_http_sconn_t *c = req->handle->data;
  c->writes--;
  c->pending -= w->len;
  c->srv->pending -= w->len;
  zv_free(w);
  if (c->closing) return;
  if (status < 0) {
    conn_close_now(c);
    return;
  }
  /* Progress: the write deadline starts again. */
  c->wdeadline = uv_now(c->srv->loop) + c->srv->opts.write_timeout_ms;
  /* A streamed response waits for its queue to shrink (back-pressure): tell the owner. */
  if (c->want_writable && c->pending <= c->low_water && c->resp == ZV_HTTP_RESP_STREAM) {
    c->want_writable = 0;
    if (c->srv->cb.on_writable) c->srv->cb.on_writable(c->srv, c);
    return;
  }
  /* A static file's head is out: its body follows. */
  if (c->writes == 0 && c->file_fd >= 0 && !c->file_wait) {
    file_continue(c);
    return;
  }
  if (c->writes == 0 && c->resp == ZV_HTTP_RESP_DONE && !c->must_close && !c->in_dispatch)
    next_request(c);
}

/* --- connections: reading and dispatch ----------------------------------------------------- */

static void idle_cb(uv_idle_t *h);

/* Puts c on the server's list for the idle callback (see want_process and want_read). */
static void enqueue(zv_http_sconn_t *c) {
  zv_http_server_t *s = c->srv;
  if (c->ready || c->closing) return;
  c->ready = 1;
  c->ready_next = s->ready;
  s->ready = c;
  uv_idle_start(&s->idle, idle_cb);
}

/*
 * Reads while the socket may hold bytes and the connection wants them. Edge-triggered: epfd
 * reports a socket again only when new bytes (or EOF) arrive, so a read that filled the space
 * given leaves rd_ready set, and a shorter one means the socket is empty (unless the peer shut
 * down: then it reads on to the end, which recv reports as 0). After READS_MAX reads in a row
 * it goes on from the idle callback, so that one busy client does not hold up the others.
 */
static void conn_readable(zv_http_sconn_t *c) {
  int reads = 0;
  if (c->in_read) return;
  c->in_read = 1;
  while (c->reading && c->rd_ready && !c->closing) {
    char *p;
    size_t n;
    ssize_t r;
    if (reads++ == READS_MAX) {
      c->want_read = 1;
      enqueue(c);
      break;
    }
    if (c->lingering) {
      p = c->core.buf;
      n = c->core.cap;
    } else if (c->upgraded) {
      /* Another protocol's bytes (zv_http_upgrade): appended after what its owner has not
       * consumed yet; the buffer grows up to up_cap, then reading waits for a consume. */
      if (c->core.len == c->core.cap) {
        size_t ncap = c->core.cap * 2 < c->up_cap ? c->core.cap * 2 : c->up_cap;
        char *nb = ncap > c->core.cap ? zv_realloc(c->core.buf, ncap) : NULL;
        if (!nb) {
          c->reading = 0;
          break;
        }
        c->core.buf = nb;
        c->core.cap = ncap;
      }
      p = c->core.buf + c->core.len;
      n = c->core.cap - c->core.len;
    } else if (zv_http_conn_space(&c->core, &p, &n) || n == 0) {
      /* No room now (a request waits for its answer, or the input reached its limit): the
       * bytes stay in the socket until start_reading asks again. */
      c->reading = 0;
      break;
    }
    r = c->xp ? c->srv->opts.xport->read(c, c->xp, p, n) : recv(c->fd, p, n, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        c->rd_ready = 0;
        break;
      }
      conn_close_now(c);
      break;
    }
    if (r == 0) {
      /* EOF: the client is gone, even if a request still waits for its answer. */
      conn_close_now(c);
      break;
    }
    if ((size_t)r < n && !c->rd_eof && !c->xp) c->rd_ready = 0;
    if (c->lingering || c->shutting) continue;
    if (c->upgraded) {
      c->core.len += (size_t)r;
      if (c->srv->cb.on_upgraded_data) {
        /* Corked: what the owner writes while it handles these bytes (an echo per message)
         * collects in c->head and goes out in one send when it is done. */
        c->corked = 1;
        c->srv->cb.on_upgraded_data(c->srv, c);
        c->corked = 0;
        if (c->head.len && !c->closing && !c->shutting) {
          uv_buf_t b = uv_buf_init(c->head.p, (unsigned)c->head.len);
          c->head.len = 0;
          if (conn_write(c, &b, 1)) break;
        }
        c->head.len = 0;
      }
      continue;
    }
    zv_http_conn_commit(&c->core, (size_t)r);
    if (c->core.state == ZV_HTTP_DONE) continue;
    conn_process(c);
  }
  c->in_read = 0;
}

/* epfd has events: take them and read the sockets they name. */
void zv__http_events_cb(uv_poll_t *h, int status, int events) {
  zv_http_server_t *s = h->data;
  struct epoll_event ev[EVENTS_MAX];
  int n;
  (void)status;
  (void)events;
  do {
    n = epoll_wait(s->epfd, ev, EVENTS_MAX, 0);
    for (int i = 0; i < n; i++) {
      zv_http_sconn_t *c = ev[i].data.ptr;
      uint32_t e = ev[i].events;
      if (c->closing) continue;
      if ((e & (EPOLLOUT | EPOLLHUP | EPOLLERR)) && c->file_wait) {
        file_continue(c);
        if (c->closing) continue;
      }
      if (!(e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) continue;
      c->rd_ready = 1;
      if (e & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) c->rd_eof = 1;
      conn_readable(c);
    }
  } while (n == EVENTS_MAX);
}

/* The connection wants bytes again; reads what the socket already holds from the idle
 * callback, never from the caller's stack (it may be inside zv_http_respond). */
static void start_reading(zv_http_sconn_t *c) {
  if (c->reading || c->closing) return;
  c->reading = 1;
  if (c->rd_ready) {
    c->want_read = 1;
    enqueue(c);
  }
}

static void send_error(zv_http_sconn_t *c, int status) {
  zv_http_str_t hdrs[2] = {{"Content-Type", 12}, {"application/json", 16}};
  const char *body = zv_http_error_body(status);
  c->resp = ZV_HTTP_RESP_NONE;
  c->must_close = 1;
  c->is_head = 0;
  zv_http_respond(c, status, hdrs, 1, body, strlen(body));
}

/* The connection's next pipelined request is buffered: parse it from the idle callback. */
static void schedule(zv_http_sconn_t *c) {
  if (c->closing) return;
  c->want_process = 1;
  enqueue(c);
}

/* The response is complete and flushed: go on with the next request on this connection. */
static void next_request(zv_http_sconn_t *c) {
  zv_http_conn_next(&c->core);
  c->resp = ZV_HTTP_RESP_NONE;
  c->fresh = 0;
  if (zv_http_conn_pending(&c->core)) {
    schedule(c);
  } else {
    if (c->srv->draining) {
      conn_close_now(c);
      return;
    }
    arm(c, T_KEEPALIVE);
    /* A connection waits in the listener: this idle one may make room for it. */
    if (c->srv->paused) c->srv->on_conn_change(c->srv);
  }
  if (!c->closing) start_reading(c);
}

static int serve_static(zv_http_sconn_t *c);

static void conn_process(zv_http_sconn_t *c) {
  static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
  zv_http_server_t *s = c->srv;
  c->in_dispatch = 1;
  while (!c->closing) {
    int ev = zv_http_conn_parse(&c->core);
    if (ev == ZV_HTTP_NEED_MORE) {
      if (c->core.state != ZV_HTTP_IDLE) c->fresh = 0;
      arm_for_state(c);
      break;
    }
    if (ev == ZV_HTTP_CONTINUE) {
      uv_buf_t b = uv_buf_init((char *)cont, sizeof cont - 1);
      conn_write(c, &b, 1);
      continue;
    }
    if (ev == ZV_HTTP_FAIL) {
      arm(c, T_NONE);
      send_error(c, c->core.status);
      break;
    }
    /* A complete request. */
    arm(c, T_NONE);
    s->requests++;
    c->resp = ZV_HTTP_RESP_NONE;
    c->is_head = (uint8_t)zv_http_conn_is_head(&c->core);
    c->must_close = (uint8_t)!c->core.keep_alive;
    c->stream_raw = c->want_writable = 0;
    c->handler_ms = 0;
    if (!s->opts.statics || !serve_static(c)) s->cb.on_request(s, c);
    if (c->resp == ZV_HTTP_RESP_NONE && !c->closing &&
        (c->handler_ms || s->opts.handler_timeout_ms))
      arm(c, T_HANDLER);
    if (c->closing || c->resp != ZV_HTTP_RESP_DONE || c->writes || c->shutting) break;
    zv_http_conn_next(&c->core);
    c->resp = ZV_HTTP_RESP_NONE;
    c->fresh = 0;
    if (s->draining && !zv_http_conn_pending(&c->core)) {
      conn_close_now(c);
      break;
    }
  }
  c->in_dispatch = 0;
  if (!c->closing && !c->shutting && c->core.state != ZV_HTTP_ERROR) start_reading(c);
}

static void idle_cb(uv_idle_t *h) {
  zv_http_server_t *s = h->data;
  /* Connections enqueued from here wait for the next turn, as a list of their own. */
  zv_http_sconn_t *list = s->ready;
  s->ready = NULL;
  while (list) {
    zv_http_sconn_t *c = list;
    int process = c->want_process, read = c->want_read;
    list = c->ready_next;
    c->ready = 0;
    c->want_process = c->want_read = 0;
    if (!c->closing && process) conn_process(c);
    if (!c->closing && read) conn_readable(c);
  }
  if (!s->ready) uv_idle_stop(h);
}

/* --- graceful close ------------------------------------------------------------------------ */

static void shutdown_cb(uv_shutdown_t *req, int status) {
  zv_http_sconn_t *c = req->data;
  if (c->closing) return;
  if (status < 0) {
    conn_close_now(c);
    return;
  }
  /* Read and drop what the client still sends until it closes, for a moment at most. */
  c->lingering = 1;
  c->core.len = c->core.pos = 0;
  arm(c, T_LINGER);
  start_reading(c);
}

/* Sends FIN after the queued writes, then lingers; used after a final response. */
static void conn_close_graceful(zv_http_sconn_t *c) {
  if (c->closing || c->shutting) return;
  c->shutting = 1;
  c->shutdown.data = c;
  arm(c, T_NONE);
  if (c->xp) {
    c->srv->opts.xport->shutdown(c, c->xp);
    if (c->closing) return;
  }
  if (uv_shutdown(&c->shutdown, (uv_stream_t *)&c->tcp, shutdown_cb)) conn_close_now(c);
}

/* --- responses ----------------------------------------------------------------------------- */

/* Builds the head into c->head; returns 0 or ZV_EINVAL (a malformed header). */
static int build_head(zv_http_sconn_t *c, int status, const zv_http_str_t *hdrs, size_t nhdrs,
                      int64_t content_length, int chunked) {
  zv_http_server_t *s = c->srv;
  zv_http_head_t h;
  int has_date = 0, has_server = 0;
  zv_http_head_begin(&c->head, status);
  for (size_t i = 0; i < nhdrs; i++) {
    const zv_http_str_t *name = &hdrs[2 * i], *value = &hdrs[2 * i + 1];
    zv_http_hdrinfo_t info;
    if (zv_http_check_header(name->p, name->n, value->p, value->n, &info)) return ZV_EINVAL;
    if (info.is_close) c->must_close = 1;
    has_date |= info.is_date;
    has_server |= info.is_server;
    if (!info.skip) zv_http_head_add(&c->head, name->p, name->n, value->p, value->n);
  }
  if (s->draining || s->torn_down) c->must_close = 1;
  h.status = status;
  h.content_length = content_length;
  h.chunked = chunked;
  h.close = c->must_close;
  h.date = has_date ? NULL : server_date(s);
  zv_http_head_end(&c->head, &h, !has_server);
  return c->head.err ? ZV_ENOMEM : 0;
}

/* After the last byte of a response was handed to libuv. */
static void response_done(zv_http_sconn_t *c) {
  c->resp = ZV_HTTP_RESP_DONE;
  if (c->closing) return;
  if (c->must_close) {
    conn_close_graceful(c);
    return;
  }
  if (c->in_dispatch || c->writes) return;
  next_request(c);
}

int zv_http_respond(zv_http_sconn_t *c, int status, const zv_http_str_t *hdrs, size_t nhdrs,
                    const char *body, size_t len) {
  uv_buf_t bufs[2];
  unsigned n = 1;
  int no_body = status < 200 || status == 204 || status == 304;
  int rc;
  if (c->closing || c->shutting) return ZV_EIO;
  rc = build_head(c, status, hdrs, nhdrs, no_body ? -1 : (int64_t)len, 0);
  if (rc == ZV_EINVAL) return rc;
  if (rc) {
    conn_close_now(c);
    return ZV_EIO;
  }
  if (!no_body && !c->is_head && len) {
    /* The head buffer grows once to hold a small body too; if it cannot, two iovecs. */
    if (len <= SMALL_BODY) zv_http_buf_add(&c->head, body, len);
    if (len > SMALL_BODY || c->head.err) {
      c->head.err = 0;
      bufs[n++] = uv_buf_init((char *)body, (unsigned)len);
    }
  }
  bufs[0] = uv_buf_init(c->head.p, (unsigned)c->head.len);
  if (conn_write(c, bufs, n)) return ZV_EIO;
  response_done(c);
  return 0;
}

/* The head of a streamed response: chunked (length < 0, HTTP/1.1), close-delimited (length < 0,
 * HTTP/1.0) or with a Content-Length the caller promises to write exactly (raw bytes follow). */
static int write_head(zv_http_sconn_t *c, int status, const zv_http_str_t *hdrs, size_t nhdrs,
                      int64_t length) {
  uv_buf_t b;
  int rc, raw, nb = status < 200 || status == 204 || status == 304;
  if (c->closing || c->shutting) return ZV_EIO;
  c->no_body = (uint8_t)(nb || c->is_head);
  /* HTTP/1.0 has no chunked coding: the body ends when the connection does. */
  raw = length >= 0 || c->core.parser.http_minor == 0;
  if (raw && length < 0) c->must_close = 1;
  rc = build_head(c, status, hdrs, nhdrs, nb ? -1 : length, !raw && !nb);
  if (rc == ZV_EINVAL) return rc;
  if (rc) {
    conn_close_now(c);
    return ZV_EIO;
  }
  c->stream_raw = (uint8_t)raw;
  b = uv_buf_init(c->head.p, (unsigned)c->head.len);
  if (conn_write(c, &b, 1)) return ZV_EIO;
  c->resp = ZV_HTTP_RESP_STREAM;
  return 0;
}

int zv_http_write_head(zv_http_sconn_t *c, int status, const zv_http_str_t *hdrs,
                       size_t nhdrs) {
  return write_head(c, status, hdrs, nhdrs, -1);
}

int zv_http_write_head_len(zv_http_sconn_t *c, int status, const zv_http_str_t *hdrs,
                           size_t nhdrs, uint64_t length) {
  return write_head(c, status, hdrs, nhdrs, (int64_t)length);
}

int zv_http_upgrade(zv_http_sconn_t *c, const char *head, size_t len, size_t max_buffer) {
  size_t rest;
  uv_buf_t b = uv_buf_init((char *)head, (unsigned)len);
  if (c->closing || c->shutting || c->resp != ZV_HTTP_RESP_NONE) return ZV_EIO;
  if (conn_write(c, &b, 1)) return ZV_EIO;
  /* What the client sent after the request is already the new protocol's. */
  rest = c->core.len - c->core.pos;
  if (rest && c->core.pos) memmove(c->core.buf, c->core.buf + c->core.pos, rest);
  c->core.len = rest;
  c->core.pos = 0;
  c->up_cap = max_buffer > c->core.cap ? max_buffer : c->core.cap;
  c->upgraded = 1;
  c->head.len = 0;
  c->resp = ZV_HTTP_RESP_STREAM;
  c->stream_raw = 1;
  c->no_body = 0;
  c->must_close = 1;
  arm(c, T_NONE);
  c->reading = 0;
  c->rd_ready = 1; /* bytes may wait in the socket: look once */
  start_reading(c);
  return 0;
}

void zv_http_upgraded_consume(zv_http_sconn_t *c, size_t n) {
  if (n > c->core.len) n = c->core.len;
  if (n < c->core.len) memmove(c->core.buf, c->core.buf + n, c->core.len - n);
  c->core.len -= n;
  if (!c->closing && !c->shutting && !c->reading) start_reading(c);
}

void zv_http_want_writable(zv_http_sconn_t *c, size_t low) {
  c->low_water = low;
  c->want_writable = 1;
}

int zv_http_write(zv_http_sconn_t *c, const char *chunk, size_t len) {
  char hex[24];
  uv_buf_t bufs[3];
  int n = 0;
  if (c->closing || c->shutting) return ZV_EIO;
  if (len == 0 || c->no_body) return 0;
  if (c->corked) {
    /* Upgraded and inside on_upgraded_data: collected, sent when it returns (conn_readable). */
    zv_http_buf_add(&c->head, chunk, len);
    if (!c->head.err) return 0;
    c->head.err = 0;
    conn_close_now(c);
    return ZV_EIO;
  }
  if (c->stream_raw) {
    bufs[0] = uv_buf_init((char *)chunk, (unsigned)len);
    return conn_write(c, bufs, 1) ? ZV_EIO : 0;
  }
  {
    size_t v = len;
    char *e = hex + sizeof hex - 2, *p = e;
    do {
      *--p = "0123456789abcdef"[v & 15];
      v >>= 4;
    } while (v);
    e[0] = '\r';
    e[1] = '\n';
    n = (int)(e + 2 - p);
    bufs[0] = uv_buf_init(p, (unsigned)n);
  }
  bufs[1] = uv_buf_init((char *)chunk, (unsigned)len);
  bufs[2] = uv_buf_init((char *)"\r\n", 2);
  return conn_write(c, bufs, 3) ? ZV_EIO : 0;
}

int zv_http_finish(zv_http_sconn_t *c) {
  uv_buf_t b = uv_buf_init((char *)"0\r\n\r\n", 5);
  if (c->closing || c->shutting) return ZV_EIO;
  if (c->corked && c->head.len) {
    /* What was collected goes before the end (conn_readable would drop it after a FIN). */
    uv_buf_t cb = uv_buf_init(c->head.p, (unsigned)c->head.len);
    c->head.len = 0;
    if (conn_write(c, &cb, 1)) return ZV_EIO;
  }
  if (!c->no_body && !c->stream_raw && conn_write(c, &b, 1)) return ZV_EIO;
  response_done(c);
  return 0;
}

int zv_http_peer(zv_http_sconn_t *c, char *buf, size_t cap, int *port) {
  struct sockaddr_storage ss;
  int len = sizeof ss;
  if (c->closing) return ZV_EIO;
  if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len)) return ZV_EIO;
  if (ss.ss_family == AF_INET6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    if (uv_ip6_name(a, buf, cap)) return ZV_EIO;
    *port = ntohs(a->sin6_port);
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    if (uv_ip4_name(a, buf, cap)) return ZV_EIO;
    *port = ntohs(a->sin_port);
  }
  return 0;
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
    conn_close_now(c);
    return 0;
  }
  {
    uv_os_fd_t fd;
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = c;
    if (uv_fileno((uv_handle_t *)&c->tcp, &fd) || epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
      conn_close_now(c);
      return 0;
    }
    c->fd = fd;
  }
  if (s->opts.xport && !(c->xp = s->opts.xport->open(s->opts.xport_ctx, c))) {
    conn_close_now(c);
    return 0;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  arm(c, T_HEADER);
  /* Bytes that came with the connection are reported by epfd at once (the add polls). */
  start_reading(c);
  return 0;
}

void zv__http_conn_close_now(zv_http_sconn_t *c) {
  conn_close_now(c);
}

uint32_t zv__http_conn_close_idle(zv_http_server_t *s) {
  zv_http_sconn_t *c, *next;
  for (c = s->conns; c; c = next) {
    next = c->next;
    if (c->core.state == ZV_HTTP_IDLE && !zv_http_conn_pending(&c->core) && !c->writes &&
        c->resp == ZV_HTTP_RESP_NONE && !c->want_process)
      conn_close_now(c);
  }
  return s->nlive;
}

int zv__http_conn_evict(zv_http_server_t *s) {
  if (!s->idle_head) return -1;
  s->evicted++;
  conn_close_now(s->idle_head);
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

/* --- static files ---------------------------------------------------------------------------- */

#define FILE_CHUNK (2u << 20)   /* bytes per sendfile(2) call (nginx: sendfile_max_chunk 2m) */
#define FILE_SMALL (16u << 10)  /* a body up to this size is read and sent with the head */

/* Sets whether c's epfd entry asks for EPOLLOUT (a static body waits for room). */
static int want_out(zv_http_sconn_t *c, int on) {
  struct epoll_event ev;
  memset(&ev, 0, sizeof ev);
  ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET | (on ? EPOLLOUT : 0);
  ev.data.ptr = c;
  return epoll_ctl(c->srv->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Through a transport (TLS) there is no sendfile: the file is read in chunks and written while
 * the kernel takes them all; once a write is queued, write_cb comes back here when it is out. */
static void file_continue_xp(zv_http_sconn_t *c) {
  char buf[32u << 10];
  while (c->file_off < c->file_end && c->writes == 0) {
    uint64_t left = c->file_end - c->file_off;
    ssize_t got = pread(c->file_fd, buf, left < sizeof buf ? (size_t)left : sizeof buf,
                        (off_t)c->file_off);
    uv_buf_t b;
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) { /* an error, or the file shrank: the announced length cannot be kept */
      conn_close_now(c);
      return;
    }
    c->file_off += (uint64_t)got;
    b = uv_buf_init(buf, (unsigned)got);
    if (conn_write(c, &b, 1)) return; /* closed (and the file with it) */
  }
  if (c->file_off < c->file_end) return;
  close(c->file_fd);
  c->file_fd = -1;
  response_done(c);
}

/* Sends what is left of the static file with sendfile(2) until it is all out (the response is
 * then done), the socket is full (wait for EPOLLOUT), or something fails (close: the head
 * announced a length that can no longer be kept). */
static void file_continue(zv_http_sconn_t *c) {
  zv_http_server_t *s = c->srv;
  if (c->xp) {
    file_continue_xp(c);
    return;
  }
  while (c->file_off < c->file_end) {
    off_t off = (off_t)c->file_off;
    uint64_t left = c->file_end - c->file_off;
    ssize_t n = sendfile(c->fd, c->file_fd, &off, left > FILE_CHUNK ? FILE_CHUNK : left);
    if (n > 0) {
      c->file_off += (uint64_t)n;
      c->queued += (uint64_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      uint64_t now = uv_now(s->loop);
      if (!c->file_wait) {
        if (want_out(c, 1)) break;
        c->file_wait = 1;
        c->wmark = c->queued;
        c->koutq = kernel_outq(c);
      }
      /* Each wait starts the write deadline again: the bytes just sent were progress. */
      c->wdeadline = now + s->opts.write_timeout_ms;
      rearm(c, now);
      return;
    }
    /* An error, or the file shrank under us (0 bytes before its end). */
    break;
  }
  if (c->file_off < c->file_end) {
    conn_close_now(c);
    return;
  }
  close(c->file_fd);
  c->file_fd = -1;
  if (c->file_wait) {
    c->file_wait = 0;
    if (want_out(c, 0)) {
      conn_close_now(c);
      return;
    }
  }
  response_done(c);
}

/* The value of header name in c's request, or NULL (*len 0). */
static const char *req_header(zv_http_sconn_t *c, const char *name, size_t nlen, size_t *len) {
  uint32_t from = 0;
  int i = zv_http_conn_header(&c->core, name, nlen, &from);
  if (i < 0) {
    *len = 0;
    return NULL;
  }
  *len = c->core.headers[i].value_len;
  return c->core.buf + c->core.headers[i].value_off;
}

/* Opens the precompressed sibling of name (".br" or ".gz") when the client accepts its coding;
 * returns its descriptor (and fills *st and *coding) or -1. Brotli wins a tie. */
static int open_sibling(zv_http_sconn_t *c, const zv_static_mount_t *m, char *name, size_t nlen,
                        struct stat *st, const char **coding) {
  static const char *const ext[2] = {".br", ".gz"}, *const cod[2] = {"br", "gzip"};
  size_t alen;
  const char *ae = req_header(c, "accept-encoding", 15, &alen);
  int q[2], order[2] = {0, 1};
  if (!ae) return -1;
  q[0] = zv_static_accept_q(ae, alen, "br");
  q[1] = zv_static_accept_q(ae, alen, "gzip");
  if (q[1] > q[0]) order[0] = 1, order[1] = 0;
  for (int k = 0; k < 2; k++) {
    int i = order[k], fd;
    if (q[i] <= 0) continue;
    memcpy(name + nlen, ext[i], 4);
    fd = zv_static_open(m, name);
    name[nlen] = 0;
    if (fd < 0) continue;
    if (fstat(fd, st) || !S_ISREG(st->st_mode)) {
      close(fd);
      continue;
    }
    *coding = cod[i];
    return fd;
  }
  return -1;
}

/* 301 to the request's path with a "/" added (the query kept). */
static int redirect_slash(zv_http_sconn_t *c) {
  const zv_http_conn_t *core = &c->core;
  char loc[ZV_STATIC_PATH_MAX * 3 + 8];
  size_t n = core->url_len;
  zv_http_str_t hdrs[4] = {{"Location", 8}, {loc, 0}, {"Content-Type", 12},
                           {"text/plain; charset=utf-8", 25}};
  if (core->url_len + 2 > sizeof loc) return 0;
  memcpy(loc, core->buf + core->url_off, core->path_len);
  loc[core->path_len] = '/';
  memcpy(loc + core->path_len + 1, core->buf + core->url_off + core->path_len,
         n - core->path_len);
  hdrs[1].n = n + 1;
  zv_http_respond(c, 301, hdrs, 2, "", 0);
  return 1;
}

/*
 * Answers c's request from a static mount when it is a GET or HEAD of a regular file under
 * one; returns 1 when answered (or the connection closed trying), 0 to let the application
 * answer (no mount, a name never served, no such file, a folder without an index file).
 */
static int serve_static(zv_http_sconn_t *c) {
  zv_http_conn_t *core = &c->core;
  const zv_static_mount_t *m;
  const char *path = core->buf + core->url_off, *type, *coding = NULL, *v;
  char name[ZV_STATIC_PATH_MAX + 8], etag[48], lastmod[32], crange[80];
  zv_http_str_t hdrs[20];
  size_t rest, nlen, vlen, nh = 0;
  struct stat st;
  int dir, fd, status = 200, not_modified = 0;
  uint64_t off = 0, cnt;
  int method = core->parser.method;
  uv_buf_t b;
  if (method != ZV_HTTP_M_GET && method != ZV_HTTP_M_HEAD) return 0;
  m = zv_static_find(c->srv->opts.statics, path, core->path_len, &rest);
  if (!m) return 0;
  /* name has room for the index file or a ".br" suffix beyond ZV_STATIC_PATH_MAX - 64. */
  if (zv_static_clean(path + rest, core->path_len - rest, name, ZV_STATIC_PATH_MAX - 64, &nlen,
                      &dir))
    return 0;
  if (dir) {
    size_t il;
    if (!m->index) return 0;
    if (rest == core->path_len) { /* the bare prefix "/assets": its folder, with a "/" */
      nlen = 0;
      name[0] = 0;
      dir = 0;
      goto open_file;
    }
    il = strlen(m->index);
    if (nlen + 1 + il + 4 > sizeof name) return 0;
    if (nlen) name[nlen++] = '/';
    memcpy(name + nlen, m->index, il + 1);
    nlen += il;
  }
open_file:
  fd = zv_static_open(m, name);
  if (fd < 0) return 0;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
    int folder = !dir && S_ISDIR(st.st_mode) && m->index;
    close(fd);
    /* A folder asked for without its "/" (or the bare prefix): 301 to the path with it, so
     * that the index file's relative links resolve, when the folder has an index file. */
    if (folder) {
      size_t il = strlen(m->index);
      if (nlen + 1 + il + 1 > sizeof name) return 0;
      if (nlen) name[nlen++] = '/';
      memcpy(name + nlen, m->index, il + 1);
      fd = zv_static_open(m, name);
      if (fd < 0) return 0;
      close(fd);
      return redirect_slash(c);
    }
    return 0;
  }
  type = zv_static_mime(name, nlen);
  if (m->precompressed && !zv_static_compressed_type(type)) {
    struct stat zst;
    int zfd = open_sibling(c, m, name, nlen, &zst, &coding);
    if (zfd >= 0) {
      close(fd);
      fd = zfd;
      st = zst;
    }
  }
  zv_static_etag((int64_t)st.st_mtime, (uint64_t)st.st_size, etag);
  zv_http_date((int64_t)st.st_mtime, lastmod);
  cnt = (uint64_t)st.st_size;
  /* RFC 9110 §13.2.2: If-None-Match first; If-Modified-Since only without it. */
  if ((v = req_header(c, "if-none-match", 13, &vlen))) {
    not_modified = zv_static_etag_match(v, vlen, etag, strlen(etag));
  } else if ((v = req_header(c, "if-modified-since", 17, &vlen))) {
    int64_t since;
    not_modified = !zv_static_parse_date(v, vlen, &since) && (int64_t)st.st_mtime <= since;
  }
  if (not_modified) {
    status = 304;
  } else if ((v = req_header(c, "range", 5, &vlen))) {
    size_t irl;
    const char *ir = req_header(c, "if-range", 8, &irl);
    /* If-Range: the range holds only for the same representation (a strong ETag or the exact
     * Last-Modified date); otherwise the whole file goes out. */
    int honour = !ir || (irl == strlen(etag) && !memcmp(ir, etag, irl)) ||
                 (irl == 29 && !memcmp(ir, lastmod, 29));
    if (honour) {
      int r = zv_static_range(v, vlen, (uint64_t)st.st_size, &off, &cnt);
      if (r == ZV_STATIC_RANGE_ONE) {
        status = 206;
        snprintf(crange, sizeof crange, "bytes %llu-%llu/%llu", (unsigned long long)off,
                 (unsigned long long)(off + cnt - 1), (unsigned long long)st.st_size);
      } else if (r == ZV_STATIC_RANGE_UNSAT) {
        status = 416;
        cnt = 0;
        snprintf(crange, sizeof crange, "bytes */%llu", (unsigned long long)st.st_size);
      }
    }
  }
#define H(k, val) (hdrs[nh].p = (k), hdrs[nh].n = strlen(k), hdrs[nh + 1].p = (val), \
                   hdrs[nh + 1].n = strlen(val), nh += 2)
  if (status != 304 && status != 416) H("Content-Type", type);
  if (status == 416) H("Content-Type", "text/plain; charset=utf-8");
  H("ETag", etag);
  H("Last-Modified", lastmod);
  if (m->cache_control[0]) H("Cache-Control", m->cache_control);
  if (status != 304) H("Accept-Ranges", "bytes");
  if (coding) H("Content-Encoding", coding);
  if (m->precompressed && !zv_static_compressed_type(type)) H("Vary", "Accept-Encoding");
  if (status == 206 || status == 416) H("Content-Range", crange);
#undef H
  if (build_head(c, status, hdrs, nh / 2, status == 304 ? -1 : (int64_t)cnt, 0)) {
    close(fd);
    conn_close_now(c);
    return 1;
  }
  b = uv_buf_init(c->head.p, (unsigned)c->head.len);
  if (status == 304 || status == 416 || c->is_head || cnt == 0) {
    close(fd);
    if (conn_write(c, &b, 1) == 0) response_done(c);
    return 1;
  }
  if (cnt <= FILE_SMALL) {
    /* One pread and one send(2) of head + body: for a small file that costs less than a
     * MSG_MORE send followed by sendfile (bench/http/static.sh). */
    char small[FILE_SMALL];
    uv_buf_t bufs[2];
    ssize_t got;
    do {
      got = pread(fd, small, (size_t)cnt, (off_t)off);
    } while (got < 0 && errno == EINTR);
    close(fd);
    if (got != (ssize_t)cnt) { /* the file changed under us: the head is not sent yet */
      conn_close_now(c);
      return 1;
    }
    bufs[0] = b;
    bufs[1] = uv_buf_init(small, (unsigned)cnt);
    if (conn_write(c, bufs, 2) == 0) response_done(c);
    return 1;
  }
  c->file_fd = fd;
  c->file_off = off;
  c->file_end = off + cnt;
  c->resp = ZV_HTTP_RESP_STREAM;
  if (conn_write(c, &b, 1)) return 1; /* closed: conn_close_now closed the file */
  if (c->writes == 0) file_continue(c);
  return 1;
}
