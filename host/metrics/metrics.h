/*
 * metrics.h: counters, gauges and histograms shared by every worker thread, written without
 * locks and merged when scraped. It must not know Lua, libuv or HTTP.
 *
 *   registry "default"  (zv_metrics_open: one per name per process, zv_registry)
 *     families  [0] http_requests_total counter  labels (route, method, status)
 *               [1] http_request_duration_seconds histogram bounds {0.005, ..., 10}
 *     series    [0] family 0  route="/hello",method="GET",status="200"   cell 0    (1 cell)
 *               [1] family 1  route="/hello",method="GET"                cell 1    (nb + 2)
 *     slots     [0] worker 1: double cells[max_cells]   <- written by worker 1 only
 *               [1] worker 2: double cells[max_cells]   <- written by worker 2 only
 *               [2] (free: values kept, the next claimer continues them)
 *
 * Registration (family, series) is the slow path: it takes the registry's mutex, interns the
 * label values and hands out cell indexes once; a worker keeps the index. The hot path is an
 * index plus an add into the worker's own slot (metrics_ffi.h). A scrape (zv_metrics_render)
 * takes the mutex and sums each cell over every slot; a cell is read and written with relaxed
 * 8-byte atomics, so a scrape sees every increment or misses the one in flight, never a torn
 * value. A slot released by a worker that exits keeps its values (counters never go down) and
 * is handed to the next worker that claims one, so `zever dev` reloads reuse slots.
 *
 * A histogram of nb bounds owns nb + 2 cells: nb + 1 bucket counts (not cumulative; the last is
 * +Inf) and the sum. Its count is the sum of its buckets. Gauges merge by summing the workers'
 * values: a worker's gauge is its own share (in-flight requests).
 */
#ifndef ZV_METRICS_H
#define ZV_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "metrics_ffi.h"

#define ZV_METRICS_MAX_SLOTS 256
#define ZV_METRICS_MAX_LABELS 8
#define ZV_METRICS_MAX_BOUNDS 64
#define ZV_METRICS_MAX_NAME 200
#define ZV_METRICS_MAX_VALUE 1024

enum { ZV_METRICS_COUNTER = 0, ZV_METRICS_GAUGE = 1, ZV_METRICS_HISTOGRAM = 2 };
enum { ZV_METRICS_PROMETHEUS = 0, ZV_METRICS_OPENMETRICS = 1 };

typedef struct zv_metrics_s zv_metrics_t;

/*
 * Creates a registry of max_cells cells per slot (a counter or gauge series takes 1, a
 * histogram series nb + 2). Returns 0 with *out set, ZV_EINVAL for max_cells 0, or ZV_ENOMEM.
 * Slots are allocated when claimed.
 */
int zv_metrics_new(size_t max_cells, zv_metrics_t **out);
void zv_metrics_free(zv_metrics_t *m);

/*
 * The process-wide registry called name (created by the first open with max_cells; a later
 * open shares it whatever its max_cells). Release drops one reference; the last frees it.
 */
int zv_metrics_open(const char *name, size_t max_cells, zv_metrics_t **out);
void zv_metrics_release(zv_metrics_t *m);

/*
 * Declares a family: name and label names must match [a-zA-Z_:][a-zA-Z0-9_:]* ([a-zA-Z_]... for
 * labels, never "le" or a "__" prefix); bounds (histograms only) strictly ascending and finite.
 * Declaring a name again with the same kind, labels and bounds returns the same id; anything
 * else is ZV_ECONFLICT. Returns 0 with *family set, ZV_EINVAL for a bad name, label or bounds,
 * ZV_ETOOLONG over the limits above, ZV_ENOMEM. help is copied (may be NULL).
 */
int zv_metrics_family(zv_metrics_t *m, const char *name, const char *help, int kind,
                      const char *const *labels, size_t nlabels, const double *bounds,
                      size_t nbounds, int32_t *family);

/*
 * The first cell of the series of family with these label values (one per label name, any
 * bytes, each up to ZV_METRICS_MAX_VALUE): registered on first use, the same cell after.
 * Returns 0 with *cell set, ZV_EINVAL for a wrong count or family, ZV_ETOOLONG for a long value,
 * ZV_ERANGE when the registry's cells are used up, ZV_ENOMEM.
 */
int zv_metrics_series(zv_metrics_t *m, int32_t family, const char *const *values,
                      const size_t *lens, size_t nvalues, int32_t *cell);

/* The bounds of a histogram family (owned by the registry, alive as long as it is). */
const double *zv_metrics_bounds(zv_metrics_t *m, int32_t family, int32_t *nb);

/*
 * Claims a slot for the calling worker: *cells is its array (zeroed when new; a reused slot
 * keeps its values). Returns the slot index (>= 0), ZV_ERANGE when all ZV_METRICS_MAX_SLOTS are
 * taken, or ZV_ENOMEM. The worker alone writes *cells until it unclaims the slot.
 */
int zv_metrics_claim(zv_metrics_t *m, double **cells);
void zv_metrics_unclaim(zv_metrics_t *m, int slot);

/* The merged value of one cell (the sum over every slot). */
double zv_metrics_value(zv_metrics_t *m, int32_t cell);

/*
 * Writes every family in the exposition format fmt (ZV_METRICS_PROMETHEUS: text 0.0.4;
 * ZV_METRICS_OPENMETRICS: 1.0.0, without the final "# EOF", which the caller adds after its own
 * families) into a new buffer: *out (zv_alloc'd, the caller frees it with zv_free) and *len.
 * Returns 0 or ZV_ENOMEM (nothing to free then).
 */
int zv_metrics_render(zv_metrics_t *m, int fmt, char **out, size_t *len);

#endif
