/*
 * http_ffi.h: req:respond and req:header without the classic C API, as LuaJIT's FFI sees it (lua/zever/server.lua
 * loads it with require("zever.cdef.http")). The Makefile runs this file through the preprocessor
 * with -DZV_FFI_CDEF into build/ffi.h, which the host preloads: these are the only declarations of
 * these functions and types, C included, so Lua never types them again.
 *
 * It must hold only declarations ffi.cdef parses: includes stay inside the ZV_FFI_CDEF guard,
 * macros are expanded by the preprocessor.
 */
#ifndef ZV_HTTP_FFI_H
#define ZV_HTTP_FFI_H

#ifndef ZV_FFI_CDEF
#include <stddef.h>
#include <stdint.h>
#endif

/* A byte span: a header name or value (hdrs below, zv_http_respond in server.h). */
typedef struct {
  const char *p;
  size_t n;
} zv_http_str_t;

/*
 * req:respond for LuaJIT's FFI (zever.server calls it per request; the host is linked with
 * -Wl,-E), so that the request's trace runs through the answer instead of stopping at a classic
 * C API call. req is a request object's payload (the FFI passes a full userdata to a void *
 * parameter as its payload address); hdrs holds 2 * nhdrs strings, name and value in turn,
 * which the caller keeps alive during the call. Returns 0 when the response went out, 1 when
 * the client is gone (respond's nil, "closed"), and -1, having sent nothing, for every case
 * in which respond raises (answered, streaming, a status outside 200..999, an invalid header):
 * the caller then calls req:respond, which raises with the usual message. An FFI call must not
 * re-enter Lua: zv_http_respond calls nothing of the binding but on_conn_close (plain C); the
 * next request and the drain callback run from the loop, never from inside a respond.
 */
int zv_http_respond_ffi(void *req, int status, const char *body, size_t len,
                        const zv_http_str_t *hdrs, size_t nhdrs);

/*
 * req:header(name) for LuaJIT's FFI (zever.request calls it for req:header and req.id), so that
 * a middleware reading a request header stays in the request's trace. req as above: the caller
 * checks that it is a zever.http request (by its metatable) first. The name is compared without
 * regard to case. Returns 1 and sets *value and *vlen (bytes in the request's buffer, valid
 * until the request is answered or the connection reads again: copy them at once) when exactly
 * one header has the name, 0 when none has it, and -1, having set nothing, when the classic
 * req:header must answer: several headers of the name (it joins them), a request answered,
 * cancelled or whose client is gone (it raises or returns nil as documented).
 */
int zv_http_header_ffi(void *req, const char *name, size_t len, const char **value,
                       size_t *vlen);

#endif
