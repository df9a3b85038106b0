/*
 * sys_ffi.h: the wall clock as LuaJIT's FFI sees it (zever.session, zever.middleware.session and
 * adapters.db_table load it with require("zever.cdef.sys")). The Makefile runs this file through the preprocessor
 * with -DZV_FFI_CDEF into build/ffi.h: this is the only declaration of this function for the FFI.
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

#endif
