/*
 * html_ffi.h: the HTML escaper as LuaJIT's FFI sees it (lua/zever/template.lua loads it with
 * require("zever.cdef.html")). The Makefile runs this file through the preprocessor with
 * -DZV_FFI_CDEF into build/ffi.h: these are the only declarations of these functions.
 *
 * It must hold only declarations ffi.cdef parses.
 */
#ifndef ZV_HTML_FFI_H
#define ZV_HTML_FFI_H

#ifndef ZV_FFI_CDEF
#include <stddef.h>
#endif

/* The length of s[0..len) once escaped (html.h): len itself when nothing needs escaping. */
size_t zv_html_escaped_len(const char *s, size_t len);

/*
 * Writes s[0..len) escaped into out, which has room for zv_html_escaped_len(s, len) bytes (no
 * terminating NUL is written). Returns the number of bytes written.
 */
size_t zv_html_escape(const char *s, size_t len, char *out);

#endif
