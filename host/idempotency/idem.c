/*
 * idem.c: the striped, bounded table of idem.h (reservations and completed results of
 * idempotency keys), its process-wide registry, and the request fingerprint hash.
 *
 * It must not include Lua or libuv headers, must not allocate on a hit (replay, pending,
 * mismatch), must never hold two stripe locks at once, and frees entries only after dropping
 * the stripe lock. Lock order: admit -> sweep -> one stripe.
 */
#include "idem.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "../core/registry.h"
#include "../core/spin.h"
#include "../core/zv.h"

#define INITIAL_BUCKETS 8
#define ADMIT_SWEEP_EVERY 64
#define ADMIT_SWEEP_STEPS 16

enum { PENDING = 0, COMPLETE = 1 };

typedef struct entry {
  struct entry *next;     /* hash chain */
  struct entry *newer;    /* LRU list of the stripe */
  struct entry *older;
  char *result;           /* COMPLETE: rlen bytes, its own allocation (NULL when rlen is 0) */
  size_t rlen;
  uint64_t token;
  uint64_t expires_ns;    /* 0: never */
  uint64_t used_ns;       /* last begin or complete: the LRU age across stripes */
  uint64_t ttl_ns;        /* the completed result's lifetime, from begin */
  uint32_t hash;
  uint32_t klen;
  uint32_t flen;
  int state;
  int rtype;
  char data[];            /* key, then fingerprint */
} entry_t;

/* Padded to two cache lines so that stripes used by different threads never share one. */
typedef union {
  struct {
    zv_spin_t lock;
    size_t mask;
    size_t count;
    size_t pending;
    entry_t **buckets;
    entry_t *newest;
    entry_t *oldest;
  } s;
  char pad[128];
} stripe_t;

struct zv_idem_s {
  stripe_t stripes[ZV_IDEM_STRIPES];
  size_t max_keys;
  size_t max_bytes;
  size_t used;            /* atomic: slots reserved */
  size_t bytes;           /* atomic: charged bytes */
  uint64_t tokens;        /* atomic: the last token handed out */
  uint64_t evictions;     /* atomic */
  uint64_t expired;       /* atomic */
  unsigned admissions;    /* atomic */
  zv_spin_t admit;
  zv_spin_t sweep;
  unsigned sweep_stripe;  /* under the sweep lock */
  size_t sweep_bucket;
};

size_t zv_idem_overhead(void) {
  return sizeof(entry_t);
}

uint64_t zv_idem_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + 1;
}

static inline size_t entry_size(size_t klen, size_t flen) {
  return sizeof(entry_t) + klen + flen;
}

static inline size_t charged(const entry_t *e) {
  return entry_size(e->klen, e->flen) + e->rlen;
}

int zv_idem_new(size_t max_keys, size_t max_bytes, zv_idem_t **out) {
  if (max_keys == 0 || max_bytes == 0) return ZV_EINVAL;
  zv_idem_t *t = zv_alloc(sizeof *t);
  if (!t) return ZV_ENOMEM;
  memset(t, 0, sizeof *t);
  for (int i = 0; i < ZV_IDEM_STRIPES; i++) {
    stripe_t *s = &t->stripes[i];
    s->s.buckets = zv_alloc(INITIAL_BUCKETS * sizeof *s->s.buckets);
    if (!s->s.buckets) {
      zv_idem_free(t);
      return ZV_ENOMEM;
    }
    memset(s->s.buckets, 0, INITIAL_BUCKETS * sizeof *s->s.buckets);
    s->s.mask = INITIAL_BUCKETS - 1;
  }
  t->max_keys = max_keys;
  t->max_bytes = max_bytes;
  *out = t;
  return 0;
}

void zv_idem_free(zv_idem_t *t) {
  if (!t) return;
  for (int i = 0; i < ZV_IDEM_STRIPES; i++) {
    stripe_t *s = &t->stripes[i];
    for (entry_t *e = s->s.newest, *next; e; e = next) {
      next = e->older;
      zv_free(e->result);
      zv_free(e);
    }
    zv_free(s->s.buckets);
  }
  zv_free(t);
}

/* --- one stripe (its lock held) ------------------------------------------------------------- */

static inline entry_t *find(stripe_t *s, uint32_t h, const char *key, size_t klen) {
  for (entry_t *e = s->s.buckets[(h >> 6) & s->s.mask]; e; e = e->next)
    if (e->hash == h && e->klen == klen && memcmp(e->data, key, klen) == 0) return e;
  return NULL;
}

