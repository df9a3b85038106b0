/*
 * metrics_fuzz.c: libFuzzer target for the metrics registry (host/metrics/metrics.c): names,
 * label names and label values from the input, registered, written and rendered.
 *
 * Input: byte 0 picks the kind (counter, gauge, histogram) and the number of labels (bits
 * 2-4); the rest is split at NUL bytes into the metric name, the help text, the label names,
 * then label values (as many series as there are values left) and bucket bounds (as decimal
 * text). Whatever the input, registration must not crash and either fail with a known code or
 * succeed; rendering in both formats must succeed, and since label values and help texts are
 * escaped, no rendered line may be empty and every line must end with a newline.
 * Run: make fuzz FUZZ_TIME=20 (seeds in fuzz/corpus/metrics_fuzz/).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/zv.h"
#include "metrics/metrics.h"

static void check(int ok) {
  if (!ok) abort();
}

static void check_text(const char *p, size_t n) {
  check(n == 0 || p[n - 1] == '\n');
  for (size_t i = 0; i + 1 < n; i++) check(!(p[i] == '\n' && p[i + 1] == '\n'));
  check(n == 0 || p[0] != '\n');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int kind = data[0] % 3;
  size_t nlabels = (data[0] >> 2) & 7;
  /* Fields at NULs, copied so each is a C string. */
  char *buf = malloc(size);
  memcpy(buf, data + 1, size - 1);
  buf[size - 1] = '\0';
  const char *fields[64];
  size_t lens[64], nf = 0, start = 0;
  for (size_t i = 0; i < size && nf < 64; i++) {
    if (buf[i] == '\0') {
      fields[nf] = buf + start;
      lens[nf] = i - start;
      nf++;
      start = i + 1;
    }
  }
  zv_metrics_t *m;
  check(zv_metrics_new(256, &m) == 0);
  if (nf >= 2 + nlabels) {
    const char *name = fields[0], *help = fields[1];
    const char *const *labels = fields + 2;
    double bounds[8];
    size_t nb = 0;
    if (kind == ZV_METRICS_HISTOGRAM) {
      for (size_t i = 2 + nlabels; i < nf && nb < 8; i++) bounds[nb++] = strtod(fields[i], NULL);
    }
    int32_t fam;
    int rc = zv_metrics_family(m, name, help, kind, labels, nlabels, bounds, nb, &fam);
    check(rc == 0 || rc == ZV_EINVAL || rc == ZV_ETOOLONG);
    if (rc == 0) {
      double *cells;
      check(zv_metrics_claim(m, &cells) == 0);
      for (size_t i = 2 + nlabels; i + nlabels <= nf; i += nlabels ? nlabels : nf) {
        int32_t cell;
        rc = zv_metrics_series(m, fam, fields + i, lens + i, nlabels, &cell);
        check(rc == 0 || rc == ZV_ERANGE || rc == ZV_ETOOLONG);
        if (rc == 0 && kind == ZV_METRICS_HISTOGRAM) {
          int32_t n;
          const double *b = zv_metrics_bounds(m, fam, &n);
          zv_metrics_observe(cells, cell, b, n, (double)lens[i]);
        } else if (rc == 0) {
          zv_metrics_add(cells, cell, 1);
        }
        if (nlabels == 0) break;
      }
    }
  }
  for (int fmt = ZV_METRICS_PROMETHEUS; fmt <= ZV_METRICS_OPENMETRICS; fmt++) {
    char *text;
    size_t len;
    check(zv_metrics_render(m, fmt, &text, &len) == 0);
    check(strlen(text) == len);
    check_text(text, len);
    zv_free(text);
  }
  zv_metrics_free(m);
  free(buf);
  return 0;
}
