/*
 * mime_ffi.h: the flat send of a mail sink, as LuaJIT's FFI sees it (lua/adapters/mailer/log.lua
 * loads it with require("zever.cdef.mime")). The Makefile runs this file through the preprocessor
 * with -DZV_FFI_CDEF into build/ffi.h, which the host preloads: these are the only declarations of
 * these functions and types, C included, so Lua never types them again.
 *
 * It must hold only declarations ffi.cdef parses: includes stay inside the ZV_FFI_CDEF guard,
 * macros are expanded by the preprocessor.
 */
#ifndef ZV_MIME_FFI_H
#define ZV_MIME_FFI_H

#ifndef ZV_FFI_CDEF
#include <stddef.h>
#include <stdint.h>
#endif

/* A byte span; s == NULL means absent (an empty string is s != NULL, len == 0). */
typedef struct {
  const char *s;
  size_t len;
} zv_mime_str_t;

/* A sink of zever.mime_core (sink:ptr() is one), opaque here. */
typedef struct zv_mime_sink_s zv_mime_sink_t;

/*
 * The FFI entry of the log adapter (lua/adapters/mailer/log.lua): a send whose fields Lua has
 * laid out flat, without the classic C API. addrs holds counts[0] + ... + counts[4] addresses
 * (From, To, Cc, Bcc, Reply-To in ZV_MIME_FROM order); one with parse set is a whole address
 * string for zv_mime_addr_parse, else name (s NULL: none) and email as given. fields are
 * subject, text, html, date, message_id (s NULL: absent). The spans point into Lua strings the
 * caller keeps alive for the call.
 *
 * Returns 0 with *id set to the Message-ID (a span into the sink's buffer, valid until the next
 * send or close); an errno value (> 0) when the write failed; -1 for anything else (closed
 * sink, a refused message, too many addresses, out of memory): the caller then takes the
 * classic path (send_fields), which reports it with the usual kind and message. Allocates
 * nothing once the sink's buffers have grown.
 */
typedef struct {
  zv_mime_str_t name, email;
  int parse;
} zv_mime_flat_addr_t;

int zv_mime_sink_send_flat(zv_mime_sink_t *sink, const zv_mime_flat_addr_t *in,
                           const int *counts, const zv_mime_str_t *fields, double max_bytes,
                           zv_mime_str_t *id);

#endif
