/*
 * pg_ffi.h: the libpq calls that lua/adapters/db/postgres.lua makes through LuaJIT's FFI to
 * decode a finished result (require("zever.cdef.pg")), and the blocking calls
 * bench/db_overhead_pg_bench.lua makes as the raw libpq side it measures the adapter against
 * (the adapter itself never blocks: it sends through zever.pg on the worker's loop). The Makefile preprocesses this file with
 * -DZV_FFI_CDEF into build/ffi.h; C sees the same declarations next to libpq-fe.h (l_pg.c
 * includes both), so the compiler rejects any drift from libpq's own signatures.
 *
 * The PGresult a Lua caller decodes is owned by the connection (pg.h): it is valid from the
 * completion of the statement until the next statement on that connection, which the adapter
 * never starts before it has decoded the rows. The zv_pg_t pointer (conn:ptr()) is valid until
 * the connection is closed; the adapter drops it when it closes the connection.
 *
 * It must hold only declarations ffi.cdef parses.
 */
#ifndef ZV_PG_FFI_H
#define ZV_PG_FFI_H

#ifndef ZV_FFI_CDEF
#include <stddef.h>

#include <libpq-fe.h>
#else
typedef struct pg_result PGresult;
typedef struct pg_conn PGconn;
typedef int ConnStatusType;
typedef int ExecStatusType;
#endif

/* A zever.pg connection (pg.h, which includes this file: the one declaration of the type). */
typedef struct zv_pg_s zv_pg_t;

int PQntuples(const PGresult *res);
int PQnfields(const PGresult *res);
char *PQfname(const PGresult *res, int field_num);
unsigned int PQftype(const PGresult *res, int field_num);
char *PQgetvalue(const PGresult *res, int tup_num, int field_num);
int PQgetlength(const PGresult *res, int tup_num, int field_num);
int PQgetisnull(const PGresult *res, int tup_num, int field_num);
char *PQcmdTuples(PGresult *res);
unsigned char *PQunescapeBytea(const unsigned char *strtext, size_t *retbuflen);
void PQfreemem(void *ptr);

/* The finished operation's results, read by the adapter's decode (pg.h; conn:ptr() gives the
 * zv_pg_t of a zever.pg connection): the same as conn:result([i]), conn:status(i) and
 * conn:clear(), called from compiled code instead of through the classic API; zv_pg_ok says
 * whether the connection is still usable as far as it has read (no syscall). */
PGresult *zv_pg_result(const zv_pg_t *c);
PGresult *zv_pg_pipeline_result(const zv_pg_t *c, int i);
int zv_pg_pipeline_status(const zv_pg_t *c, int i);
void zv_pg_clear(zv_pg_t *c);
int zv_pg_ok(const zv_pg_t *c);

/* The int2 or int4 value (PQftype 21 or 23: at most 10 digits) at row i, column j of r, parsed
 * from its text, or NaN when it is NULL: the decode's one call for such a column, instead of
 * PQgetisnull, PQgetvalue, PQgetlength and a digit loop in Lua. */
double zv_pg_int(const PGresult *r, int i, int j);

/* The row count of r's command (PQcmdTuples' digits), 0 for a command without one: a number
 * from one call, not a string or a digit loop in Lua. */
double zv_pg_changes(PGresult *r);

/*
 * A zever.pg connection of the binding (l_pg.c; conn:cptr() gives it, valid until conn:close()).
 * zv_pgconn_send sends one statement from compiled code, the statement path's one call instead
 * of conn:send through the classic API: mode ZV_PG_SEND_SIMPLE (text is SQL without parameters,
 * maybe several statements; n is 0), ZV_PG_SEND_PARAMS (text is the SQL) or
 * ZV_PG_SEND_PREPARED (text is the prepared statement's name). Its n (at most ZV_PG_FFI_BINDS)
 * text parameters: values[i] (lens[i] bytes; NULL: SQL NULL), or, when lens[i] is negative,
 * the number nums[i], formatted here as conn:send formats a number (digits for an integer); all
 * copied by libpq before it returns. pre (NULL: none) is SQL without parameters sent first in
 * the same pipeline (pg.h), one round trip for both, a failing pre skipping the statement (a
 * transaction's held-back BEGIN; not with ZV_PG_SEND_SIMPLE): the results are then the
 * pipeline's two ops (zv_pg_pipeline_status/result). The caller has made its token the waiter
 * (conn:slot()[1] = token) and awaits it: the reply completes it through zever.sched's path, as
 * conn:send's does. Returns 0, ZV_EINVAL (a statement is running, or a bad n or mode),
 * ZV_ENOMEM (nothing sent) or ZV_EIO (the connection broke: zv_pgconn_errmsg says why). It
 * never calls Lua.
 */
typedef struct zv_pgconn_s zv_pgconn_t;
#define ZV_PG_SEND_SIMPLE 0
#define ZV_PG_SEND_PARAMS 1
#define ZV_PG_SEND_PREPARED 3
#define ZV_PG_FFI_BINDS 16
int zv_pgconn_send(zv_pgconn_t *c, int mode, const char *pre, const char *text, int n,
                   const char *const *values, const int *lens, const double *nums);
const char *zv_pgconn_errmsg(zv_pgconn_t *c);

/* The raw side of bench/db_overhead_pg_bench.lua (libpq as a hand-tuned FFI handler would call
 * it: blocking, or non-blocking with the socket watched on the loop). */
PGconn *PQconnectdb(const char *conninfo);
ConnStatusType PQstatus(const PGconn *conn);
char *PQerrorMessage(const PGconn *conn);
void PQfinish(PGconn *conn);
PGresult *PQexec(PGconn *conn, const char *query);
PGresult *PQprepare(PGconn *conn, const char *stmtName, const char *query, int nParams,
                    const unsigned int *paramTypes);
PGresult *PQexecPrepared(PGconn *conn, const char *stmtName, int nParams,
                         const char *const *paramValues, const int *paramLengths,
                         const int *paramFormats, int resultFormat);
ExecStatusType PQresultStatus(const PGresult *res);
void PQclear(PGresult *res);
int PQenterPipelineMode(PGconn *conn);
int PQexitPipelineMode(PGconn *conn);
int PQpipelineSync(PGconn *conn);
int PQsendQueryParams(PGconn *conn, const char *command, int nParams,
                      const unsigned int *paramTypes, const char *const *paramValues,
                      const int *paramLengths, const int *paramFormats, int resultFormat);
int PQsendQueryPrepared(PGconn *conn, const char *stmtName, int nParams,
                        const char *const *paramValues, const int *paramLengths,
                        const int *paramFormats, int resultFormat);
PGresult *PQgetResult(PGconn *conn);
int PQsetnonblocking(PGconn *conn, int arg);
int PQsocket(const PGconn *conn);
int PQflush(PGconn *conn);
int PQconsumeInput(PGconn *conn);
int PQisBusy(PGconn *conn);

#endif
