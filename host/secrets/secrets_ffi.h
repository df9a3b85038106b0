/*
 * secrets_ffi.h: the file check of the file-based secrets adapter, as LuaJIT's FFI sees it
 * (adapters.secrets.file loads it with require("zever.cdef.secrets")); preprocessed with
 * -DZV_FFI_CDEF into build/ffi.h. It must hold only declarations ffi.cdef parses.
 */
#ifndef ZV_SECRETS_FFI_H
#define ZV_SECRETS_FFI_H

#ifndef ZV_FFI_CDEF
#include <stdint.h>
#endif

/*
 * stat(2) of path, following symlinks (secrets
 * mounted by Docker and Kubernetes are symlinks into a tmpfs): fills *mode (permission bits and
 * file type, st_mode), *uid (the owner) and *euid (this process's effective uid). Returns 0, or
 * a negative errno. Allocates nothing.
 */
int zv_secrets_stat(const char *path, uint32_t *mode, uint32_t *uid, uint32_t *euid);

#endif
