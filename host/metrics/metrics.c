/*
 * metrics.c: the metrics registry (metrics.h): families and series registered under a mutex,
 * per-worker slots of cells written without locks, and the Prometheus/OpenMetrics renderer.
 * It must not know Lua, libuv or HTTP; it never allocates on the hot path (add, observe).
 */
#include "metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/registry.h"
#include "../core/zv.h"

typedef struct {
  char *name;
  char *help;
  int kind;
  size_t nlabels;
  char *labels[ZV_METRICS_MAX_LABELS];
  double *bounds;
  size_t nb;
} family_t;

typedef struct {
  int32_t family;
  int32_t cell;
  uint64_t hash;
  char *text; /* the label pairs, rendered and escaped: route="/a",method="GET" */
  size_t len;
} series_t;

struct zv_metrics_s {
  pthread_mutex_t lock;
  size_t max_cells, used;
  family_t *fams;
  size_t nfam, capfam;
  series_t *series;
  size_t nser, capser;
  double *slots[ZV_METRICS_MAX_SLOTS];
  unsigned char taken[ZV_METRICS_MAX_SLOTS];
  int nslots; /* slots[0 .. nslots) may be allocated */
};

/* --- the hot path ------------------------------------------------------------------------- */

/*
 * Relaxed 8-byte atomics on the cell's bits: on x86-64 and arm64 these are the plain loads and
 * stores, but they tell the compiler (and the sanitizers) that a scrape on another thread reads
 * the cell.
 */
typedef union {
  double d;
  uint64_t u;
} bits_t;

static inline double load_cell(const double *p) {
  bits_t b;
  b.u = __atomic_load_n((const uint64_t *)(const void *)p, __ATOMIC_RELAXED);
  return b.d;
}

static inline void store_cell(double *p, double v) {
  bits_t b;
  b.d = v;
  __atomic_store_n((uint64_t *)(void *)p, b.u, __ATOMIC_RELAXED);
}

static inline void observe(double *cells, int32_t cell, const double *bounds, int32_t nb, double v) {
  int32_t i = 0;
  while (i < nb && !(v <= bounds[i])) i++;
  double *p = cells + cell;
  store_cell(p + i, load_cell(p + i) + 1);
  if (v == v) store_cell(p + nb + 1, load_cell(p + nb + 1) + v);
}

static inline double clock_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void zv_metrics_add(double *cells, int32_t cell, double v) {
  double *p = cells + cell;
  store_cell(p, load_cell(p) + v);
}

void zv_metrics_observe(double *cells, int32_t cell, const double *bounds, int32_t nb, double v) {
  observe(cells, cell, bounds, nb, v);
}

double zv_metrics_clock(void) {
  return clock_now();
}

void zv_metrics_request(const zv_metrics_pair_t *p, double t0) {
  double *c = p->cells + p->counter;
  store_cell(c, load_cell(c) + 1);
  observe(p->cells, p->hist, p->bounds, p->nb, clock_now() - t0);
}

/* --- registry ------------------------------------------------------------------------------ */

int zv_metrics_new(size_t max_cells, zv_metrics_t **out) {
  if (max_cells == 0 || max_cells > (size_t)INT32_MAX) return ZV_EINVAL;
  zv_metrics_t *m = zv_alloc(sizeof *m);
  if (!m) return ZV_ENOMEM;
  memset(m, 0, sizeof *m);
  pthread_mutex_init(&m->lock, NULL);
  m->max_cells = max_cells;
  *out = m;
  return 0;
}

void zv_metrics_free(zv_metrics_t *m) {
  if (!m) return;
  for (size_t i = 0; i < m->nfam; i++) {
    family_t *f = &m->fams[i];
    zv_free(f->name);
    zv_free(f->help);
    for (size_t j = 0; j < f->nlabels; j++) zv_free(f->labels[j]);
    zv_free(f->bounds);
  }
  for (size_t i = 0; i < m->nser; i++) zv_free(m->series[i].text);
  for (size_t i = 0; i < ZV_METRICS_MAX_SLOTS; i++) zv_free(m->slots[i]);
  zv_free(m->fams);
  zv_free(m->series);
  pthread_mutex_destroy(&m->lock);
  zv_free(m);
}

static zv_registry_t registries = ZV_REGISTRY_INIT;

static int create(const void *arg, void **obj) {
  return zv_metrics_new(*(const size_t *)arg, (zv_metrics_t **)obj);
}

int zv_metrics_open(const char *name, size_t max_cells, zv_metrics_t **out) {
  return zv_registry_open(&registries, name, NULL, create, &max_cells, (void **)out);
}

void zv_metrics_release(zv_metrics_t *m) {
  if (zv_registry_release(&registries, m)) zv_metrics_free(m);
}

