/*
 * bundle.h: a zever bundle is one executable file: the zever host followed by a payload of
 * files (the framework's and the app's bytecode, the LAZY modules' shared objects, the app's
 * migrations, templates, static files, zever.yaml) and a fixed trailer. `zever bundle` writes
 * it (lua/zever/bundle.lua); the host reads its own file (/proc/self/exe) at start.
 *
 *   +----------------------+ 0
 *   | the host (ELF)       |
 *   +----------------------+ host_len
 *   | file data, in index  |  each file's bytes, back to back, in name order
 *   | order                |
 *   +----------------------+ index_off
 *   | index                |  u32 count, u64 host_hash, then count entries:
 *   |                      |    u32 name_len, u64 offset (from host_len), u64 size,
 *   |                      |    u64 hash (zv_bundle_hash of the bytes), name bytes
 *   +----------------------+ index_off + index_len
 *   | trailer (48 bytes)   |  u64 host_len, u64 index_off, u64 index_len,
 *   |                      |  u64 index_hash, u64 reserved (0), "ZVBUNDL1"
 *   +----------------------+ EOF
 *
 * Integers are little-endian. Names are sorted bytewise and unique, so a lookup is a binary
 * search. The index hash covers every name, offset, size and file hash (and the host's hash):
 * it is the bundle's content hash, which `version` prints. Opening checks the trailer, the
 * index hash and every bound; a file's own hash is checked when it is read (zv_bundle_check),
 * and zv_bundle_verify checks everything (the host included).
 *
 * The hash is not cryptographic: it catches a damaged or truncated file, not a forged one.
 * No Lua here (l_bundle.c binds it as zever.bundle; runtime/state.c loads modules from it).
 */
#ifndef ZV_BUNDLE_H
#define ZV_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#define ZV_BUNDLE_MAGIC "ZVBUNDL1"
#define ZV_BUNDLE_TRAILER 48

typedef struct {
  const char *name;      /* points into the mapped index, not NUL-terminated */
  uint32_t name_len;
  uint64_t off;          /* from the payload's start (host_len) */
  uint64_t size;
  uint64_t hash;
} zv_bundle_entry_t;

typedef struct {
  const unsigned char *map;  /* the whole file, mapped read-only (or the caller's buffer) */
  size_t map_len;
  int mapped;                /* 1: zv_bundle_close unmaps map */
  uint64_t host_len;
  uint64_t host_hash;
  uint64_t content_hash;     /* the index hash */
  zv_bundle_entry_t *entries;
  uint32_t count;
} zv_bundle_t;

/*
 * Maps path and reads its trailer and index into b. Returns 0 (b owns the mapping and the
 * entry array until zv_bundle_close), ZV_ENOTFOUND when the file carries no bundle (a plain
 * host: b is left empty), ZV_ESYNTAX when it carries a damaged one (the message names what:
 * *why is a static string), ZV_EIO or ZV_ENOMEM.
 */
int zv_bundle_open(zv_bundle_t *b, const char *path, const char **why);

/*
 * Reads the trailer and index of the len bytes at data (a whole bundle file in memory) into b,
 * as zv_bundle_open does after mapping: 0, ZV_ENOTFOUND (no trailer magic), ZV_ESYNTAX (*why)
 * or ZV_ENOMEM. b borrows data (which must outlive it) and owns its entry array.
 */
int zv_bundle_parse(zv_bundle_t *b, const unsigned char *data, size_t len, const char **why);

/* Unmaps (when it mapped) and frees what zv_bundle_open or zv_bundle_parse made; b is empty
 * afterwards. */
void zv_bundle_close(zv_bundle_t *b);

/* The entry named name (len bytes), or NULL. Allocates nothing. */
const zv_bundle_entry_t *zv_bundle_find(const zv_bundle_t *b, const char *name, size_t len);

/* The bytes of e inside the mapping (e->size of them). */
const unsigned char *zv_bundle_data(const zv_bundle_t *b, const zv_bundle_entry_t *e);

/* 0 when e's bytes match its hash, ZV_ESYNTAX otherwise. */
int zv_bundle_check(const zv_bundle_t *b, const zv_bundle_entry_t *e);

/* Checks every file and the host; 0, or ZV_ESYNTAX with *bad the first entry that fails (NULL
 * when the host does). Once it passed on the process's own bundle (zv_bundle_self), it and
 * zv_bundle_check return 0 at once for it: verified once per process. */
int zv_bundle_verify(const zv_bundle_t *b, const zv_bundle_entry_t **bad);

/* The 64-bit hash of n bytes (four independent multiply-xorshift lanes, 32 bytes a step). */
uint64_t zv_bundle_hash(const void *p, size_t n);

/*
 * The process's own bundle: zv_bundle_self_open() opens /proc/self/exe once (main.c, before
 * any thread); zv_bundle_self() returns it, or NULL when the host runs from a plain binary.
 * Returns what zv_bundle_open returned (ZV_ENOTFOUND for a plain binary).
 */
int zv_bundle_self_open(const char **why);
const zv_bundle_t *zv_bundle_self(void);

#endif
