/*
 * zv.h: what every C module of zever shares: the error codes and the allocator.
 *
 * It must stay free of Lua and libuv headers: cores include it, and cores are built into
 * benchmarks and fuzz targets that link neither.
 *
 * Errors. Core functions return int: 0 on success, a negative ZV_E* code on failure, and put
 * their results in out-parameters. The codes come from one X-macro table so that the enum,
 * the names and the messages cannot drift apart (libuv's UV_ERRNO_MAP).
 *
 * Allocation. Every allocation a C module makes goes through zv_alloc / zv_realloc / zv_free.
 * Production builds forward to malloc; the benchmark build (-DZV_ALLOC_STATS) counts calls and
 * bytes so that "allocs/op" is a count, not a guess.
 */
#ifndef ZV_H
#define ZV_H

#include <stddef.h>
#include <stdint.h>

#define ZV_ERRNO_MAP(X)                                       \
  X(NOMEM, "out of memory")                                   \
  X(INVAL, "invalid argument")                                \
  X(RANGE, "value out of range")                              \
  X(TOOLONG, "input too long")                                \
  X(CONFLICT, "conflicting definition")                       \
  X(NOTFOUND, "not found")                                    \
  X(SYNTAX, "syntax error")                                   \
  X(IO, "input/output error")

enum zv__errno_index {
  ZV__ERR_NONE = 0,
#define ZV__X(name, msg) ZV__ERR_##name,
  ZV_ERRNO_MAP(ZV__X)
#undef ZV__X
  ZV__ERR_MAX
};

enum zv_errno {
  ZV_OK = 0,
#define ZV__X(name, msg) ZV_E##name = -ZV__ERR_##name,
  ZV_ERRNO_MAP(ZV__X)
#undef ZV__X
};

/* The message of an error code ("out of memory"); "unknown error" for anything else. */
const char *zv_strerror(int err);
/* The name of an error code without the ZV_E prefix ("NOMEM"); "UNKNOWN" for anything else. */
const char *zv_errname(int err);

/* "00" "01" ... "99": the two digits of n at zv__digit_pairs[2 * n], for writers that turn an
 * integer into text two digits per division (json, duration). */
extern const char zv__digit_pairs[201];

/*
 * The allocator. zv_alloc(0) may return NULL or a unique pointer, as malloc does; callers
 * check for NULL and turn it into ZV_ENOMEM. zv_free(NULL) does nothing.
 */
void *zv_alloc(size_t size);
void *zv_realloc(void *ptr, size_t size);
void zv_free(void *ptr);

#ifdef ZV_ALLOC_STATS
/* Counters of the benchmark build: calls to zv_alloc/zv_realloc, and bytes asked for. */
typedef struct {
  uint64_t allocs;
  uint64_t bytes;
} zv_alloc_stats_t;
void zv_alloc_stats(zv_alloc_stats_t *out);
#endif

/*
 * A fast 64-bit hash of n bytes for in-memory tables (not for anything an attacker may pick to
 * collide on purpose): one multiply per 8-byte word and a final avalanche, so the low bits that
 * pick a stripe or a bucket depend on every input byte. Reads exactly n bytes; allocates
 * nothing. The last partial word is the remaining bytes zero-extended (little-endian), read
 * with at most two loads rather than a memcpy of variable length (a libc call): inline, it costs
 * ~25 instructions for an 11-byte key where FNV-1a's byte loop costs ~70 (the limiter's stripe
 * hash, bench/limiter_bench.c). The stripe and bucket hash of the limiter, the memory cache, the
 * lock table and the queue's topics.
 */
static inline uint64_t zv_hash64(const void *data, size_t n) {
  const unsigned char *s = data;
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;
  uint32_t a, b;
  int big = n >= 8;
  while (n >= 8) {
    __builtin_memcpy(&w, s, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    s += 8;
    n -= 8;
  }
  if (n) {
    if (big) {
      /* The 8 bytes ending at the key's end (the loop read the first ones), shifted down. */
      __builtin_memcpy(&w, s + n - 8, 8);
      w >>= 8 * (8 - n);
    } else if (n >= 4) {
      __builtin_memcpy(&a, s, 4);
      __builtin_memcpy(&b, s + n - 4, 4);
      w = a | ((uint64_t)b >> (8 * (8 - n))) << 32; /* n == 4: nothing above a */
    } else {
      w = s[0] | (uint64_t)s[n / 2] << (8 * (n / 2)) | (uint64_t)s[n - 1] << (8 * (n - 1));
    }
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

/* zv_hash64 cut to 32 bits, out of line (the statement caches, the queue's topics). */
uint32_t zv_hash(const void *s, size_t n);

/*
 * FNV-1a, 64 bits: the seed of MIME boundaries, which must stay what it was (a pinned
 * Message-ID gives the same boundary). In-memory tables use zv_hash64.
 */
static inline uint64_t zv_fnv1a(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

#define ZV_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ZV_CONTAINER_OF(ptr, type, field) ((type *)((char *)(ptr) - offsetof(type, field)))

#endif