static inline void lru_unlink(stripe_t *s, entry_t *e) {
  if (e->newer) e->newer->older = e->older;
  else s->s.newest = e->older;
  if (e->older) e->older->newer = e->newer;
  else s->s.oldest = e->newer;
}

static inline void lru_push(stripe_t *s, entry_t *e) {
  e->newer = NULL;
  e->older = s->s.newest;
  if (s->s.newest) s->s.newest->newer = e;
  else s->s.oldest = e;
  s->s.newest = e;
}

static inline void touch(stripe_t *s, entry_t *e, uint64_t now) {
  if (now > e->used_ns) e->used_ns = now;
  if (s->s.newest == e) return;
  lru_unlink(s, e);
  lru_push(s, e);
}

static inline int expired(const entry_t *e, uint64_t now) {
  return e->expires_ns && now >= e->expires_ns;
}

/* Unlinks e from its chain and the LRU list; the caller calls drop() after unlocking. */
static void unlink_entry(stripe_t *s, entry_t *e) {
  entry_t **pp = &s->s.buckets[(e->hash >> 6) & s->s.mask];
  while (*pp != e) pp = &(*pp)->next;
  *pp = e->next;
  lru_unlink(s, e);
  s->s.count--;
  if (e->state == PENDING) s->s.pending--;
}

static void insert(stripe_t *s, entry_t *e) {
  entry_t **slot = &s->s.buckets[(e->hash >> 6) & s->s.mask];
  e->next = *slot;
  *slot = e;
  lru_push(s, e);
  s->s.count++;
  if (e->state == PENDING) s->s.pending++;
}

/* Doubles the bucket array when the load passes 1; a failed allocation only keeps chains long. */
static void maybe_grow(stripe_t *s) {
  size_t n = s->s.mask + 1;
  if (s->s.count <= n) return;
  entry_t **nb = zv_alloc(2 * n * sizeof *nb);
  if (!nb) return;
  memset(nb, 0, 2 * n * sizeof *nb);
  size_t mask = 2 * n - 1;
  for (size_t i = 0; i < n; i++) {
    for (entry_t *e = s->s.buckets[i], *next; e; e = next) {
      next = e->next;
      entry_t **slot = &nb[(e->hash >> 6) & mask];
      e->next = *slot;
      *slot = e;
    }
  }
  zv_free(s->s.buckets);
  s->s.buckets = nb;
  s->s.mask = mask;
}

/* Frees an unlinked entry and gives back its slot and bytes. */
static void drop(zv_idem_t *t, entry_t *e) {
  __atomic_sub_fetch(&t->bytes, charged(e), __ATOMIC_RELAXED);
  __atomic_sub_fetch(&t->used, 1, __ATOMIC_RELAXED);
  zv_free(e->result);
  zv_free(e);
}

static void drop_expired(zv_idem_t *t, entry_t *e) {
  drop(t, e);
  __atomic_add_fetch(&t->expired, 1, __ATOMIC_RELAXED);
}

/* --- bounds --------------------------------------------------------------------------------- */

/* Evicts one entry: an expired LRU tail if any, else the oldest tail. 0 when the table is empty. */
static int evict_one(zv_idem_t *t, uint64_t now) {
  int victim = -1, victim_expired = 0;
  uint64_t oldest = UINT64_MAX;
  for (int i = 0; i < ZV_IDEM_STRIPES && !victim_expired; i++) {
    stripe_t *s = &t->stripes[i];
    zv_spin_lock(&s->s.lock);
    entry_t *e = s->s.oldest;
    if (e && expired(e, now)) {
      victim = i;
      victim_expired = 1;
    } else if (e && e->used_ns <= oldest) {
      oldest = e->used_ns;
      victim = i;
    }
    zv_spin_unlock(&s->s.lock);
  }
  if (victim < 0) return 0;
  stripe_t *s = &t->stripes[victim];
  zv_spin_lock(&s->s.lock);
  entry_t *e = s->s.oldest;
  if (e) unlink_entry(s, e);
  zv_spin_unlock(&s->s.lock);
  if (e) {
    int was_expired = expired(e, now);
    drop(t, e);
    __atomic_add_fetch(was_expired ? &t->expired : &t->evictions, 1, __ATOMIC_RELAXED);
  }
  return 1;
}

/*
 * Charges size bytes and, when slot is 1, one key slot, evicting until they fit: an expired
 * LRU tail first, else the least recently used entry. (Expired entries elsewhere are left to
 * the sweeps: a sweep per eviction measured 3x slower under churn.) The key count is kept
 * exactly; bytes may overshoot briefly by charges whose entries are in flight (not yet
 * linked, so not evictable).
 */