static char *dup(const char *s, size_t n) {
  char *p = zv_alloc(n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* for a metric (colon = 1), [a-zA-Z_][a-zA-Z0-9_]* for a label. */
static int valid_name(const char *s, int colon) {
  size_t n = strlen(s);
  if (n == 0) return ZV_EINVAL;
  if (n > ZV_METRICS_MAX_NAME) return ZV_ETOOLONG;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
             (i > 0 && c >= '0' && c <= '9');
    if (!ok) return ZV_EINVAL;
  }
  return 0;
}

static int same_family(const family_t *f, int kind, const char *const *labels, size_t nlabels,
                       const double *bounds, size_t nb) {
  if (f->kind != kind || f->nlabels != nlabels || f->nb != nb) return 0;
  for (size_t i = 0; i < nlabels; i++) {
    if (strcmp(f->labels[i], labels[i]) != 0) return 0;
  }
  for (size_t i = 0; i < nb; i++) {
    if (f->bounds[i] != bounds[i]) return 0;
  }
  return 1;
}

static int check_family(const char *name, int kind, const char *const *labels, size_t nlabels,
                        const double *bounds, size_t nbounds) {
  int rc = valid_name(name, 1);
  if (rc) return rc;
  if (kind < ZV_METRICS_COUNTER || kind > ZV_METRICS_HISTOGRAM) return ZV_EINVAL;
  if (nlabels > ZV_METRICS_MAX_LABELS) return ZV_ETOOLONG;
  for (size_t i = 0; i < nlabels; i++) {
    if ((rc = valid_name(labels[i], 0))) return rc;
    if (strncmp(labels[i], "__", 2) == 0) return ZV_EINVAL;
    if (kind == ZV_METRICS_HISTOGRAM && strcmp(labels[i], "le") == 0) return ZV_EINVAL;
    for (size_t j = 0; j < i; j++) {
      if (strcmp(labels[i], labels[j]) == 0) return ZV_EINVAL;
    }
  }
  if (kind != ZV_METRICS_HISTOGRAM && nbounds) return ZV_EINVAL;
  if (kind == ZV_METRICS_HISTOGRAM && nbounds == 0) return ZV_EINVAL;
  if (nbounds > ZV_METRICS_MAX_BOUNDS) return ZV_ETOOLONG;
  for (size_t i = 0; i < nbounds; i++) {
    if (!isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1]))) return ZV_EINVAL;
  }
  return 0;
}

static int add_family(zv_metrics_t *m, const char *name, const char *help, int kind,
                      const char *const *labels, size_t nlabels, const double *bounds,
                      size_t nb, int32_t *family) {
  if (m->nfam == m->capfam) {
    size_t cap = m->capfam ? m->capfam * 2 : 16;
    family_t *p = zv_realloc(m->fams, cap * sizeof *p);
    if (!p) return ZV_ENOMEM;
    m->fams = p;
    m->capfam = cap;
  }
  family_t f;
  memset(&f, 0, sizeof f);
  f.kind = kind;
  f.name = dup(name, strlen(name));
  f.help = dup(help ? help : "", help ? strlen(help) : 0);
  int ok = f.name && f.help;
  for (size_t i = 0; i < nlabels; i++) {
    f.labels[i] = dup(labels[i], strlen(labels[i]));
    ok = ok && f.labels[i];
  }
  f.nlabels = nlabels;
  if (nb) {
    f.bounds = zv_alloc(nb * sizeof *bounds);
    if (f.bounds) memcpy(f.bounds, bounds, nb * sizeof *bounds);
    ok = ok && f.bounds;
  }
  f.nb = nb;
  if (!ok) {
    zv_free(f.name);
    zv_free(f.help);
    for (size_t i = 0; i < nlabels; i++) zv_free(f.labels[i]);
    zv_free(f.bounds);
    return ZV_ENOMEM;
  }
  m->fams[m->nfam] = f;
  *family = (int32_t)m->nfam++;
  return 0;
}

int zv_metrics_family(zv_metrics_t *m, const char *name, const char *help, int kind,
                      const char *const *labels, size_t nlabels, const double *bounds,
                      size_t nbounds, int32_t *family) {
  int rc = check_family(name, kind, labels, nlabels, bounds, nbounds);
  if (rc) return rc;
  pthread_mutex_lock(&m->lock);
  for (size_t i = 0; i < m->nfam; i++) {
    if (strcmp(m->fams[i].name, name) == 0) {
      rc = same_family(&m->fams[i], kind, labels, nlabels, bounds, nbounds) ? 0 : ZV_ECONFLICT;
      if (!rc) *family = (int32_t)i;
      pthread_mutex_unlock(&m->lock);
      return rc;
    }
  }
  rc = add_family(m, name, help, kind, labels, nlabels, bounds, nbounds, family);
  pthread_mutex_unlock(&m->lock);
  return rc;
}

