/*
 * duration.h: the duration codec: parse and write durations as exact int64 nanoseconds in three
 * formats, in this canonical order:
 *
 *   iso8601  [+-]P[nD][T[nH][nM][nS]]   PT1H30M, PT0.5S, -PT1M, P1DT2H (D only with days)
 *   units    Go's time.ParseDuration    1h30m, 1.5h, 300ms, 2us, 2µs, 15ns, -2m, 0 (d with days)
 *   nano     [+-]digits                 integer nanoseconds: 1500000000
 *
 * Parsing follows Go's time.ParseDuration for units, fractions included (they are truncated at
 * the nanosecond, with Go's float64 step, so results match Go bit for bit), except that a sum
 * past 2^64 is an overflow here where Go wraps. Writing units is Go's Duration.String ("1h30m0s",
 * "1.5µs", "0s"); iso8601 writes the shortest exact form ("PT1H30M", "PT0.5S", "PT0S"); nano
 * writes the integer. Every int64 value written in any format reads back to itself.
 *
 * Nothing here allocates, keeps state or takes a lock; nothing includes Lua. A rejected input
 * costs no text: the reason is a code plus a span of the input (zv_duration_cause_t), and text is
 * made only when asked for (zv_duration_cause_text, zv_duration_message).
 */
#ifndef ZV_DURATION_H
#define ZV_DURATION_H

#include <stddef.h>
#include <stdint.h>

#include "duration_ffi.h"

/* Formats: one bit each, so that a set of accepted formats is a mask. */
#define ZV_DURATION_ISO8601 1u
#define ZV_DURATION_UNITS 2u
#define ZV_DURATION_NANO 4u
#define ZV_DURATION_ALL 7u

/* Room for any formatted duration plus its NUL ("-P106751DT23H47M16.854775808S" is 29 bytes). */
#define ZV_DURATION_BUFSIZE 32
/* Room for any message or cause text plus its NUL: quoted input is cut at 96 bytes of text. */
#define ZV_DURATION_MSGSIZE 256

/*
 * Why an input was rejected. A template's %s is the quoted span of the input ("end of input"
 * when the span is empty at the end); %F is the name of the format in zv_duration_cause_t.format.
 */
#define ZV_DURATION_CAUSE_MAP(X)                                              \
  X(NONE, "no error")                                                         \
  X(EMPTY, "empty input")                                                     \
  X(SPACE, "whitespace is not allowed")                                       \
  X(NUMBER, "expected a number at %s")                                        \
  X(UNIT, "unknown unit %s")                                                  \
  X(NOUNIT, "missing unit after %s")                                          \
  X(DAYS, "days (%s) are not allowed")                                        \
  X(NOP, "expected \"P\" at %s")                                              \
  X(DESIGNATOR, "unsupported designator %s (years, months and weeks)")        \
  X(ORDER, "unit %s out of place")                                            \
  X(FRACTION, "only the last component may have a fraction")                  \
  X(NOCOMPONENT, "missing a component after %s")                              \
  X(SYNTAX, "unexpected %s")                                                  \
  X(OVERFLOW, "out of range of int64 nanoseconds")                            \
  X(NOTACCEPTED, "%F is not accepted")                                        \
  X(NOTINTEGER, "not an integer number of nanoseconds")                       \
  X(INEXACT, "beyond 2^53, a Lua number is not exact (use a string or int64)")
/* NOTINTEGER and INEXACT are found by the Lua module, which reads numbers itself; their text
 * lives here with the others. */

enum zv_duration_cause_code {
#define ZV__X(name, tmpl) ZV_DURATION_C##name,
  ZV_DURATION_CAUSE_MAP(ZV__X)
#undef ZV__X
  ZV_DURATION_CMAX
};

/* The name of a format bit ("iso8601", "units", "nano"); NULL for anything else. */
const char *zv_duration_format_name(unsigned fmt);
/* The format bit of a name; 0 when the name is unknown. */
unsigned zv_duration_format_id(const char *name, size_t len);

/*
 * Writes the text of a cause into buf (NUL-terminated, cut to cap - 1 bytes), quoting the span of
 * input it points at, e.g. `unknown unit "x"`. Returns the length written. input is the string
 * the cause came from; it may be NULL when the cause has no span.
 */
size_t zv_duration_cause_text(const zv_duration_cause_t *cause, const char *input, size_t len,
                              char *buf, size_t cap);

/*
 * Writes the message of a rejection into buf (NUL-terminated, cut to cap - 1 bytes):
 *   invalid duration "1x": want iso8601 or units or nano
 * The written format comes first, then the other accepted ones in canonical order. quote != 0
 * quotes the input as Go's strconv.Quote would (cut after 96 bytes of text, then "...");
 * quote == 0 copies it as is (a number already turned into text). Returns the length written.
 */
size_t zv_duration_message(const char *input, size_t len, int quote, unsigned write,
                           unsigned accept, char *buf, size_t cap);

#endif
