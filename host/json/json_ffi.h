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

/*
 * The length of the longest prefix of s[0..len) that the writer copies as it is and the reader
 * gives back as the same bytes: no '"', '\\' or control byte, and valid UTF-8 (a byte string
 * the writer copies but zv_json_parse would refuse stops it). len when the string round-trips
 * unchanged. Pure: no allocation, no state. For zever.session's record cache, which keeps a
 * value only when decoding its JSON would give that value back.
 */
size_t zv_json_clean_len(const char *s, size_t len);

/*
 * The writer's number text (json.h: at most 31 bytes and a NUL into buf): an integral value in
 * full, any other the shortest of 15-17 digits that reads back to v; 0 for NaN and the
 * infinities. For zever.json's small-object path, which writes fractions as the writer does.
 */
size_t zv_json_format_number(double v, char *buf);

#endif
