/*
 * server.c: the HTTP/1.1 server on libuv (see server.h for the structures): defaults, the Date
 * header, listening and accepting, draining, closing and teardown. The connections themselves
 * (timers, reading, dispatch, responses) are stream.c's.
 *
 * It must not call into Lua, and must not allocate per connection beyond the pool stream.c keeps.
 */
#include "server.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../core/zv.h"

void zv_http_server_defaults(zv_http_server_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->host = "127.0.0.1";
  o->port = 0;
  o->reuseport = 1;
  o->backlog = 511;
  o->limits.max_header_bytes = 8192;
  o->limits.max_body_bytes = 1 << 20;
  o->header_timeout_ms = 10000;
  o->body_timeout_ms = 30000;
  o->keepalive_timeout_ms = 75000;
  o->max_connections = 10000;
}

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

/* --- the Date header ------------------------------------------------------------------------ */

/* Formats the Date header when the wall-clock second changed; checked against the loop's cached
 * time, so a response costs no clock read. */
const char *zv__http_server_date(zv_http_server_t *s) {
  uint64_t now = uv_now(s->loop);
  if (now >= s->date_next) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    zv_http_date(ts.tv_sec, s->date);
    s->date_next = now + 1000 - (uint64_t)(ts.tv_nsec / 1000000);
  }
  return s->date;
}

/* --- accepting ----------------------------------------------------------------------------- */

static void free_handle(uv_handle_t *h) {
  zv_free(h);
}

/* Over max_connections: accept and close at once, so the backlog does not fill up. */
static void reject(zv_http_server_t *s) {
  uv_tcp_t *t = zv_alloc(sizeof *t);
  if (!t) return;
  uv_tcp_init(s->loop, t);
  uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)t);
  uv_close((uv_handle_t *)t, free_handle);
}

static void on_connection(uv_stream_t *l, int status) {
  zv_http_server_t *s = l->data;
  if (status < 0 || !s->listening) return;
  if (s->nconns >= s->opts.max_connections || zv__http_conn_accept(s, l)) reject(s);
}

/* --- the server ---------------------------------------------------------------------------- */

static void server_handle_closed(uv_handle_t *h) {
  zv_http_server_t *s = h->data;
  if (--s->nhandles > 0) return;
  if (s->epfd >= 0) {
    close(s->epfd);
    s->epfd = -1;
  }
  while (s->free) {
    zv_http_sconn_t *c = s->free;
    s->free = c->next;
    zv_http_conn_free(&c->core);
    zv_http_buf_free(&c->head);
    zv_free(c);
  }
  s->nfree = 0;
  if (s->cb.on_closed) s->cb.on_closed(s);
}

/* Once nothing listens and no connection is open, the server's own handles close. */
void zv__http_server_maybe_finish(zv_http_server_t *s) {
  if (s->draining && !s->drained && s->nconns == 0) {
    s->drained = 1;
    uv_timer_stop(&s->timer);
    if (s->cb.on_drained && !s->torn_down) s->cb.on_drained(s);
  }
  if (s->listening || s->nconns || s->finishing) return;
  s->finishing = 1;
  uv_close((uv_handle_t *)&s->events, server_handle_closed);
  uv_close((uv_handle_t *)&s->idle, server_handle_closed);
  uv_close((uv_handle_t *)&s->timer, server_handle_closed);
}

static void drain_cb(uv_timer_t *t) {
  zv_http_server_t *s = t->data;
  /* The deadline: whatever is still open goes now. */
  while (s->conns) zv__http_conn_close_now(s->conns);
  zv__http_server_maybe_finish(s);
}

static int resolve(const char *host, int port, struct sockaddr_storage *ss) {
  if (!strcmp(host, "localhost")) host = "127.0.0.1";
  if (uv_ip4_addr(host, port, (struct sockaddr_in *)ss) == 0) return 0;
  if (uv_ip6_addr(host, port, (struct sockaddr_in6 *)ss) == 0) return 0;
  return ZV_EINVAL;
}

