/*
 * pg.c: the non-blocking PostgreSQL connection (see pg.h). It owns one PGconn, the results of
 * the last operation and the last notification; it never waits (the connection is in libpq's
 * non-blocking mode) and never calls back: the caller asks, after each readiness event.
 *
 * It must not include lua.h or uv.h, and must not keep a copy of the URI (the password).
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "../core/zv.h"
#include "pg.h"

struct zv_pg_s {
  PGconn *pg;
  PGresult *res;     /* the finished operation's last result */
  PGresult *err;     /* its first error result */
  PGnotify *note;    /* the last notification handed out */
  int busy;          /* an operation was sent and is not done */
  int copying;       /* the server waits for COPY data */
  int dead;          /* the server said FATAL outside a statement (shutdown, terminate) */
  char msg[256];
};

static void set_msg(zv_pg_t *c, const char *s) {
  size_t n = 0;
  if (!s || !*s) s = "connection failed";
  /* libpq's messages are multi-line ("connection to server at ... failed: ...\n\tIs the..."):
   * keep the first line, which says what happened. */
  while (s[n] && s[n] != '\n' && n < sizeof c->msg - 1) n++;
  memcpy(c->msg, s, n);
  c->msg[n] = '\0';
}

/*
 * Notices go here instead of libpq's default (stderr). A FATAL that arrives while no statement
 * runs (an administrator shutdown, pg_terminate_backend) comes as a notice too: it marks the
 * connection dead, so the pool drops it before using it.
 */
static void on_notice(void *arg, const PGresult *r) {
  zv_pg_t *c = arg;
  const char *sev = PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);
  if (sev && (!strcmp(sev, "FATAL") || !strcmp(sev, "PANIC"))) {
    c->dead = 1;
    set_msg(c, PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY));
  }
}

int zv_pg_connect_start(const char *uri, const char *options, zv_pg_t **out) {
  const char *keys[5], *vals[5];
  int k = 0;
  zv_pg_t *c = zv_alloc(sizeof *c);
  *out = NULL;
  if (!c) return ZV_ENOMEM;
  memset(c, 0, sizeof *c);
  keys[k] = "dbname", vals[k++] = uri;
  keys[k] = "client_encoding", vals[k++] = "UTF8";
  keys[k] = "application_name", vals[k++] = "zever";
  if (options && *options) keys[k] = "options", vals[k++] = options;
  keys[k] = NULL, vals[k] = NULL;
  *out = c;
  /* expand_dbname = 1: dbname holds the URI; later keys override what it says. */
  c->pg = PQconnectStartParams(keys, vals, 1);
  if (!c->pg) {
    set_msg(c, "out of memory");
    return ZV_EIO;
  }
  if (PQstatus(c->pg) == CONNECTION_BAD) {
    set_msg(c, PQerrorMessage(c->pg));
    return ZV_EIO;
  }
  PQsetNoticeReceiver(c->pg, on_notice, c);
  if (PQsetnonblocking(c->pg, 1) != 0) {
    set_msg(c, PQerrorMessage(c->pg));
    return ZV_EIO;
  }
  return 0;
}

int zv_pg_connect_poll(zv_pg_t *c) {
  switch (PQconnectPoll(c->pg)) {
  case PGRES_POLLING_READING:
    return ZV_PG_WANT_READ;
  case PGRES_POLLING_WRITING:
    return ZV_PG_WANT_WRITE;
  case PGRES_POLLING_OK:
    return 0;
  default:
    set_msg(c, PQerrorMessage(c->pg));
    return ZV_EIO;
  }
}

int zv_pg_fd(const zv_pg_t *c) {
  return c->pg ? PQsocket(c->pg) : -1;
}

const char *zv_pg_errmsg(zv_pg_t *c) {
  if (!c->msg[0] && c->pg) set_msg(c, PQerrorMessage(c->pg));
  return c->msg;
}

int zv_pg_ok(const zv_pg_t *c) {
  return c->pg && !c->dead && PQstatus(c->pg) == CONNECTION_OK;
}

int zv_pg_server_version(const zv_pg_t *c) {
  return zv_pg_ok(c) ? PQserverVersion(c->pg) : 0;
}

void zv_pg_clear(zv_pg_t *c) {
  if (c->res) PQclear(c->res);
  if (c->err) PQclear(c->err);
  c->res = c->err = NULL;
}

/* Common checks before a send; clears the previous results. */
static int can_send(zv_pg_t *c) {
  if (c->busy) return ZV_EINVAL;
  zv_pg_clear(c);
  if (!zv_pg_ok(c)) return ZV_EIO;
  return 0;
}

static int sent(zv_pg_t *c, int ok) {
  if (!ok) {
    set_msg(c, PQerrorMessage(c->pg));
    return ZV_EIO;
  }
  c->busy = 1;
  c->msg[0] = '\0';
  return 0;
}

