/*
 * zv.c: the error table and the allocator shared by every C module.
 *
 * The allocator forwards to malloc. With -DZV_ALLOC_STATS (the benchmark build) it also counts
 * calls and requested bytes with relaxed atomics, so that counting works from any thread.
 */
#include "zv.h"

#include <stdlib.h>
#include <string.h>

static const char *const messages[] = {
  "ok",
#define ZV__X(name, msg) msg,
  ZV_ERRNO_MAP(ZV__X)
#undef ZV__X
};

static const char *const names[] = {
  "OK",
#define ZV__X(name, msg) #name,
  ZV_ERRNO_MAP(ZV__X)
#undef ZV__X
};

const char zv__digit_pairs[201] =
  "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
  "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
  "8081828384858687888990919293949596979899";

const char *zv_strerror(int err) {
  if (err > 0 || -err >= ZV__ERR_MAX) return "unknown error";
  return messages[-err];
}

const char *zv_errname(int err) {
  if (err > 0 || -err >= ZV__ERR_MAX) return "UNKNOWN";
  return names[-err];
}

#ifdef ZV_ALLOC_STATS
static uint64_t stat_allocs;
static uint64_t stat_bytes;
#define COUNT(n)                                                  \
  do {                                                            \
    __atomic_add_fetch(&stat_allocs, 1, __ATOMIC_RELAXED);        \
    __atomic_add_fetch(&stat_bytes, (n), __ATOMIC_RELAXED);       \
  } while (0)

void zv_alloc_stats(zv_alloc_stats_t *out) {
  out->allocs = __atomic_load_n(&stat_allocs, __ATOMIC_RELAXED);
  out->bytes = __atomic_load_n(&stat_bytes, __ATOMIC_RELAXED);
}
#else
#define COUNT(n) ((void)0)
#endif

void *zv_alloc(size_t size) {
  COUNT(size);
  return malloc(size);
}

void *zv_realloc(void *ptr, size_t size) {
  COUNT(size);
  return realloc(ptr, size);
}

void zv_free(void *ptr) {
  free(ptr);
}

uint32_t zv_hash(const void *data, size_t n) {
  return (uint32_t)zv_hash64(data, n);
}
