/*
 * cookie_ffi.h: the Cookie header search as LuaJIT's FFI sees it (lua/zever/cookie.lua loads it
 * with require("zever.cdef.cookie")). The Makefile runs this file through the preprocessor with
 * -DZV_FFI_CDEF into build/ffi.h: this is the only declaration of this function.
 *
 * It must hold only declarations ffi.cdef parses.
 */
#ifndef ZV_COOKIE_FFI_H
#define ZV_COOKIE_FFI_H

#ifndef ZV_FFI_CDEF
#include <stddef.h>
#endif

/*
 * The value of the first valid pair of the Cookie header s[0..len) named name[0..nlen): its span
 * in *vpos, *vlen and 1, or 0 (cookie.h). Per request (req:cookie): the classic binding's get is
 * a C API call, which stops the request's trace. Pure: no allocation, no state.
 */
int zv_cookie_find(const char *s, size_t len, const char *name, size_t nlen, size_t *vpos,
                   size_t *vlen);

#endif