int zv_pg_send_simple(zv_pg_t *c, const char *sql) {
  int rc = can_send(c);
  if (rc) return rc;
  return sent(c, PQsendQuery(c->pg, sql));
}

int zv_pg_send_params(zv_pg_t *c, const char *sql, int n, const char *const *values,
                      const int *lens) {
  int rc = can_send(c);
  if (rc) return rc;
  /* Text parameters: lengths are ignored by libpq for text, but kept for symmetry. */
  return sent(c, PQsendQueryParams(c->pg, sql, n, NULL, values, lens, NULL, 0));
}

int zv_pg_send_prepare(zv_pg_t *c, const char *name, const char *sql) {
  int rc = can_send(c);
  if (rc) return rc;
  return sent(c, PQsendPrepare(c->pg, name, sql, 0, NULL));
}

int zv_pg_send_prepared(zv_pg_t *c, const char *name, int n, const char *const *values,
                        const int *lens) {
  int rc = can_send(c);
  if (rc) return rc;
  return sent(c, PQsendQueryPrepared(c->pg, name, n, values, lens, NULL, 0));
}

int zv_pg_flush(zv_pg_t *c) {
  int rc = PQflush(c->pg);
  if (rc == 0) return 0;
  if (rc == 1) return ZV_PG_WANT_WRITE;
  set_msg(c, PQerrorMessage(c->pg));
  return ZV_EIO;
}

int zv_pg_input(zv_pg_t *c) {
  if (!PQconsumeInput(c->pg)) {
    set_msg(c, PQerrorMessage(c->pg));
    c->busy = 0;
    c->copying = 0;
    return ZV_EIO;
  }
  if (!c->busy) {
    char b;
    /* Idle: a server that closed the socket shows as end of file (a peek, nothing consumed). */
    int fd = PQsocket(c->pg);
    if (c->dead) return ZV_EIO;
    if (fd >= 0 && recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
      set_msg(c, "the server closed the connection");
      c->dead = 1;
      return ZV_EIO;
    }
    return 0;
  }
  while (!PQisBusy(c->pg)) {
    PGresult *r = PQgetResult(c->pg);
    ExecStatusType st;
    if (!r) {
      c->busy = 0;
      return 0;
    }
    st = PQresultStatus(r);
    if (st == PGRES_COPY_IN) {
      PQclear(r);
      c->copying = 1;
      return ZV_PG_COPY;
    }
    if (st == PGRES_FATAL_ERROR || st == PGRES_BAD_RESPONSE || st == PGRES_NONFATAL_ERROR) {
      if (st == PGRES_NONFATAL_ERROR || c->err) {
        PQclear(r);
      } else {
        c->err = r;
      }
    } else {
      if (c->res) PQclear(c->res);
      c->res = r;
    }
    if (PQstatus(c->pg) == CONNECTION_BAD) {
      set_msg(c, PQerrorMessage(c->pg));
      c->busy = 0;
      return ZV_EIO;
    }
  }
  return ZV_PG_WANT_READ;
}

int zv_pg_put_copy(zv_pg_t *c, const char *data, size_t len) {
  int rc;
  if (len > 0x7fffffff) return ZV_EINVAL;
  rc = PQputCopyData(c->pg, data, (int)len);
  if (rc == 1) return 0;
  if (rc == 0) return ZV_PG_WANT_WRITE;
  set_msg(c, PQerrorMessage(c->pg));
  return ZV_EIO;
}

int zv_pg_end_copy(zv_pg_t *c, const char *errmsg) {
  int rc = PQputCopyEnd(c->pg, errmsg);
  if (rc == 1) {
    c->copying = 0;
    return 0;
  }
  if (rc == 0) return ZV_PG_WANT_WRITE;
  set_msg(c, PQerrorMessage(c->pg));
  return ZV_EIO;
}

int zv_pg_busy(const zv_pg_t *c) {
  return c->busy;
}

PGresult *zv_pg_result(const zv_pg_t *c) {
  return c->res;
}

PGresult *zv_pg_error(const zv_pg_t *c) {
  return c->err;
}

int zv_pg_notify(zv_pg_t *c, const char **channel, const char **payload) {
  if (c->note) {
    PQfreemem(c->note);
    c->note = NULL;
  }
  if (!c->pg) return 0;
  c->note = PQnotifies(c->pg);
  if (!c->note) return 0;
  *channel = c->note->relname;
  *payload = c->note->extra;
  return 1;
}

void zv_pg_free(zv_pg_t *c) {
  if (!c) return;
  zv_pg_clear(c);
  if (c->note) PQfreemem(c->note);
  if (c->pg) PQfinish(c->pg);
  zv_free(c);
}
