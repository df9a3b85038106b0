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

/* The raw side of bench/db_overhead_pg_bench.lua (blocking libpq, as a hand-tuned FFI handler). */
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

#endif
