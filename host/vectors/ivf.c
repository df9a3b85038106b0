/*
 * ivf.c: the IVF-flat index (see ivf.h): spherical k-means over the rows, inverted lists of
 * slots, and the probing scan.
 *
 * It must not own or copy the rows (a second copy of 100k x 384 floats would double the
 * set's memory) and must not allocate in a query: the probe scratch is sized at build time.
 *
 * Training is spherical k-means, since scores are cosines: a row's nearest centroid is the one
 * of highest dot product (the row's own norm does not change the argmax, so rows are never
 * normalized in memory), and a centroid is the normalized sum of its members' unit vectors.
 * Seeding is k-means++ with distance 1 - cos over a seeded sample of the rows; an empty list
 * after an iteration is reseeded with a random sample row. Every random choice comes from one
 * splitmix64 stream of opts->seed, and ties go to the lowest centroid, so a build is a
 * function of (rows, options).
 */
#include "ivf.h"

#include <math.h>
#include <string.h>

#include "../core/zv.h"

struct zv_vectors_ivf_s {
  size_t dim, nlist, nprobe, n_built, n_indexed, n_stale;
  float *centroids;
  uint32_t *offsets;
  uint32_t *members;
  uint8_t *stale;
  uint32_t *stale_at;
  zv_vectors_hit_t *probe;
};

static uint64_t next_u64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

/* A uniform double in [0, 1). */
static double next_unit(uint64_t *state) {
  return (double)(next_u64(state) >> 11) / 9007199254740992.0;
}

/* Four packed floats (GCC/Clang vector extension: SSE on x86-64, NEON on arm64). */
typedef float v4f __attribute__((vector_size(16)));

static inline v4f load4(const float *p) {
  v4f v;
  memcpy(&v, p, sizeof v); /* rows are not 16-byte aligned for every dim: movups */
  return v;
}

static inline float hsum(v4f v) { return (v[0] + v[1]) + (v[2] + v[3]); }

/*
 * The dot products of x with the four consecutive centroids at c, into out[4]. Training is
 * compute bound (the centroids stay in L2), and zv_vectors_dot reads two floats per multiply;
 * here each load of x serves four centroids, with two accumulators per centroid so that eight
 * independent additions are in flight: about 1.5x the throughput of four zv_vectors_dot calls.
 * The sums are in a fixed order, so results are deterministic (not bit-equal to dot's).
 */
