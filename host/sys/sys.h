/*
 * sys.h: what the host knows about its process: where its Lua tree lives, the clocks,
 * directory listing. No Lua here; the binding (l_sys.c) exposes it as zever.sys.
 */
#ifndef ZV_SYS_H
#define ZV_SYS_H

#include <stddef.h>
#include <stdint.h>

#include "sys_ffi.h"

#define ZV_VERSION "0.1.0"

/*
 * Finds the zever home: the folder holding lua/zever, cmd/zever and dsl. In order: $ZEVER_HOME;
 * the folder above the binary's (bin/zever in a checkout); <prefix>/share/zever for an installed
 * binary. Writes a NUL-terminated path into buf; returns 0, ZV_ENOTFOUND or ZV_ETOOLONG.
 */
int zv_sys_home(char *buf, size_t cap);

/* Writes the absolute path of the running binary into buf; returns 0, ZV_EIO or ZV_ETOOLONG. */
int zv_sys_exe(char *buf, size_t cap);

/* Nanoseconds of CLOCK_MONOTONIC. */
uint64_t zv_sys_now_ns(void);

/* Seconds of CLOCK_REALTIME (since the Unix epoch), with sub-microsecond resolution:
 * zv_sys_wall, declared in sys_ffi.h (the FFI calls it too). */

#endif
