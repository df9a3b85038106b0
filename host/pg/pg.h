/*
 * pg.h: one non-blocking PostgreSQL connection over libpq, as a state machine the caller drives
 * from its event loop (the binding, l_pg.c, watches zv_pg_fd with uv_poll and calls in here).
 *
 * No Lua and no libuv here: the core only tells the caller what it waits for (ZV_PG_WANT_READ,
 * ZV_PG_WANT_WRITE), so it can be driven by any loop, a benchmark or a test.
 *
 *   zv_pg_connect_start --> zv_pg_connect_poll ... (WANT_READ/WRITE) ... 0: ready
 *   ready --send_*--> busy --zv_pg_flush (WANT_WRITE)--> zv_pg_input (WANT_READ) ... 0: done
 *                           \--> ZV_PG_COPY (a COPY FROM STDIN waits): put_copy, end_copy, input
 *
 * One operation at a time: a send while the previous one is not done fails with ZV_EINVAL.
 * Results: when an operation is done, zv_pg_result is its last result (NULL for none) and
 * zv_pg_error the first error result (NULL when it succeeded); both stay owned by the
 * connection until the next send, zv_pg_clear or zv_pg_free. Error texts come from libpq and
 * never contain the password (libpq does not print it; host and user may appear).
 */
#ifndef ZV_PG_H
#define ZV_PG_H

#include <stddef.h>

#include <libpq-fe.h>

#define ZV_PG_WANT_READ 1
#define ZV_PG_WANT_WRITE 2
#define ZV_PG_COPY 4 /* zv_pg_input: the server waits for COPY data */

#include "pg_ffi.h" /* zv_pg_t, and the calls the FFI makes */

/*
 * Starts connecting to uri (a libpq URI "postgres://..." or "postgresql://...", or a key=value
 * conninfo) with options (the libpq "options" value, "-c TimeZone=UTC ...") added. Allocates
 * the connection: *out is set even on failure (ZV_EIO: zv_pg_errmsg says why), and the caller
 * frees it with zv_pg_free. Returns 0, ZV_ENOMEM (nothing allocated) or ZV_EIO.
 */
int zv_pg_connect_start(const char *uri, const char *options, zv_pg_t **out);

/* Advances a connect: ZV_PG_WANT_READ / ZV_PG_WANT_WRITE, 0 when ready, ZV_EIO when it failed. */
int zv_pg_connect_poll(zv_pg_t *c);

/* The socket to watch (it may change while connecting), or -1. */
int zv_pg_fd(const zv_pg_t *c);

/* The last connection error, trimmed to one line ("connection refused", ...). */
const char *zv_pg_errmsg(zv_pg_t *c);

/* zv_pg_ok (1 while the connection is usable, not broken) is declared in pg_ffi.h. */

/* The server's version number (150004), 0 when not connected. */
int zv_pg_server_version(const zv_pg_t *c);

/*
 * Sends one operation; values[i] (lens[i] bytes) are text parameters, NULL for SQL NULL; libpq
 * copies them before it returns. simple: PQsendQuery (several statements, no parameters).
 * params: PQsendQueryParams. prepare: PQsendPrepare(name, sql). prepared: PQsendQueryPrepared.
 * Returns 0, ZV_EINVAL (an operation is running) or ZV_EIO (the connection is broken).
 * The caller then flushes (zv_pg_flush) and reads (zv_pg_input).
 */
int zv_pg_send_simple(zv_pg_t *c, const char *sql);
int zv_pg_send_params(zv_pg_t *c, const char *sql, int n, const char *const *values,
                      const int *lens);
int zv_pg_send_prepare(zv_pg_t *c, const char *name, const char *sql);
int zv_pg_send_prepared(zv_pg_t *c, const char *name, int n, const char *const *values,
                        const int *lens);

/* Sends what libpq buffered: 0 when all went, ZV_PG_WANT_WRITE, ZV_EIO. */
int zv_pg_flush(zv_pg_t *c);

/*
 * Reads what arrived and collects results: 0 when the operation is done (results set),
 * ZV_PG_WANT_READ when more must arrive, ZV_PG_COPY when the server waits for COPY data,
 * ZV_EIO when the connection broke. With no operation running it only reads (notifications)
 * and returns 0 or ZV_EIO.
 */
int zv_pg_input(zv_pg_t *c);

/*
 * COPY FROM STDIN: queues len bytes of data (copied), then ends the copy (errmsg non-NULL
 * aborts it with that message). 0, ZV_PG_WANT_WRITE (nothing queued: retry when writable),
 * ZV_EIO. After zv_pg_end_copy, flush and read as for any operation.
 */
int zv_pg_put_copy(zv_pg_t *c, const char *data, size_t len);
int zv_pg_end_copy(zv_pg_t *c, const char *errmsg);

/*
 * Pipeline mode (libpq 14+): several statements go out in one write and their results come
 * back in one read, so n statements cost one round trip instead of n.
 *
 *   zv_pg_pipeline_begin(c, n) --pipeline_op... [pipeline_sync]... --> pipeline_end --> busy
 *   --zv_pg_flush / zv_pg_input as for any operation ... 0: done, out of pipeline mode
 *
 * begin enters pipeline mode for at most n operations (ZV_EINVAL while an operation runs);
 * op queues one: mode ZV_PG_OP_PARAMS (sql with parameters), ZV_PG_OP_PREPARE (name, sql) or
 * ZV_PG_OP_PREPARED (name with parameters); sync ends a transaction segment (PQpipelineSync):
 * statements between two syncs run in one implicit transaction (outside an explicit one), and
 * an error makes the server skip the rest of its segment (their status ZV_PG_ABORTED), never
 * what follows the next sync. end adds the final sync unless the last op was one and starts
 * the operation. After done: zv_pg_pipeline_count ops, each with its status (ZV_PG_OK,
 * ZV_PG_FAILED, ZV_PG_ABORTED), its last result (zv_pg_pipeline_result) and its error result
 * (zv_pg_pipeline_error); zv_pg_result/zv_pg_error are NULL. Any failure to queue is ZV_EIO
 * (the connection is unusable: the caller drops it).
 */
#define ZV_PG_OP_PARAMS 0
#define ZV_PG_OP_PREPARE 1
#define ZV_PG_OP_PREPARED 2
#define ZV_PG_OK 0
#define ZV_PG_FAILED 1
#define ZV_PG_ABORTED 2

int zv_pg_pipeline_begin(zv_pg_t *c, int n);
int zv_pg_pipeline_op(zv_pg_t *c, int mode, const char *name, const char *sql, int n,
                      const char *const *values, const int *lens);
int zv_pg_pipeline_sync(zv_pg_t *c);
int zv_pg_pipeline_end(zv_pg_t *c);
int zv_pg_pipeline_count(const zv_pg_t *c);
/* zv_pg_pipeline_status and zv_pg_pipeline_result: pg_ffi.h. */
PGresult *zv_pg_pipeline_error(const zv_pg_t *c, int i);

/* 1 while an operation is running (sent and not done). */
int zv_pg_busy(const zv_pg_t *c);

/* The finished operation's first error result (see above); its last result (zv_pg_result) and
 * zv_pg_clear are declared in pg_ffi.h, which the FFI reads too. */
PGresult *zv_pg_error(const zv_pg_t *c);

/*
 * The next notification received (LISTEN), or 0 when there is none: *channel and *payload
 * stay valid until the next call or zv_pg_free.
 */
int zv_pg_notify(zv_pg_t *c, const char **channel, const char **payload);

/* Closes the socket and frees everything. NULL does nothing. */
void zv_pg_free(zv_pg_t *c);

#endif
