/*
 * json_ffi.h: the JSON writer's string scan as LuaJIT's FFI sees it (lua/zever/json.lua loads it
 * with require("zever.cdef.json")). The Makefile runs this file through the preprocessor with
 * -DZV_FFI_CDEF into build/ffi.h: these are the only declarations of these functions.
 *
 * It must hold only declarations ffi.cdef parses.
 */
#ifndef ZV_JSON_FFI_H
#define ZV_JSON_FFI_H

#ifndef ZV_FFI_CDEF
#include <stddef.h>
#endif

/*
 * The length of the longest prefix of s[0..len) that the writer (zv_json_buf_add_string) copies
 * as it is: len when the string needs no escape. Pure: no allocation, no state. For the Lua
 * fast paths of zever.json, which must write byte for byte what the C writer writes.
 */
size_t zv_json_plain_len(const char *s, size_t len);

#endif