static void admit(zv_idem_t *t, size_t size, int slot, uint64_t now) {
  zv_spin_lock(&t->admit);
  for (;;) {
    int keys_full = slot && __atomic_load_n(&t->used, __ATOMIC_RELAXED) >= t->max_keys;
    int bytes_full = __atomic_load_n(&t->bytes, __ATOMIC_RELAXED) + size > t->max_bytes;
    if (!keys_full && !bytes_full) break;
    if (evict_one(t, now)) continue;
    if (!keys_full) break;
    /* Every slot is a reservation whose insert is in flight: let it land, then look again. */
    zv_spin_unlock(&t->admit);
    sched_yield();
    zv_spin_lock(&t->admit);
  }
  if (slot) __atomic_add_fetch(&t->used, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&t->bytes, size, __ATOMIC_RELAXED);
  zv_spin_unlock(&t->admit);
}

/* --- operations ----------------------------------------------------------------------------- */

#define STRIPE(t, h) (&(t)->stripes[(h) & (ZV_IDEM_STRIPES - 1)])

/* What a begin that finds the live entry e answers; copies a replay's result into buf. */
static int answer(stripe_t *s, entry_t *e, const char *fp, size_t flen, uint64_t now, char *buf,
                  size_t cap, zv_idem_begin_t *r) {
  touch(s, e, now);
  r->token = 0;
  if (e->flen != flen || memcmp(e->data + e->klen, fp, flen) != 0) {
    r->status = ZV_IDEM_MISMATCH;
    return 0;
  }
  if (e->state == PENDING) {
    r->status = ZV_IDEM_PENDING;
    return 0;
  }
  r->status = ZV_IDEM_REPLAY;
  r->type = e->rtype;
  r->len = e->rlen;
  if (e->rlen > cap) return ZV_ERANGE;
  if (e->rlen) memcpy(buf, e->result, e->rlen);
  return 0;
}

/* Finds key's live entry; an expired one is unlinked into *gone (the caller drops it). */
static entry_t *find_live(stripe_t *s, uint32_t h, const char *key, size_t klen, uint64_t now,
                          entry_t **gone) {
  entry_t *e = find(s, h, key, klen);
  if (e && expired(e, now)) {
    unlink_entry(s, e);
    *gone = e;
    return NULL;
  }
  return e;
}

int zv_idem_begin(zv_idem_t *t, const char *key, size_t klen, const char *fp, size_t flen,
                  uint64_t ttl_ns, uint64_t pending_ns, uint64_t now_ns, char *buf, size_t cap,
                  zv_idem_begin_t *r) {
  if (klen > ZV_IDEM_MAX_KEY) return ZV_ETOOLONG;
  size_t size = entry_size(klen, flen);
  if (flen > UINT32_MAX || size > t->max_bytes) return ZV_ETOOLONG;
  if (!now_ns) now_ns = zv_idem_clock();
  uint32_t h = zv_hash(key, klen);
  stripe_t *s = STRIPE(t, h);
  entry_t *gone = NULL;
  int rc;

  zv_spin_lock(&s->s.lock);
  entry_t *e = find_live(s, h, key, klen, now_ns, &gone);
  if (e) rc = answer(s, e, fp, flen, now_ns, buf, cap, r);
  zv_spin_unlock(&s->s.lock);
  if (gone) drop_expired(t, gone);
  if (e) return rc;

  /* Absent: build the entry and take its slot with no stripe lock held, then look again. */
  entry_t *fresh = zv_alloc(size);
  if (!fresh) return ZV_ENOMEM;
  memset(fresh, 0, sizeof *fresh);
  fresh->hash = h;
  fresh->klen = (uint32_t)klen;
  fresh->flen = (uint32_t)flen;
  fresh->state = PENDING;
  fresh->ttl_ns = ttl_ns;
  fresh->used_ns = now_ns;
  fresh->expires_ns = pending_ns ? now_ns + pending_ns : 0;
  memcpy(fresh->data, key, klen);
  if (flen) memcpy(fresh->data + klen, fp, flen);
  admit(t, size, 1, now_ns);

  gone = NULL;
  zv_spin_lock(&s->s.lock);
  e = find_live(s, h, key, klen, now_ns, &gone);
  if (e) {
    rc = answer(s, e, fp, flen, now_ns, buf, cap, r);
  } else {
    fresh->token = __atomic_add_fetch(&t->tokens, 1, __ATOMIC_RELAXED);
    insert(s, fresh);
    maybe_grow(s);
    r->status = ZV_IDEM_RESERVED;
    r->token = fresh->token;
    r->len = 0;
    r->type = 0;
    rc = 0;
  }
  zv_spin_unlock(&s->s.lock);
  if (gone) drop_expired(t, gone);
  if (e) {
    drop(t, fresh); /* another thread reserved it meanwhile: give the slot back */
    return rc;
  }
  if (__atomic_add_fetch(&t->admissions, 1, __ATOMIC_RELAXED) % ADMIT_SWEEP_EVERY == 0) {
    int more;
    zv_idem_sweep(t, now_ns, ADMIT_SWEEP_STEPS, &more);
  }
  return 0;
}

