/*
 * stripes.h: the striped hash table under the process-wide tables (the memory cache, the
 * limiter's buckets, the idempotency keys): 64 stripes, each with its own spin lock, chained
 * buckets and an LRU list. The owner embeds a zv_stripe_node_t at the start of its entries and
 * keeps everything else (values, budgets, counters, what "expired" means) to itself.
 *
 * It must stay free of Lua and libuv, must not allocate on a lookup, and never holds two stripe
 * locks at once: the routines that walk all stripes take one lock at a time.
 *
 *   zv_stripes_t
 *   +--------------------------------------------------------------------+
 *   | at[0..63], each padded to 128 bytes (no two stripes share a line)   |
 *   |   lock | writes flagged (the owner's) | count | mask                |
 *   |   buckets[mask + 1] -> node -> node            (chain: next)        |
 *   |   newest <-> node <-> ... <-> oldest           (LRU: newer, older)  |
 *   +--------------------------------------------------------------------+
 *   owner's entry: | zv_stripe_node_t: next newer older | hash | used_ns | klen aux |
 *                  | the owner's fields ... | key (at key_off) | ...       |
 *
 * A key's stripe is the low 6 bits of its hash, its bucket the bits above. A stripe's fields take
 * 56 bytes of its 128, so whatever the table's alignment two stripes' fields are at least 72
 * bytes apart and never share a cache line. An entry is in its stripe's chain and LRU list
 * together, or in neither. Functions under "lock held" expect the caller to hold that stripe's
 * lock; the others take the locks themselves. Nothing here frees an entry: what a routine
 * unlinks it hands back (or to the owner's drop callback after unlocking), because owners free
 * outside the lock and charge their budgets when they do.
 */
#ifndef ZV_STRIPES_H
#define ZV_STRIPES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "spin.h"

#define ZV_STRIPES 64
#define ZV_STRIPE_BITS 6

typedef struct zv_stripe_node_s {
  struct zv_stripe_node_s *next;   /* hash chain */
  struct zv_stripe_node_s *newer;  /* LRU list of the stripe */
  struct zv_stripe_node_s *older;
  uint64_t hash;
  uint64_t used_ns;                /* last use: the LRU age compared across stripes */
  uint32_t klen;
  uint32_t aux;                    /* the owner's (a value or fingerprint length) */
} zv_stripe_node_t;

typedef struct {
  zv_spin_t lock;
  unsigned writes;                 /* the owner's counter, atomic (the cache's sweep pace) */
  size_t flagged;                  /* the owner's count, under the lock (pending keys) */
  size_t count;
  size_t mask;                     /* buckets - 1 */
  zv_stripe_node_t **buckets;
  zv_stripe_node_t *newest;
  zv_stripe_node_t *oldest;
} zv_stripe_t;

/* A stripe on a cache line of its own (two cores working on neighbours never share one). */
typedef union {
  zv_stripe_t s;
  char pad[128];
} zv_stripe_slot_t;

typedef struct {
  zv_stripe_slot_t at[ZV_STRIPES];
} zv_stripes_t;

/* What the shared routines need to know about the owner's entries. */
typedef struct {
  size_t expires_off;  /* offset of the entry's uint64_t expires_ns (0: never expires) */
  /* Called, lock held, for each entry a shared routine unlinks; NULL when nothing to do. */
  void (*unlinked)(zv_stripe_t *s, zv_stripe_node_t *n);
  /*
   * 1: a lazy LRU. The owner marks an entry it uses (zv_stripe_mark) instead of relinking it
   * (zv_stripe_touch), and the routines that read a tail first send marked tails to the head
   * (zv_stripe_settle). A call then writes only its own entry, not its LRU neighbours nor the
   * stripe's newest (lines that another core's calls on the same stripe keep taking away).
   * The mark is the node's aux: an owner with a lazy LRU has no aux of its own.
   */
  int lazy;
} zv_stripe_kind_t;

/* The stripe whose lock guards hash h. */
static inline zv_stripe_t *zv_stripes_at(zv_stripes_t *t, uint64_t h) {
  return &t->at[h & (ZV_STRIPES - 1)].s;
}

