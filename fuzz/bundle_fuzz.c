/*
 * bundle_fuzz.c: libFuzzer target for the bundle reader (host/sys/bundle.c), which the host
 * runs on its own file at every start. Whatever the bytes, parsing must not crash or read
 * outside them, and a bundle it accepts must be consistent: every entry lies inside the data,
 * is found by its own name, and checking or verifying it reads only its bytes.
 * Run: make fuzz FUZZ_TIME=20 (seeds in fuzz/corpus/bundle_fuzz/: small valid bundles).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/zv.h"
#include "sys/bundle.h"

static void check(int ok) {
  if (!ok) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  zv_bundle_t b;
  const zv_bundle_entry_t *bad;
  const char *why = NULL;
  /* A copy of exactly size bytes, so that ASan sees any read past the end. */
  unsigned char *copy = malloc(size ? size : 1);
  int rc;
  if (!copy) return 0;
  memcpy(copy, data, size);
  rc = zv_bundle_parse(&b, copy, size, &why);
  check(rc == 0 || rc == ZV_ENOTFOUND || rc == ZV_ESYNTAX || rc == ZV_ENOMEM);
  check(rc != ZV_ESYNTAX || why != NULL);
  if (rc == 0) {
    for (uint32_t i = 0; i < b.count; i++) {
      const zv_bundle_entry_t *e = &b.entries[i];
      const unsigned char *p = zv_bundle_data(&b, e);
      check(p >= copy && p + e->size <= copy + size);
      check(zv_bundle_find(&b, e->name, e->name_len) == e);
      (void)zv_bundle_check(&b, e);
    }
    check(zv_bundle_find(&b, "", 0) == NULL);
    (void)zv_bundle_verify(&b, &bad);
    zv_bundle_close(&b);
  }
  free(copy);
  return 0;
}