int zv_idem_complete(zv_idem_t *t, const char *key, size_t klen, uint64_t token, int type,
                     const char *result, size_t rlen, uint64_t now_ns) {
  if (klen > ZV_IDEM_MAX_KEY) return ZV_ENOTFOUND;
  if (entry_size(klen, 0) + rlen > t->max_bytes) return ZV_ETOOLONG;
  if (!now_ns) now_ns = zv_idem_clock();
  char *copy = NULL;
  if (rlen) {
    if (!(copy = zv_alloc(rlen))) return ZV_ENOMEM;
    memcpy(copy, result, rlen);
  }
  admit(t, rlen, 0, now_ns);

  uint32_t h = zv_hash(key, klen);
  stripe_t *s = STRIPE(t, h);
  entry_t *gone = NULL;
  int rc;
  zv_spin_lock(&s->s.lock);
  entry_t *e = find_live(s, h, key, klen, now_ns, &gone);
  if (!e || (token && e->token != token)) {
    rc = ZV_ENOTFOUND;
  } else if (e->state == COMPLETE) {
    rc = ZV_ECONFLICT;
  } else if (charged(e) + rlen > t->max_bytes) {
    rc = ZV_ETOOLONG;
  } else {
    e->result = copy;
    e->rlen = rlen;
    e->rtype = type;
    e->state = COMPLETE;
    e->expires_ns = e->ttl_ns ? now_ns + e->ttl_ns : 0;
    s->s.pending--;
    touch(s, e, now_ns);
    copy = NULL;
    rc = 0;
  }
  zv_spin_unlock(&s->s.lock);
  if (gone) drop_expired(t, gone);
  if (rc) {
    __atomic_sub_fetch(&t->bytes, rlen, __ATOMIC_RELAXED);
    zv_free(copy);
  }
  return rc;
}

int zv_idem_forget(zv_idem_t *t, const char *key, size_t klen, uint64_t token, uint64_t now_ns,
                   int *existed) {
  *existed = 0;
  if (klen > ZV_IDEM_MAX_KEY) return 0;
  if (!now_ns) now_ns = zv_idem_clock();
  uint32_t h = zv_hash(key, klen);
  stripe_t *s = STRIPE(t, h);
  zv_spin_lock(&s->s.lock);
  entry_t *e = find(s, h, key, klen);
  if (e && token && e->token != token) e = NULL;
  if (e) {
    *existed = !expired(e, now_ns);
    unlink_entry(s, e);
  }
  zv_spin_unlock(&s->s.lock);
  if (e) drop(t, e);
  return 0;
}

size_t zv_idem_sweep(zv_idem_t *t, uint64_t now_ns, size_t max_steps, int *more) {
  size_t removed = 0, steps = 0;
  entry_t *dead[16];
  if (!now_ns) now_ns = zv_idem_clock();
  *more = 1;
  zv_spin_lock(&t->sweep);
  while (steps < max_steps) {
    stripe_t *s = &t->stripes[t->sweep_stripe];
    size_t ndead = 0;
    int next_stripe = 0;
    zv_spin_lock(&s->s.lock);
    if (t->sweep_bucket > s->s.mask) {
      next_stripe = 1;
    } else {
      entry_t **pp = &s->s.buckets[t->sweep_bucket];
      while (*pp) {
        entry_t *e = *pp;
        if (expired(e, now_ns) && ndead < ZV_ARRAY_SIZE(dead)) {
          *pp = e->next;
          lru_unlink(s, e);
          s->s.count--;
          if (e->state == PENDING) s->s.pending--;
          dead[ndead++] = e;
        } else {
          pp = &e->next;
        }
      }
      /* A chain with more than 16 expired entries is finished by the next visit. */
      if (ndead < ZV_ARRAY_SIZE(dead)) t->sweep_bucket++;
      steps++;
    }
    zv_spin_unlock(&s->s.lock);
    for (size_t i = 0; i < ndead; i++) drop(t, dead[i]);
    removed += ndead;
    if (next_stripe) {
      t->sweep_bucket = 0;
      if (++t->sweep_stripe == ZV_IDEM_STRIPES) {
        t->sweep_stripe = 0;
        *more = 0;
        break;
      }
    }
  }
  zv_spin_unlock(&t->sweep);
  if (removed) __atomic_add_fetch(&t->expired, removed, __ATOMIC_RELAXED);
  return removed;
}