/* The monotonic clock of the tables in nanoseconds, never 0 (0 means "read the clock"). */
static inline uint64_t zv_stripe_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + 1;
}

/* Gives every stripe its first buckets. ZV_ENOMEM: free what was made with zv_stripes_free. */
int zv_stripes_init(zv_stripes_t *t);

/* Calls drop(n) on every entry (the stripes are no longer shared), then frees the buckets. */
void zv_stripes_free(zv_stripes_t *t, void (*drop)(zv_stripe_node_t *n));

/* --- one stripe, lock held ------------------------------------------------------------------ */

/*
 * Whether n bytes at a and b are equal. Keys of the limiter and of most cache and idempotency
 * calls are short (an id, an address): word compares inline beat a call to memcmp there.
 */
static inline int zv__stripe_key_eq(const char *a, const char *b, size_t n) {
  uint64_t x, y;
  uint32_t u, v;
  if (n > 32) return memcmp(a, b, n) == 0;
  if (n >= 8) {
    for (size_t i = 0; i + 8 < n; i += 8) {
      memcpy(&x, a + i, 8);
      memcpy(&y, b + i, 8);
      if (x != y) return 0;
    }
    memcpy(&x, a + n - 8, 8); /* the last 8 bytes, overlapping what the loop compared */
    memcpy(&y, b + n - 8, 8);
    return x == y;
  }
  if (n >= 4) {
    memcpy(&u, a, 4);
    memcpy(&v, b, 4);
    if (u != v) return 0;
    memcpy(&u, a + n - 4, 4);
    memcpy(&v, b + n - 4, 4);
    return u == v;
  }
  /* 0 to 3 bytes: the first, the last and, for 3, the middle one. */
  return n == 0 || (a[0] == b[0] && a[n - 1] == b[n - 1] && a[n / 2] == b[n / 2]);
}

/* The entry with hash h and key (klen bytes at key_off in the entry), or NULL. */
static inline zv_stripe_node_t *zv_stripe_find(const zv_stripe_t *s, uint64_t h, const char *key,
                                               size_t klen, size_t key_off) {
  for (zv_stripe_node_t *n = s->buckets[(h >> ZV_STRIPE_BITS) & s->mask]; n; n = n->next)
    if (n->hash == h && n->klen == klen && zv__stripe_key_eq((const char *)n + key_off, key, klen))
      return n;
  return NULL;
}

static inline void zv__stripe_lru_unlink(zv_stripe_t *s, zv_stripe_node_t *n) {
  if (n->newer) n->newer->older = n->older;
  else s->newest = n->older;
  if (n->older) n->older->newer = n->newer;
  else s->oldest = n->newer;
}

static inline void zv__stripe_lru_push(zv_stripe_t *s, zv_stripe_node_t *n) {
  n->newer = NULL;
  n->older = s->newest;
  if (s->newest) s->newest->newer = n;
  else s->oldest = n;
  s->newest = n;
}

/* Makes n the stripe's most recently used entry (its used_ns is the owner's to set). */
static inline void zv_stripe_touch(zv_stripe_t *s, zv_stripe_node_t *n) {
  if (s->newest == n) return;
  zv__stripe_lru_unlink(s, n);
  zv__stripe_lru_push(s, n);
}

/* Lazy LRU (zv_stripe_kind_t.lazy): n was used; its place in the LRU list waits for the tail. */
static inline void zv_stripe_mark(zv_stripe_node_t *n) {
  n->aux = 1;
}

/*
 * Lazy LRU: sends every marked entry that reaches the tail to the head, unmarked (a second
 * chance), and returns the tail (NULL when empty). Each move pays for one earlier mark, so the
 * work is bounded by the calls since the last settle.
 */
static inline zv_stripe_node_t *zv_stripe_settle(zv_stripe_t *s) {
  zv_stripe_node_t *n = s->oldest;
  while (n && n->aux) {
    n->aux = 0;
    if (n == s->newest) break;
    zv__stripe_lru_unlink(s, n);
    zv__stripe_lru_push(s, n);
    n = s->oldest;
  }
  return n;
}

