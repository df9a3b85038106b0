/*
 * pg_ffi.h: the libpq calls that lua/adapters/db/postgres.lua makes through LuaJIT's FFI to
 * decode a finished result (require("zever.cdef.pg")). The Makefile preprocesses this file with
 * -DZV_FFI_CDEF into build/ffi.h; C sees the same declarations next to libpq-fe.h (l_pg.c
 * includes both), so the compiler rejects any drift from libpq's own signatures.
 *
 * The PGresult a Lua caller decodes is owned by the connection (pg.h): it is valid from the
 * completion of the statement until the next statement on that connection, which the adapter
 * never starts before it has decoded the rows.
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
#endif

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

#endif
