/*
 * pg.c: the non-blocking PostgreSQL connection (see pg.h). It owns one PGconn, the results of
 * the last operation and the last notification; it never waits (the connection is in libpq's
 * non-blocking mode) and never calls back: the caller asks, after each readiness event.
 *
 * It must not include lua.h or uv.h, and must not keep a copy of the URI (the password).
 */
#include <errno.h>
#include <math.h>
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
  /* Pipeline mode (pg.h): the ops of the running pipeline, kept (and grown) between pipelines
   * so that a pipeline allocates nothing once the array is big enough. */
  int pipe;          /* in pipeline mode */
  int pn, pcap;      /* ops queued; room in ops */
  int nsync, synced; /* syncs queued; sync results read */
  int pcur;          /* the op whose results are being read */
  int last_sync;     /* the last thing queued was a sync */
  struct zv_pg_op {
    PGresult *res, *err;
    int status;
  } *ops;
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
  for (int i = 0; i < c->pn; i++) {
    if (c->ops[i].res) PQclear(c->ops[i].res);
    if (c->ops[i].err) PQclear(c->ops[i].err);
    c->ops[i].res = c->ops[i].err = NULL;
  }
  c->pn = 0;
}

/* Common checks before a send; clears the previous results. */
static int can_send(zv_pg_t *c) {
  if (c->busy || c->pipe) return ZV_EINVAL;
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

/*
 * Collects a pipeline's results: each op's results end with a NULL from PQgetResult, a sync
 * with a PGRES_PIPELINE_SYNC result (no NULL after it); an op the server skipped after an
 * error in its segment comes as PGRES_PIPELINE_ABORTED. Done at the last sync.
 */
static int pipeline_input(zv_pg_t *c) {
  while (!PQisBusy(c->pg)) {
    PGresult *r = PQgetResult(c->pg);
    ExecStatusType st;
    struct zv_pg_op *op;
    if (!r) {
      c->pcur++;
      continue;
    }
    st = PQresultStatus(r);
    if (st == PGRES_PIPELINE_SYNC) {
      PQclear(r);
      if (++c->synced < c->nsync) continue;
      c->busy = 0;
      c->pipe = 0;
      if (!PQexitPipelineMode(c->pg)) {
        set_msg(c, PQerrorMessage(c->pg));
        return ZV_EIO;
      }
      return 0;
    }
    if (c->pcur >= c->pn) { /* nothing of ours: cannot happen, but never write past ops */
      PQclear(r);
      continue;
    }
    op = &c->ops[c->pcur];
    if (st == PGRES_PIPELINE_ABORTED) {
      op->status = ZV_PG_ABORTED;
      PQclear(r);
    } else if (st == PGRES_FATAL_ERROR || st == PGRES_BAD_RESPONSE) {
      op->status = ZV_PG_FAILED;
      if (op->err) PQclear(r);
      else op->err = r;
    } else if (st == PGRES_NONFATAL_ERROR) {
      PQclear(r);
    } else {
      if (op->res) PQclear(op->res);
      op->res = r;
    }
    if (PQstatus(c->pg) == CONNECTION_BAD) {
      set_msg(c, PQerrorMessage(c->pg));
      c->busy = 0;
      return ZV_EIO;
    }
  }
  return ZV_PG_WANT_READ;
}

int zv_pg_input(zv_pg_t *c) {
  if (!c->busy) {
    char b;
    /* Idle: a peek first (one syscall, nothing consumed). End of file is a server that closed
     * the socket; pending bytes are notifications or a FATAL notice, which libpq reads now. */
    int fd = PQsocket(c->pg);
    ssize_t n;
    if (c->dead) return ZV_EIO;
    n = fd >= 0 ? recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) : -1;
    if (n == 0) {
      set_msg(c, "the server closed the connection");
      c->dead = 1;
      return ZV_EIO;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    if (!PQconsumeInput(c->pg)) {
      set_msg(c, PQerrorMessage(c->pg));
      return ZV_EIO;
    }
    /* PQconsumeInput only reads: PQisBusy parses, which hands a FATAL to on_notice. */
    (void)PQisBusy(c->pg);
    if (c->dead || PQstatus(c->pg) != CONNECTION_OK) return ZV_EIO;
    return 0;
  }
  if (!PQconsumeInput(c->pg)) {
    set_msg(c, PQerrorMessage(c->pg));
    c->busy = 0;
    c->copying = 0;
    return ZV_EIO;
  }
  if (c->pipe) return pipeline_input(c);
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

int zv_pg_pipeline_begin(zv_pg_t *c, int n) {
  int rc;
  if (c->pipe) return ZV_EINVAL;
  rc = can_send(c);
  if (rc) return rc;
  if (n < 1) return ZV_EINVAL;
  if (n > c->pcap) {
    struct zv_pg_op *ops = zv_realloc(c->ops, (size_t)n * sizeof *ops);
    if (!ops) return ZV_ENOMEM;
    c->ops = ops;
    c->pcap = n;
  }
  if (!PQenterPipelineMode(c->pg)) {
    set_msg(c, PQerrorMessage(c->pg));
    return ZV_EIO;
  }
  c->pipe = 1;
  c->pn = c->nsync = c->synced = c->pcur = 0;
  c->last_sync = 0;
  c->msg[0] = '\0';
  return 0;
}

int zv_pg_pipeline_op(zv_pg_t *c, int mode, const char *name, const char *sql, int n,
                      const char *const *values, const int *lens) {
  int ok;
  if (!c->pipe || c->busy || c->pn >= c->pcap) return ZV_EINVAL;
  if (mode == ZV_PG_OP_PREPARE) ok = PQsendPrepare(c->pg, name, sql, 0, NULL);
  else if (mode == ZV_PG_OP_PREPARED) ok = PQsendQueryPrepared(c->pg, name, n, values, lens, NULL, 0);
  else ok = PQsendQueryParams(c->pg, sql, n, NULL, values, lens, NULL, 0);
  if (!ok) {
    set_msg(c, PQerrorMessage(c->pg));
    return ZV_EIO;
  }
  c->ops[c->pn].res = c->ops[c->pn].err = NULL;
  c->ops[c->pn].status = ZV_PG_OK;
  c->pn++;
  c->last_sync = 0;
  return 0;
}

int zv_pg_pipeline_sync(zv_pg_t *c) {
  if (!c->pipe || c->busy) return ZV_EINVAL;
  if (!PQpipelineSync(c->pg)) {
    set_msg(c, PQerrorMessage(c->pg));
    return ZV_EIO;
  }
  c->nsync++;
  c->last_sync = 1;
  return 0;
}

int zv_pg_pipeline_end(zv_pg_t *c) {
  if (!c->pipe || c->busy) return ZV_EINVAL;
  if (!c->last_sync) {
    int rc = zv_pg_pipeline_sync(c);
    if (rc) return rc;
  }
  c->busy = 1;
  return 0;
}

int zv_pg_pipeline_count(const zv_pg_t *c) {
  return c->pipe ? 0 : c->pn;
}

int zv_pg_pipeline_status(const zv_pg_t *c, int i) {
  return i >= 0 && i < zv_pg_pipeline_count(c) ? c->ops[i].status : ZV_PG_ABORTED;
}

PGresult *zv_pg_pipeline_result(const zv_pg_t *c, int i) {
  return i >= 0 && i < zv_pg_pipeline_count(c) ? c->ops[i].res : NULL;
}

PGresult *zv_pg_pipeline_error(const zv_pg_t *c, int i) {
  return i >= 0 && i < zv_pg_pipeline_count(c) ? c->ops[i].err : NULL;
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
  zv_free(c->ops);
  if (c->note) PQfreemem(c->note);
  if (c->pg) PQfinish(c->pg);
  zv_free(c);
}

double zv_pg_int(const PGresult *r, int i, int j) {
  const char *p;
  long long v = 0;
  int neg;
  if (PQgetisnull(r, i, j)) return NAN;
  p = PQgetvalue(r, i, j);
  neg = *p == '-';
  if (neg) p++;
  while (*p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0');
  return neg ? -(double)v : (double)v;
}

double zv_pg_changes(PGresult *r) {
  const char *p = PQcmdTuples(r);
  double v = 0;
  while (*p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0');
  return v;
}
