/*
 * sys_ffi.h: the clocks as LuaJIT's FFI sees them (zever.session, zever.middleware.session and
 * adapters.db_table load it with require("zever.cdef.sys") for the wall clock,
 * adapters.db.postgres for the monotonic one). The Makefile runs this file through the
 * preprocessor with -DZV_FFI_CDEF into build/ffi.h: this is the only declaration of these
 * functions for the FFI.
 *
 * It must hold only declarations ffi.cdef parses.
 */
#ifndef ZV_SYS_FFI_H
#define ZV_SYS_FFI_H

/*
 * Wall-clock seconds since the Unix epoch (CLOCK_REALTIME), as sys.wall() gives them. Per
 * request (a session's one clock read): the classic binding's sys.wall is a C API call, which
 * stops the request's trace.
 */
double zv_sys_wall(void);

/*
 * Monotonic seconds (CLOCK_MONOTONIC), the clock of sys.now(), for per-statement readings that
 * must not stop a trace (adapters.db.postgres's pool clock).
 */
double zv_sys_clock(void);

#endif