void zv_idem_clear(zv_idem_t *t) {
  for (int i = 0; i < ZV_IDEM_STRIPES; i++) {
    stripe_t *s = &t->stripes[i];
    entry_t *list;
    zv_spin_lock(&s->s.lock);
    list = s->s.newest;
    memset(s->s.buckets, 0, (s->s.mask + 1) * sizeof *s->s.buckets);
    s->s.newest = s->s.oldest = NULL;
    s->s.count = 0;
    s->s.pending = 0;
    zv_spin_unlock(&s->s.lock);
    for (entry_t *e = list, *next; e; e = next) {
      next = e->older;
      drop(t, e);
    }
  }
}

void zv_idem_stats(zv_idem_t *t, zv_idem_stats_t *out) {
  size_t n = 0, p = 0;
  for (int i = 0; i < ZV_IDEM_STRIPES; i++) {
    stripe_t *s = &t->stripes[i];
    zv_spin_lock(&s->s.lock);
    n += s->s.count;
    p += s->s.pending;
    zv_spin_unlock(&s->s.lock);
  }
  out->entries = n;
  out->pending = p;
  out->bytes = __atomic_load_n(&t->bytes, __ATOMIC_RELAXED);
  out->max_keys = t->max_keys;
  out->max_bytes = t->max_bytes;
  out->evictions = __atomic_load_n(&t->evictions, __ATOMIC_RELAXED);
  out->expired = __atomic_load_n(&t->expired, __ATOMIC_RELAXED);
}

/* --- the fingerprint ------------------------------------------------------------------------ */

static inline uint64_t rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

static inline uint64_t fmix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

static inline void mix(uint64_t *a, uint64_t *b, uint64_t w) {
  *a = rotl((*a ^ w) * 0x9e3779b97f4a7c15ull, 29);
  *b = rotl(*b + (w ^ 0xc2b2ae3d27d4eb4full), 31) * 0x165667b19e3779f9ull;
}

void zv_idem_fingerprint(const char *const *parts, const size_t *lens, size_t n, char out[33]) {
  static const char hex[] = "0123456789abcdef";
  uint64_t a = 0x243f6a8885a308d3ull, b = 0x13198a2e03707344ull;
  for (size_t i = 0; i < n; i++) {
    const unsigned char *p = (const unsigned char *)parts[i];
    size_t len = lens[i], j = 0;
    mix(&a, &b, (uint64_t)len ^ ((uint64_t)i << 56));
    for (; j + 8 <= len; j += 8) {
      uint64_t w;
      memcpy(&w, p + j, 8);
      mix(&a, &b, w);
    }
    if (j < len) {
      uint64_t w = 0;
      memcpy(&w, p + j, len - j);
      mix(&a, &b, w ^ ((uint64_t)(len - j) << 59));
    }
  }
  a = fmix(a ^ rotl(b, 17));
  b = fmix(b ^ a);
  for (int k = 0; k < 16; k++) {
    out[k] = hex[(a >> (60 - 4 * k)) & 15];
    out[16 + k] = hex[(b >> (60 - 4 * k)) & 15];
  }
  out[32] = '\0';
}

/* --- the registry: one table per name, shared by every worker thread ------------------------- */

static zv_registry_t tables = ZV_REGISTRY_INIT;

typedef struct {
  size_t max_keys, max_bytes;
} idem_opts_t;

static int idem_same(void *obj, const void *arg) {
  const zv_idem_t *t = obj;
  const idem_opts_t *o = arg;
  return t->max_keys == o->max_keys && t->max_bytes == o->max_bytes ? 0 : ZV_ECONFLICT;
}

static int idem_create(const void *arg, void **obj) {
  const idem_opts_t *o = arg;
  return zv_idem_new(o->max_keys, o->max_bytes, (zv_idem_t **)obj);
}

int zv_idem_open(const char *name, size_t max_keys, size_t max_bytes, zv_idem_t **out) {
  idem_opts_t o = {max_keys, max_bytes};
  if (max_keys == 0 || max_bytes == 0) return ZV_EINVAL;
  return zv_registry_open(&tables, name, idem_same, idem_create, &o, (void **)out);
}

void zv_idem_release(zv_idem_t *t) {
  if (zv_registry_release(&tables, t)) zv_idem_free(t);
}