int zv_http_server_start(zv_http_server_t *s, uv_loop_t *loop, const zv_http_server_opts_t *o,
                         const zv_http_server_cb_t *cb, void *data) {
  struct sockaddr_storage ss;
  int len = sizeof ss, rc;
  memset(s, 0, sizeof *s);
  s->loop = loop;
  s->opts = *o;
  s->cb = *cb;
  s->data = data;
  if (resolve(o->host, o->port, &ss)) return ZV_EINVAL;
  /* Writing to a socket the peer closed must be an error, not the end of the process. */
  signal(SIGPIPE, SIG_IGN);
  uv_idle_init(loop, &s->idle);
  uv_timer_init(loop, &s->timer);
  s->idle.data = s->timer.data = s->listener.data = s->events.data = s;
  s->epfd = epoll_create1(EPOLL_CLOEXEC);
  rc = s->epfd < 0 ? uv_translate_sys_error(errno) : uv_poll_init(loop, &s->events, s->epfd);
  if (!rc) rc = uv_poll_start(&s->events, UV_READABLE, zv__http_events_cb);
  if (!rc) rc = uv_tcp_init_ex(loop, &s->listener, ss.ss_family);
  if (rc) {
    /* The listener never became a handle (nor, maybe, events): close the others only. */
    s->nhandles = 2;
    s->uverr = rc;
    s->finishing = 1;
    if (s->events.loop == loop) {
      s->nhandles = 3;
      uv_close((uv_handle_t *)&s->events, server_handle_closed);
    }
    uv_close((uv_handle_t *)&s->idle, server_handle_closed);
    uv_close((uv_handle_t *)&s->timer, server_handle_closed);
    if (s->nhandles == 2 && s->epfd >= 0) {
      close(s->epfd);
      s->epfd = -1;
    }
    return ZV_EIO;
  }
  s->nhandles = 4;
  s->listening = 1;
  if (o->reuseport) {
    uv_os_fd_t fd;
    int one = 1;
    if (uv_fileno((uv_handle_t *)&s->listener, &fd) == 0)
      setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  }
  rc = uv_tcp_bind(&s->listener, (struct sockaddr *)&ss, 0);
  if (!rc) rc = uv_listen((uv_stream_t *)&s->listener, o->backlog, on_connection);
  if (!rc) rc = uv_tcp_getsockname(&s->listener, (struct sockaddr *)&ss, &len);
  if (rc) {
    s->uverr = rc;
    zv_http_server_close(s);
    return ZV_EIO;
  }
  s->opts.host = NULL; /* the caller's string; not needed after the bind */
  s->port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                     : ntohs(((struct sockaddr_in *)&ss)->sin_port);
  return 0;
}

void zv_http_server_close(zv_http_server_t *s) {
  if (s->listening) {
    s->listening = 0;
    uv_close((uv_handle_t *)&s->listener, server_handle_closed);
  }
  zv__http_server_maybe_finish(s);
}

void zv_http_server_drain(zv_http_server_t *s, uint64_t deadline_ms) {
  zv_http_sconn_t *c, *next;
  if (s->draining) return;
  s->draining = 1;
  if (s->listening) {
    s->listening = 0;
    uv_close((uv_handle_t *)&s->listener, server_handle_closed);
  }
  for (c = s->conns; c; c = next) {
    next = c->next;
    if (c->core.state == ZV_HTTP_IDLE && !zv_http_conn_pending(&c->core) && !c->writes &&
        c->resp == ZV_HTTP_RESP_NONE && !c->want_process)
      zv__http_conn_close_now(c);
  }
  if (s->nconns == 0) {
    /* Nothing to wait for: report on the next loop iteration, not from inside this call. */
    uv_timer_start(&s->timer, drain_cb, 0, 0);
  } else {
    uv_timer_start(&s->timer, drain_cb, deadline_ms, 0);
  }
}

void zv_http_server_teardown(zv_http_server_t *s) {
  s->torn_down = 1;
  if (s->listening) {
    s->listening = 0;
    uv_close((uv_handle_t *)&s->listener, server_handle_closed);
  }
  while (s->conns) zv__http_conn_close_now(s->conns);
  zv__http_server_maybe_finish(s);
}
