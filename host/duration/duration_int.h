/*
 * duration_int.h: what the two files of the duration core share (not for use outside
 * host/duration): the byte type, the nanosecond constants, the attributes and the length of a
 * UTF-8 character, which both the parsers (spans of a rejection) and the texts (quoting) need.
 *
 *   duration_parse.c   reading: the three parsers, the rejection's cause (zv_duration_parse)
 *   duration_write.c   writing: the three writers, seconds to nanoseconds, the format names and
 *                      the rejection texts (zv_duration_format, zv_duration_cause_text, ...)
 *
 * Neither file calls the other: they share only what is here. A rejection crosses from one to
 * the other as data (zv_duration_cause_t), by way of the caller. Nothing here includes Lua; the
 * public interface is duration.h.
 */
#ifndef ZV_DURATION_DURATION_INT_H
#define ZV_DURATION_DURATION_INT_H

#include <stdint.h>

#include "duration.h"

typedef unsigned char uc;

#define TWO63 (UINT64_C(1) << 63)
#define NS_SECOND UINT64_C(1000000000)
#define NS_MINUTE (60 * NS_SECOND)
#define NS_HOUR (60 * NS_MINUTE)
#define NS_DAY (24 * NS_HOUR)

#if defined(__GNUC__)
#define COLD __attribute__((cold, noinline))
#define INLINE __attribute__((always_inline)) inline
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define COLD
#define INLINE inline
#define LIKELY(x) (x)
#define UNLIKELY(x) (x)
#endif

/* Length of the UTF-8 character at p (1 for a byte that does not start a valid one). */
static inline int charlen(const uc *p, const uc *end) {
  int n = *p < 0xC2 ? 1 : *p < 0xE0 ? 2 : *p < 0xF0 ? 3 : *p < 0xF5 ? 4 : 1;
  if (end - p < n) return 1;
  for (int i = 1; i < n; i++)
    if ((p[i] & 0xC0) != 0x80) return 1;
  return n;
}

#endif
