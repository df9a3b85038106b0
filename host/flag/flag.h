/*
 * flag.h: the pure core of feature flags (no Lua): the stable rollout hash. See flag_ffi.h for
 * zv_flag_bucket, the one function the rest of zever calls.
 */
#ifndef ZV_FLAG_H
#define ZV_FLAG_H

#include <stddef.h>
#include <stdint.h>

#include "flag_ffi.h"

/* FNV-1a, 32 bits, continued from h over n bytes (h = 2166136261 starts a hash). */
uint32_t zv_flag_fnv1a32(uint32_t h, const void *s, size_t n);

/* MurmurHash3's fmix32: every input bit moves every output bit. */
uint32_t zv_flag_fmix32(uint32_t h);

#endif
