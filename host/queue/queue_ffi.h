/*
 * queue_ffi.h: the pop of the memory queue core, as LuaJIT's FFI sees it
 * (lua/adapters/queue/memory.lua loads it with require("zever.cdef.queue")). The Makefile runs
 * this file through the preprocessor with -DZV_FFI_CDEF into build/ffi.h, which the host preloads:
 * these are the only declarations of these functions and types, C included, so Lua never types
 * them again.
 *
 * It must hold only declarations ffi.cdef parses: includes stay inside the ZV_FFI_CDEF guard,
 * macros are expanded by the preprocessor.
 */
#ifndef ZV_QUEUE_FFI_H
#define ZV_QUEUE_FFI_H

#ifndef ZV_FFI_CDEF
#include <stddef.h>
#include <stdint.h>
#endif

typedef struct zv_queue_s zv_queue_t;

/* What zv_queue_pop hands back; payload then headers are copied into the caller's buffer. */
typedef struct {
  uint64_t id;
  uint64_t lease;
  uint64_t enqueued_ns;
  uint32_t attempt;       /* 1 on the first delivery, + 1 each time it comes back */
  int type;
  size_t payload_len;
  size_t headers_len;
} zv_queue_msg_t;

/*
 * Leases the oldest visible message of topic until now + visibility_ns and copies its payload
 * and then its headers into buf. Returns 0 with *out filled; ZV_ENOTFOUND when nothing is
 * visible; ZV_ERANGE when cap is smaller than payload_len + headers_len (then out->payload_len
 * and out->headers_len say what is needed, and nothing is leased: call again with a larger
 * buffer). Allocates nothing. A topic with no message at all (an idle worker's poll) reads no
 * clock.
 */
int zv_queue_pop(zv_queue_t *q, const char *topic, size_t tlen, uint64_t visibility_ns,
                 uint64_t now_ns, char *buf, size_t cap, zv_queue_msg_t *out);

#endif