/* Links n (hash set) into its chain as the newest entry. Follow with zv_stripe_grow. */
static inline void zv_stripe_insert(zv_stripe_t *s, zv_stripe_node_t *n) {
  zv_stripe_node_t **slot = &s->buckets[(n->hash >> ZV_STRIPE_BITS) & s->mask];
  n->next = *slot;
  *slot = n;
  zv__stripe_lru_push(s, n);
  s->count++;
}

/* Unlinks n from its chain and the LRU list; the caller frees it after unlocking. */
static inline void zv_stripe_unlink(zv_stripe_t *s, zv_stripe_node_t *n) {
  zv_stripe_node_t **pp = &s->buckets[(n->hash >> ZV_STRIPE_BITS) & s->mask];
  while (*pp != n) pp = &(*pp)->next;
  *pp = n->next;
  zv__stripe_lru_unlink(s, n);
  s->count--;
}

void zv__stripe_rehash(zv_stripe_t *s);

/* Doubles the buckets when the load passes 1; a failed allocation only keeps chains long. */
static inline void zv_stripe_grow(zv_stripe_t *s) {
  if (s->count > s->mask + 1) zv__stripe_rehash(s);
}

static inline int zv_stripe_expired(const zv_stripe_kind_t *k, const zv_stripe_node_t *n,
                                    uint64_t now) {
  uint64_t at;
  if (!k->expires_off) return 0;
  memcpy(&at, (const char *)n + k->expires_off, sizeof at);
  return at && now >= at;
}

/* --- all stripes, one lock at a time ------------------------------------------------------- */

/*
 * The stripe whose LRU tail is the least recently used entry of all (ties: the last such
 * stripe), or -1 when every stripe is empty. With prefer_expired, the first stripe whose tail
 * has expired wins at once. Inline so that a constant prefer_expired folds away: evictions
 * under churn run this loop once per admitted key.
 */
static inline int zv_stripes_oldest(zv_stripes_t *t, const zv_stripe_kind_t *k, uint64_t now,
                                    int prefer_expired) {
  zv_stripe_slot_t *victim = NULL;
  uint64_t oldest = UINT64_MAX;
  /* One induction variable (the slot), its index worked out once at the end. */
  for (zv_stripe_slot_t *p = t->at, *end = t->at + ZV_STRIPES; p != end; p++) {
    zv_stripe_t *s = &p->s;
    zv_spin_lock(&s->lock);
    zv_stripe_node_t *n = k->lazy ? zv_stripe_settle(s) : s->oldest;
    if (n && prefer_expired && zv_stripe_expired(k, n, now)) {
      zv_spin_unlock(&s->lock);
      return (int)(p - t->at);
    }
    if (n && n->used_ns <= oldest) {
      oldest = n->used_ns;
      victim = p;
    }
    zv_spin_unlock(&s->lock);
  }
  return victim ? (int)(victim - t->at) : -1;
}

/* Unlinks and returns stripe i's LRU tail (NULL when empty); the caller frees it. */
zv_stripe_node_t *zv_stripes_pop_oldest(zv_stripes_t *t, const zv_stripe_kind_t *k, int i);

/* Where a bucket sweep resumes; zero it to start. The lock orders concurrent sweeps. */
typedef struct {
  zv_spin_t lock;
  unsigned stripe;
  size_t bucket;
} zv_stripe_cursor_t;

/*
 * Unlinks expired entries, looking at no more than max_steps buckets, and hands each to
 * drop(ctx, n) after dropping the stripe lock (at most 16 per bucket visit: a longer chain is
 * finished by the next visit). Returns the number removed; *more is 1 when the budget ran out
 * before a full round of the table. Calls resume where the last one stopped.
 */
size_t zv_stripes_sweep(zv_stripes_t *t, zv_stripe_cursor_t *cur, const zv_stripe_kind_t *k,
                        uint64_t now, size_t max_steps, int *more,
                        void (*drop)(void *ctx, zv_stripe_node_t *n), void *ctx);

/* Empties every stripe (counts and flagged included), handing each entry to drop(ctx, n). */
void zv_stripes_clear(zv_stripes_t *t, void (*drop)(void *ctx, zv_stripe_node_t *n), void *ctx);

/* The entries of all stripes; *flagged (when not NULL) gets the sum of the owner's counts. */
size_t zv_stripes_count(zv_stripes_t *t, size_t *flagged);

#endif
