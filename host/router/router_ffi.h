/*
 * router_ffi.h: the router's per-request match, as LuaJIT's FFI sees it (lua/zever/app.lua loads
 * it with require("zever.cdef.router")). The Makefile runs this file through the preprocessor with
 * -DZV_FFI_CDEF into build/ffi.h, which the host preloads: these are the only declarations of
 * these functions and types, C included, so Lua never types them again.
 *
 * It must hold only declarations ffi.cdef parses: includes stay inside the ZV_FFI_CDEF guard,
 * macros are expanded by the preprocessor.
 */
#ifndef ZV_ROUTER_FFI_H
#define ZV_ROUTER_FFI_H

#ifndef ZV_FFI_CDEF
#include <stddef.h>
#include <stdint.h>
#endif

/* Parameters (':name' and the splat together) a pattern may hold; more is an error at add. */
#define ZV_ROUTER_MAX_PARAMS 16

/*
 * The per-request match for LuaJIT's FFI (zever.app calls it through ffi.C; the host is linked
 * with -Wl,-E). The classic r:match costs a C API round trip and stops LuaJIT's compiler at the
 * call; this one is an ordinary C call inside a trace. box is a router object's payload (the
 * FFI passes a full userdata to a void * parameter as its payload address). It answers only the
 * common case: a hit whose parameters need no percent-decoding. It then fills out (the route
 * id, and each parameter as an offset and a length into path, in pattern order) and returns 0.
 * Anything else returns -1, and the caller asks r:match, which builds the 404, 405, OPTIONS and
 * redirect answers and decodes parameters. Allocates nothing.
 */
typedef struct {
  int32_t id, nparams;
  int32_t spans[2 * ZV_ROUTER_MAX_PARAMS];
} zv_router_ffi_match_t;

int zv_router_match_ffi(const void *box, const char *method, size_t mlen, const char *path,
                        size_t plen, zv_router_ffi_match_t *out);

#endif