static void dot4(const float *x, const float *c, size_t dim, float out[4]) {
  const float *c0 = c, *c1 = c + dim, *c2 = c + 2 * dim, *c3 = c + 3 * dim;
  v4f a0 = {0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  size_t j = 0;
  for (; j + 8 <= dim; j += 8) {
    v4f x0 = load4(x + j), x1 = load4(x + j + 4);
    a0 += x0 * load4(c0 + j);
    b0 += x1 * load4(c0 + j + 4);
    a1 += x0 * load4(c1 + j);
    b1 += x1 * load4(c1 + j + 4);
    a2 += x0 * load4(c2 + j);
    b2 += x1 * load4(c2 + j + 4);
    a3 += x0 * load4(c3 + j);
    b3 += x1 * load4(c3 + j + 4);
  }
  float t0 = hsum(a0 + b0), t1 = hsum(a1 + b1), t2 = hsum(a2 + b2), t3 = hsum(a3 + b3);
  for (; j < dim; j++) {
    t0 += x[j] * c0[j];
    t1 += x[j] * c1[j];
    t2 += x[j] * c2[j];
    t3 += x[j] * c3[j];
  }
  out[0] = t0;
  out[1] = t1;
  out[2] = t2;
  out[3] = t3;
}

/* The list of highest dot product with x (ties: the lowest list). */
static size_t nearest(const float *centroids, size_t nlist, size_t dim, const float *x) {
  size_t best = 0, c = 0;
  float best_score = -INFINITY, d[4];
  for (; c + 4 <= nlist; c += 4) {
    dot4(x, centroids + c * dim, dim, d);
    for (int i = 0; i < 4; i++) {
      if (d[i] > best_score) {
        best_score = d[i];
        best = c + (size_t)i;
      }
    }
  }
  for (; c < nlist; c++) {
    float e = zv_vectors_dot(x, centroids + c * dim, dim);
    if (e > best_score) {
      best_score = e;
      best = c;
    }
  }
  return best;
}

/* centroid = x / |x| (|x| = norm > 0). */
static void set_unit(float *centroid, const float *x, float norm, size_t dim) {
  float inv = 1.0f / norm;
  for (size_t j = 0; j < dim; j++) centroid[j] = x[j] * inv;
}

/* k-means++ over the sample: the first centroid a random row, each next one a row drawn with
 * probability proportional to its squared distance (1 - cos) to the nearest centroid so far.
 * dist has room for m floats. */
static void seed_plus_plus(zv_vectors_ivf_t *ix, const float *rows, const float *norms,
                           const uint32_t *pick, size_t m, float *dist, uint64_t *rng) {
  size_t dim = ix->dim;
  size_t first = (size_t)(next_unit(rng) * (double)m);
  uint32_t r0 = pick[first];
  if (norms[r0] > 0) {
    set_unit(ix->centroids, rows + (size_t)r0 * dim, norms[r0], dim);
  } else {
    memset(ix->centroids, 0, dim * sizeof(float));
  }
  for (size_t i = 0; i < m; i++) dist[i] = 2.0f;
  for (size_t c = 1; c < ix->nlist; c++) {
    const float *prev = ix->centroids + (c - 1) * dim;
    double total = 0;
    for (size_t i = 0; i < m; i++) {
      uint32_t r = pick[i];
      if (norms[r] <= 0) {
        dist[i] = 0;
        continue;
      }
      float d = 1.0f - zv_vectors_dot(rows + (size_t)r * dim, prev, dim) / norms[r];
      if (d < 0) d = 0;
      if (d < dist[i]) dist[i] = d;
      total += (double)dist[i] * dist[i];
    }
    size_t chosen = m - 1;
    if (total > 0) {
      double target = next_unit(rng) * total, acc = 0;
      for (size_t i = 0; i < m; i++) {
        acc += (double)dist[i] * dist[i];
        if (acc > target) {
          chosen = i;
          break;
        }
      }
    } else {
      chosen = (size_t)(next_unit(rng) * (double)m);
    }
    uint32_t r = pick[chosen];
    float *cen = ix->centroids + c * dim;
    if (norms[r] > 0) {
      set_unit(cen, rows + (size_t)r * dim, norms[r], dim);
    } else {
      memset(cen, 0, dim * sizeof(float));
    }
  }
}

/* Lloyd iterations over the sample. sums: nlist * dim floats; counts: nlist. */
static void lloyd(zv_vectors_ivf_t *ix, const float *rows, const float *norms,
                  const uint32_t *pick, size_t m, size_t iters, float *sums, uint32_t *counts,
                  uint64_t *rng) {
  size_t dim = ix->dim, nlist = ix->nlist;
  for (size_t it = 0; it < iters; it++) {
    memset(sums, 0, nlist * dim * sizeof(float));
    memset(counts, 0, nlist * sizeof(uint32_t));
    for (size_t i = 0; i < m; i++) {
      uint32_t r = pick[i];
      if (norms[r] <= 0) continue;
      const float *x = rows + (size_t)r * dim;
      size_t c = nearest(ix->centroids, nlist, dim, x);
      float *sum = sums + c * dim, inv = 1.0f / norms[r];
      for (size_t j = 0; j < dim; j++) sum[j] += x[j] * inv;
      counts[c]++;
    }
    for (size_t c = 0; c < nlist; c++) {
      float *cen = ix->centroids + c * dim;
      if (counts[c] == 0) {
        uint32_t r = pick[(size_t)(next_unit(rng) * (double)m)];
        if (norms[r] > 0) set_unit(cen, rows + (size_t)r * dim, norms[r], dim);
        continue;
      }
      float norm = zv_vectors_norm(sums + c * dim, dim);
      if (norm > 0) set_unit(cen, sums + c * dim, norm, dim);
    }
  }
}

void zv_vectors_ivf_free(zv_vectors_ivf_t *ix) {
  if (!ix) return;
  zv_free(ix->centroids);
  zv_free(ix->offsets);
  zv_free(ix->members);
  zv_free(ix->stale);
  zv_free(ix->stale_at);
  zv_free(ix->probe);
  zv_free(ix);
}

int zv_vectors_ivf_build(const float *rows, const float *norms, size_t n, size_t dim,
                         const zv_vectors_ivf_opts_t *opts, zv_vectors_ivf_t **out) {
  *out = NULL;
  if (n == 0 || n > UINT32_MAX || dim == 0) return ZV_EINVAL;
  size_t nlist = opts->nlist ? opts->nlist : (size_t)(sqrt((double)n) + 0.5);
  if (nlist < 1) nlist = 1;
  if (nlist > n) nlist = n;
  size_t iters = opts->iters ? opts->iters : 10;
  size_t m = opts->sample ? opts->sample : ZV_VECTORS_IVF_SAMPLE(nlist);
  if (m < nlist) m = nlist;
  if (m > n) m = n;
  if (nlist > SIZE_MAX / sizeof(float) / dim) return ZV_ENOMEM;

  zv_vectors_ivf_t *ix = zv_alloc(sizeof *ix);
  if (!ix) return ZV_ENOMEM;
  memset(ix, 0, sizeof *ix);
  ix->dim = dim;
  ix->nlist = nlist;
  ix->nprobe = opts->nprobe ? opts->nprobe : ZV_VECTORS_IVF_NPROBE(nlist);
  if (ix->nprobe > nlist) ix->nprobe = nlist;
  ix->n_built = ix->n_indexed = n;
  ix->centroids = zv_alloc(nlist * dim * sizeof(float));
  ix->offsets = zv_alloc((nlist + 1) * sizeof(uint32_t));
  ix->members = zv_alloc(n * sizeof(uint32_t));
  ix->stale = zv_alloc(n);
  ix->stale_at = zv_alloc(n * sizeof(uint32_t));
  ix->probe = zv_alloc(nlist * sizeof(zv_vectors_hit_t));
  /* Temporaries: assign doubles as the sampling permutation; sums, counts, dist train. */
  uint32_t *assign = zv_alloc(n * sizeof(uint32_t));
  uint32_t *pick = zv_alloc(m * sizeof(uint32_t));
  float *sums = zv_alloc(nlist * dim * sizeof(float));
  uint32_t *counts = zv_alloc((nlist + 1) * sizeof(uint32_t));
  float *dist = zv_alloc(m * sizeof(float));
  int rc = 0;
  if (!ix->centroids || !ix->offsets || !ix->members || !ix->stale || !ix->stale_at ||
      !ix->probe || !assign || !pick || !sums || !counts || !dist) {
    rc = ZV_ENOMEM;
    goto done;
  }
  memset(ix->stale, 0, n);

  /* The sample: the first m of a partial Fisher-Yates shuffle of the slots, then in slot
   * order (the training visits rows in memory order). */
  uint64_t rng = opts->seed;
  for (size_t i = 0; i < n; i++) assign[i] = (uint32_t)i;
  for (size_t i = 0; i < m; i++) {
    size_t j = i + (size_t)(next_unit(&rng) * (double)(n - i));
    uint32_t t = assign[i];
    assign[i] = assign[j];
    assign[j] = t;
  }
  memset(ix->stale, 0, n);
  for (size_t i = 0; i < m; i++) ix->stale[assign[i]] = 1;
  for (size_t i = 0, k = 0; i < n; i++) {
    if (ix->stale[i]) pick[k++] = (uint32_t)i;
  }
  memset(ix->stale, 0, n);

  seed_plus_plus(ix, rows, norms, pick, m, dist, &rng);
  lloyd(ix, rows, norms, pick, m, iters, sums, counts, &rng);

  /* Every row to its list, then a counting sort into members (slot order within a list). */
  memset(counts, 0, (nlist + 1) * sizeof(uint32_t));
  for (size_t r = 0; r < n; r++) {
    size_t c = norms[r] > 0 ? nearest(ix->centroids, nlist, dim, rows + r * dim) : 0;
    assign[r] = (uint32_t)c;
    counts[c]++;
  }
  ix->offsets[0] = 0;
  for (size_t c = 0; c < nlist; c++) ix->offsets[c + 1] = ix->offsets[c] + counts[c];
  memcpy(counts, ix->offsets, nlist * sizeof(uint32_t));
  for (size_t r = 0; r < n; r++) ix->members[counts[assign[r]]++] = (uint32_t)r;

done:
  zv_free(assign);
  zv_free(pick);
  zv_free(sums);
  zv_free(counts);
  zv_free(dist);
  if (rc) {
    zv_vectors_ivf_free(ix);
    return rc;
  }
  *out = ix;
  return 0;
}

static void mark_stale(zv_vectors_ivf_t *ix, size_t slot) {
  if (slot >= ix->n_indexed || ix->stale[slot]) return;
  ix->stale[slot] = 1;
  ix->stale_at[ix->n_stale++] = (uint32_t)slot;
}

void zv_vectors_ivf_put(zv_vectors_ivf_t *ix, size_t slot, size_t n) {
  (void)n;
  mark_stale(ix, slot);
}

void zv_vectors_ivf_remove(zv_vectors_ivf_t *ix, size_t slot, size_t n) {
  size_t last = n - 1;
  if (last < ix->n_indexed) {
    /* No tail: the last indexed row moves into slot, and its old place leaves the index. */
    if (slot != last) mark_stale(ix, slot);
    ix->n_indexed = last;
  } else {
    mark_stale(ix, slot); /* a tail row moves into an indexed slot (nothing if slot is tail) */
  }
}

static inline void offer(zv_vectors_topk_t *h, const float *q, float qnorm, const float *rows,
                         const float *norms, size_t dim, uint32_t slot) {
  float nr = norms[slot];
  float d = zv_vectors_dot(q, rows + (size_t)slot * dim, dim);
  zv_vectors_topk_push(h, nr > 0 ? d / (qnorm * nr) : 0.0f, slot);
}

void zv_vectors_ivf_scan(zv_vectors_ivf_t *ix, zv_vectors_topk_t *h, const float *q, float qnorm,
                         const float *rows, const float *norms, size_t n, size_t nprobe) {
  size_t dim = ix->dim, ni = ix->n_indexed < n ? ix->n_indexed : n;
  if (nprobe == 0) nprobe = ix->nprobe;
  if (nprobe > ix->nlist) nprobe = ix->nlist;
  zv_vectors_topk_t lists;
  zv_vectors_topk_init(&lists, ix->probe, nprobe);
  for (size_t c = 0; c < ix->nlist; c++) {
    zv_vectors_topk_push(&lists, zv_vectors_dot(q, ix->centroids + c * dim, dim), (uint32_t)c);
  }
  for (size_t p = 0; p < lists.n; p++) {
    uint32_t c = ix->probe[p].slot;
    const uint32_t *m = ix->members + ix->offsets[c], *end = ix->members + ix->offsets[c + 1];
    for (; m < end; m++) {
      if (*m >= ni || ix->stale[*m]) continue;
      offer(h, q, qnorm, rows, norms, dim, *m);
    }
  }
  for (size_t i = 0; i < ix->n_stale; i++) {
    if (ix->stale_at[i] < ni) offer(h, q, qnorm, rows, norms, dim, ix->stale_at[i]);
  }
  if (n > ni) zv_vectors_scan(h, q, qnorm, rows + ni * dim, norms + ni, n - ni, dim, (uint32_t)ni);
}

void zv_vectors_ivf_info(const zv_vectors_ivf_t *ix, zv_vectors_ivf_info_t *out) {
  out->nlist = ix->nlist;
  out->nprobe = ix->nprobe;
  out->n_built = ix->n_built;
  out->n_indexed = ix->n_indexed;
  out->n_stale = ix->n_stale;
}