const double *zv_metrics_bounds(zv_metrics_t *m, int32_t family, int32_t *nb) {
  pthread_mutex_lock(&m->lock);
  const double *b = NULL;
  *nb = 0;
  if (family >= 0 && (size_t)family < m->nfam) {
    b = m->fams[family].bounds;
    *nb = (int32_t)m->fams[family].nb;
  }
  pthread_mutex_unlock(&m->lock);
  return b;
}

/* --- the label text: k="v" pairs, values escaped as the exposition formats want -------------- */

typedef struct {
  char *p;
  size_t len, cap;
  int err; /* sticky: after a failed append nothing more is written */
} buf_t;

static void put(buf_t *b, const char *s, size_t n) {
  if (b->err) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = zv_realloc(b->p, cap);
    if (!p) {
      b->err = ZV_ENOMEM;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void puts_(buf_t *b, const char *s) {
  put(b, s, strlen(s));
}

/* Escapes \ and newline, and " when quote is set (label values; OpenMetrics' HELP too). */
static void put_escaped(buf_t *b, const char *s, size_t n, int quote) {
  size_t start = 0;
  for (size_t i = 0; i < n; i++) {
    const char *rep = NULL;
    if (s[i] == '\\') rep = "\\\\";
    else if (s[i] == '\n') rep = "\\n";
    else if (quote && s[i] == '"') rep = "\\\"";
    if (rep) {
      put(b, s + start, i - start);
      puts_(b, rep);
      start = i + 1;
    }
  }
  put(b, s + start, n - start);
}

static uint64_t fnv(const char *s, size_t n) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

static int32_t cells_of(const family_t *f) {
  return f->kind == ZV_METRICS_HISTOGRAM ? (int32_t)f->nb + 2 : 1;
}

int zv_metrics_series(zv_metrics_t *m, int32_t family, const char *const *values,
                      const size_t *lens, size_t nvalues, int32_t *cell) {
  for (size_t i = 0; i < nvalues; i++) {
    if (lens[i] > ZV_METRICS_MAX_VALUE) return ZV_ETOOLONG;
  }
  pthread_mutex_lock(&m->lock);
  int rc = 0;
  buf_t b = {NULL, 0, 0, 0};
  if (family < 0 || (size_t)family >= m->nfam || m->fams[family].nlabels != nvalues) {
    rc = ZV_EINVAL;
    goto done;
  }
  family_t *f = &m->fams[family];
  put(&b, "", 0);
  for (size_t i = 0; i < nvalues; i++) {
    if (i) put(&b, ",", 1);
    puts_(&b, f->labels[i]);
    put(&b, "=\"", 2);
    put_escaped(&b, values[i], lens[i], 1);
    put(&b, "\"", 1);
  }
  if (b.err) {
    rc = b.err;
    goto done;
  }
  uint64_t h = fnv(b.p, b.len);
  for (size_t i = 0; i < m->nser; i++) {
    series_t *s = &m->series[i];
    if (s->family == family && s->hash == h && s->len == b.len && memcmp(s->text, b.p, b.len) == 0) {
      *cell = s->cell;
      goto done;
    }
  }
  int32_t need = cells_of(f);
  if (m->used + (size_t)need > m->max_cells) {
    rc = ZV_ERANGE;
    goto done;
  }
  if (m->nser == m->capser) {
    size_t cap = m->capser ? m->capser * 2 : 64;
    series_t *p = zv_realloc(m->series, cap * sizeof *p);
    if (!p) {
      rc = ZV_ENOMEM;
      goto done;
    }
    m->series = p;
    m->capser = cap;
  }
  series_t *s = &m->series[m->nser++];
  s->family = family;
  s->cell = (int32_t)m->used;
  s->hash = h;
  s->text = b.p;
  s->len = b.len;
  b.p = NULL;
  m->used += (size_t)need;
  *cell = s->cell;
done:
  pthread_mutex_unlock(&m->lock);
  zv_free(b.p);
  return rc;
}

/* --- slots --------------------------------------------------------------------------------- */

int zv_metrics_claim(zv_metrics_t *m, double **cells) {
  int rc = ZV_ERANGE;
  pthread_mutex_lock(&m->lock);
  for (int i = 0; i < ZV_METRICS_MAX_SLOTS; i++) {
    if (m->taken[i]) continue;
    if (!m->slots[i]) {
      m->slots[i] = zv_alloc(m->max_cells * sizeof(double));
      if (!m->slots[i]) {
        rc = ZV_ENOMEM;
        break;
      }
      for (size_t j = 0; j < m->max_cells; j++) m->slots[i][j] = 0;
    }
    m->taken[i] = 1;
    if (i >= m->nslots) m->nslots = i + 1;
    *cells = m->slots[i];
    rc = i;
    break;
  }
  pthread_mutex_unlock(&m->lock);
  return rc;
}

void zv_metrics_unclaim(zv_metrics_t *m, int slot) {
  if (slot < 0 || slot >= ZV_METRICS_MAX_SLOTS) return;
  pthread_mutex_lock(&m->lock);
  m->taken[slot] = 0;
  pthread_mutex_unlock(&m->lock);
}

/* Sum of one cell over the allocated slots; the caller holds the lock (slots[] stable). */
static double merged(const zv_metrics_t *m, int32_t cell) {
  double v = 0;
  for (int i = 0; i < m->nslots; i++) {
    if (m->slots[i]) v += load_cell(m->slots[i] + cell);
  }
  return v;
}

double zv_metrics_value(zv_metrics_t *m, int32_t cell) {
  pthread_mutex_lock(&m->lock);
  double v = cell >= 0 && (size_t)cell < m->used ? merged(m, cell) : 0;
  pthread_mutex_unlock(&m->lock);
  return v;
}

/* --- rendering ----------------------------------------------------------------------------- */

/* The shortest %g text that reads back as v; +Inf, -Inf and NaN as the formats spell them. */
static void fmt_number(char *s, size_t cap, double v) {
  if (v != v) {
    snprintf(s, cap, "NaN");
  } else if (isinf(v)) {
    snprintf(s, cap, "%s", v > 0 ? "+Inf" : "-Inf");
  } else if (v == floor(v) && fabs(v) < 1e15) {
    snprintf(s, cap, "%.0f", v);
  } else {
    for (int prec = 15; prec <= 17; prec++) {
      snprintf(s, cap, "%.*g", prec, v);
      if (strtod(s, NULL) == v) break;
    }
  }
}

static void put_number(buf_t *b, double v) {
  char s[40];
  fmt_number(s, sizeof s, v);
  puts_(b, s);
}

/* name{labels[,extra]} value\n; extra is le="..." of a bucket, or NULL. */
static void put_sample(buf_t *b, const char *name, const char *suffix, const series_t *s,
                       const char *extra, double v) {
  puts_(b, name);
  puts_(b, suffix);
  if (s->len || extra) {
    put(b, "{", 1);
    put(b, s->text, s->len);
    if (extra) {
      if (s->len) put(b, ",", 1);
      puts_(b, extra);
    }
    put(b, "}", 1);
  }
  put(b, " ", 1);
  put_number(b, v);
  put(b, "\n", 1);
}

static const char *const TYPES[] = {"counter", "gauge", "histogram"};

static void render_family(const zv_metrics_t *m, const family_t *f, int32_t id, int om, buf_t *b) {
  /* OpenMetrics names a counter family without _total and its sample with it. */
  size_t n = strlen(f->name);
  char name[ZV_METRICS_MAX_NAME + 1];
  memcpy(name, f->name, n + 1);
  const char *suffix = "";
  if (om && f->kind == ZV_METRICS_COUNTER) {
    if (n > 6 && strcmp(name + n - 6, "_total") == 0) name[n - 6] = '\0';
    suffix = "_total";
  }
  puts_(b, "# HELP ");
  puts_(b, name);
  put(b, " ", 1);
  put_escaped(b, f->help, strlen(f->help), om);
  puts_(b, "\n# TYPE ");
  puts_(b, name);
  put(b, " ", 1);
  puts_(b, TYPES[f->kind]);
  put(b, "\n", 1);
  for (size_t i = 0; i < m->nser; i++) {
    const series_t *s = &m->series[i];
    if (s->family != id) continue;
    if (f->kind != ZV_METRICS_HISTOGRAM) {
      put_sample(b, name, suffix, s, NULL, merged(m, s->cell));
      continue;
    }
    double cum = 0;
    for (size_t j = 0; j <= f->nb; j++) {
      char num[40], le[48];
      cum += merged(m, s->cell + (int32_t)j);
      fmt_number(num, sizeof num, j < f->nb ? f->bounds[j] : INFINITY);
      snprintf(le, sizeof le, "le=\"%s\"", num);
      put_sample(b, name, "_bucket", s, le, cum);
    }
    put_sample(b, name, "_sum", s, NULL, merged(m, s->cell + (int32_t)f->nb + 1));
    put_sample(b, name, "_count", s, NULL, cum);
  }
}

int zv_metrics_render(zv_metrics_t *m, int fmt, char **out, size_t *len) {
  buf_t b = {NULL, 0, 0, 0};
  put(&b, "", 0);
  pthread_mutex_lock(&m->lock);
  for (size_t i = 0; i < m->nfam; i++) {
    render_family(m, &m->fams[i], (int32_t)i, fmt == ZV_METRICS_OPENMETRICS, &b);
  }
  pthread_mutex_unlock(&m->lock);
  if (b.err) {
    zv_free(b.p);
    return b.err;
  }
  *out = b.p;
  *len = b.len;
  return 0;
}
