/*
 * duration_ffi.h: the duration parser and formatter, as LuaJIT's FFI sees it
 * (lua/zever/duration.lua loads it with require("zever.cdef.duration")). The Makefile runs this
 * file through the preprocessor with -DZV_FFI_CDEF into build/ffi.h, which the host preloads:
 * these are the only declarations of these functions and types, C included, so Lua never types
 * them again.
 *
 * It must hold only declarations ffi.cdef parses: includes stay inside the ZV_FFI_CDEF guard,
 * macros are expanded by the preprocessor.
 */
#ifndef ZV_DURATION_FFI_H
#define ZV_DURATION_FFI_H

#ifndef ZV_FFI_CDEF
#include <stddef.h>
#include <stdint.h>
#endif

/*
 * The reason of a rejection: a cause code, the format it concerns (for NOTACCEPTED) and the
 * offending span input[at .. at + len). Plain int32s, so that LuaJIT's FFI can hold one in a
 * preallocated box.
 */
typedef struct {
  int32_t code;
  int32_t format;
  int32_t at;
  int32_t len;
} zv_duration_cause_t;

/*
 * Parses s[0..len) in any of the formats in accept (a mask of ZV_DURATION_*; days != 0 allows
 * the day unit "d" and the designator "D"). The input's shape picks the parser: "P" after an
 * optional sign is iso8601, all digits is nano (units if nano is not accepted: "0"), anything else
 * is units. On success stores the value in *ns and returns 0. On failure stores the reason in
 * *cause (which may be NULL) and returns ZV_ERANGE when the value overflows int64 nanoseconds,
 * ZV_EINVAL otherwise (and for an empty accept mask). Never allocates; s need not end in NUL.
 */
int zv_duration_parse(const char *s, size_t len, unsigned accept, int days, int64_t *ns,
                      zv_duration_cause_t *cause);

/*
 * Writes ns in the format fmt (one ZV_DURATION_* bit; days != 0 writes days in iso8601 and
 * units) into buf, NUL-terminated, and its length without the NUL into *len. Returns 0,
 * ZV_EINVAL for an unknown format, or ZV_ETOOLONG when cap is below ZV_DURATION_BUFSIZE and the
 * text does not fit. Never allocates.
 */
int zv_duration_format(int64_t ns, unsigned fmt, int days, char *buf, size_t cap, size_t *len);

/*
 * Converts seconds to nanoseconds, rounding to the nearest (halves away from zero). Returns 0,
 * or ZV_ERANGE for NaN, infinities and values outside int64 nanoseconds.
 */
int zv_duration_from_seconds(double seconds, int64_t *ns);

#endif
