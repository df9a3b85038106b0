/*
 * flag_ffi.h: the rollout hash of feature flags, as LuaJIT's FFI sees it (adapters.flag.rules
 * loads it with require("zever.cdef.flag")). The Makefile preprocesses this file with
 * -DZV_FFI_CDEF into build/ffi.h: the one declaration of the function, C included.
 *
 * It must hold only declarations ffi.cdef parses.
 */
#ifndef ZV_FLAG_FFI_H
#define ZV_FLAG_FFI_H

#ifndef ZV_FFI_CDEF
#include <stddef.h>
#include <stdint.h>
#endif

/*
 * The rollout bucket (0..9999) of key for the flag name: FNV-1a 32 over name, one zero byte and
 * key, then MurmurHash3's 32-bit finaliser, modulo 10000. The same on every machine and build;
 * adapters.flag.rules keeps the Lua reference of it. Reads exactly nlen and klen bytes;
 * allocates nothing.
 */
uint32_t zv_flag_bucket(const char *name, size_t nlen, const char *key, size_t klen);

#endif
