/*
 * flag.c: the rollout hash of feature flags (zv_flag_bucket). A key's bucket must never change
 * between releases, machines or word sizes: a user in a 10 % rollout stays in it. So the hash is
 * spelled out here (FNV-1a 32 and fmix32, both published) and never replaced by a faster one;
 * adapters.flag.rules holds the same function in Lua and the specs compare the two.
 * Allocates nothing, reads no global state.
 */
#include "flag.h"

uint32_t zv_flag_fnv1a32(uint32_t h, const void *s, size_t n) {
  const unsigned char *p = s;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 16777619u;
  }
  return h;
}

uint32_t zv_flag_fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

uint32_t zv_flag_bucket(const char *name, size_t nlen, const char *key, size_t klen) {
  uint32_t h = zv_flag_fnv1a32(2166136261u, name, nlen);
  h *= 16777619u; /* the zero byte between name and key: h ^ 0 is h */
  h = zv_flag_fnv1a32(h, key, klen);
  return zv_flag_fmix32(h) % 10000u;
}
