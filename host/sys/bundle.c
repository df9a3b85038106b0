/*
 * bundle.c: reads the payload a zever bundle carries after the host (format: bundle.h). It
 * maps the file read-only, so a file served from the bundle is a pointer into the page cache;
 * it must not write the file, nor trust any offset before checking it against the mapping.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/zv.h"
#include "bundle.h"

#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL

/* The hash's loop calls this four times per 32 bytes: inline, so that each is one load (gcc
 * merges the byte loads; it kept the function out of line, a call and a return per word). */
static inline __attribute__((always_inline)) uint64_t le64(const unsigned char *p) {
  return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
         (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
         (uint64_t)p[7] << 56;
}

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t lane(uint64_t acc, uint64_t w) { return rotl(acc + w * P2, 31) * P1; }

uint64_t zv_bundle_hash(const void *data, size_t n) {
  const unsigned char *p = data, *end = p + n;
  uint64_t a = P1 + P2, b = P2, c = 0, d = (uint64_t)0 - P1, h;
  while (end - p >= 32) {
    a = lane(a, le64(p));
    b = lane(b, le64(p + 8));
    c = lane(c, le64(p + 16));
    d = lane(d, le64(p + 24));
    p += 32;
  }
  h = rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18) + (uint64_t)n;
  while (end - p >= 8) {
    h = rotl(h ^ lane(0, le64(p)), 27) * P1 + P3;
    p += 8;
  }
  while (p < end) h = rotl(h ^ (*p++ * P3), 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}

static int corrupt(zv_bundle_t *b, const char **why, const char *msg) {
  if (why) *why = msg;
  zv_bundle_close(b);
  return ZV_ESYNTAX;
}

/* Reads the index at idx (len bytes) into b->entries; 0 or ZV_ESYNTAX (*why) / ZV_ENOMEM. */
static int read_index(zv_bundle_t *b, const unsigned char *idx, uint64_t len, uint64_t data_len,
                      const char **why) {
  uint64_t pos = 12;
  uint32_t i;
  if (len < 12) return corrupt(b, why, "the index is truncated");
  b->count = le32(idx);
  b->host_hash = le64(idx + 4);
  if (b->count > len / 32) return corrupt(b, why, "the index counts more files than it holds");
  b->entries = zv_alloc(sizeof *b->entries * (b->count ? b->count : 1));
  if (!b->entries) {
    zv_bundle_close(b);
    return ZV_ENOMEM;
  }
  for (i = 0; i < b->count; i++) {
    zv_bundle_entry_t *e = &b->entries[i];
    if (len - pos < 28) return corrupt(b, why, "the index is truncated");
    e->name_len = le32(idx + pos);
    e->off = le64(idx + pos + 4);
    e->size = le64(idx + pos + 12);
    e->hash = le64(idx + pos + 20);
    pos += 28;
    if (e->name_len == 0 || e->name_len > len - pos) return corrupt(b, why, "a name overruns the index");
    e->name = (const char *)idx + pos;
    pos += e->name_len;
    if (e->off > data_len || e->size > data_len - e->off)
      return corrupt(b, why, "a file lies outside the payload");
    if (i > 0) {
      const zv_bundle_entry_t *p = &b->entries[i - 1];
      size_t m = p->name_len < e->name_len ? p->name_len : e->name_len;
      int c = memcmp(p->name, e->name, m);
      if (c > 0 || (c == 0 && p->name_len >= e->name_len))
        return corrupt(b, why, "the index is not sorted");
    }
  }
  if (pos != len) return corrupt(b, why, "the index has trailing bytes");
  return 0;
}

int zv_bundle_open(zv_bundle_t *b, const char *path, const char **why) {
  struct stat st;
  void *map;
  int fd, rc;
  memset(b, 0, sizeof *b);
  if (why) *why = NULL;
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ZV_EIO;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return ZV_EIO;
  }
  if ((uint64_t)st.st_size < ZV_BUNDLE_TRAILER) {
    close(fd);
    return ZV_ENOTFOUND;
  }
  /* A plain host has no magic at its end: a pread of 8 bytes decides before any mapping. */
  {
    char magic[8];
    if (pread(fd, magic, 8, st.st_size - 8) != 8) {
      close(fd);
      return ZV_EIO;
    }
    if (memcmp(magic, ZV_BUNDLE_MAGIC, 8) != 0) {
      close(fd);
      return ZV_ENOTFOUND;
    }
  }
  map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return ZV_EIO;
  rc = zv_bundle_parse(b, map, (size_t)st.st_size, why);
  if (rc == 0) b->mapped = 1;
  else munmap(map, (size_t)st.st_size); /* a failed parse leaves b empty */
  return rc;
}

int zv_bundle_parse(zv_bundle_t *b, const unsigned char *data, size_t len, const char **why) {
  const unsigned char *t;
  uint64_t index_off, index_len, index_hash;
  memset(b, 0, sizeof *b);
  if (why) *why = NULL;
  if (len < ZV_BUNDLE_TRAILER || memcmp(data + len - 8, ZV_BUNDLE_MAGIC, 8) != 0)
    return ZV_ENOTFOUND;
  b->map = data;
  b->map_len = len;
  t = b->map + b->map_len - ZV_BUNDLE_TRAILER;
  b->host_len = le64(t);
  index_off = le64(t + 8);
  index_len = le64(t + 16);
  index_hash = le64(t + 24);
  if (b->host_len > b->map_len - ZV_BUNDLE_TRAILER || index_off < b->host_len ||
      index_off > b->map_len - ZV_BUNDLE_TRAILER ||
      index_len != b->map_len - ZV_BUNDLE_TRAILER - index_off)
    return corrupt(b, why, "the trailer's offsets do not fit the file (truncated or appended to?)");
  if (zv_bundle_hash(b->map + index_off, (size_t)index_len) != index_hash)
    return corrupt(b, why, "the index does not match its hash");
  b->content_hash = index_hash;
  return read_index(b, b->map + index_off, index_len, index_off - b->host_len, why);
}

void zv_bundle_close(zv_bundle_t *b) {
  if (b->map && b->mapped) munmap((void *)b->map, b->map_len);
  zv_free(b->entries);
  memset(b, 0, sizeof *b);
}

const zv_bundle_entry_t *zv_bundle_find(const zv_bundle_t *b, const char *name, size_t len) {
  uint32_t lo = 0, hi = b->count;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    const zv_bundle_entry_t *e = &b->entries[mid];
    size_t m = e->name_len < len ? e->name_len : len;
    int c = memcmp(e->name, name, m);
    if (c == 0) c = e->name_len < len ? -1 : e->name_len > len ? 1 : 0;
    if (c == 0) return e;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

const unsigned char *zv_bundle_data(const zv_bundle_t *b, const zv_bundle_entry_t *e) {
  return b->map + b->host_len + e->off;
}

static zv_bundle_t self;
static int self_open;
/* Set once zv_bundle_verify passed on the process's own bundle (the main thread, before any
 * worker starts): its bytes cannot change under the mapping afterwards (writing to a running
 * executable fails with ETXTBSY), so a file loaded later is not hashed a second time. */
static int self_verified;

int zv_bundle_check(const zv_bundle_t *b, const zv_bundle_entry_t *e) {
  if (b == &self && self_verified) return 0;
  return zv_bundle_hash(zv_bundle_data(b, e), (size_t)e->size) == e->hash ? 0 : ZV_ESYNTAX;
}

int zv_bundle_verify(const zv_bundle_t *b, const zv_bundle_entry_t **bad) {
  uint32_t i;
  *bad = NULL;
  if (b == &self && self_verified) return 0;
  if (zv_bundle_hash(b->map, (size_t)b->host_len) != b->host_hash) return ZV_ESYNTAX;
  for (i = 0; i < b->count; i++) {
    if (zv_bundle_check(b, &b->entries[i]) != 0) {
      *bad = &b->entries[i];
      return ZV_ESYNTAX;
    }
  }
  if (b == &self) self_verified = 1;
  return 0;
}

int zv_bundle_self_open(const char **why) {
  int rc;
  if (self_open) return self.map ? 0 : ZV_ENOTFOUND;
  self_open = 1;
  rc = zv_bundle_open(&self, "/proc/self/exe", why);
  return rc;
}

const zv_bundle_t *zv_bundle_self(void) { return self.map ? &self : NULL; }
