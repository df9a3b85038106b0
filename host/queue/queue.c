/*
 * queue.c: the topics, rings, heaps and id table of queue.h, and its process-wide registry.
 *
 * It must not include Lua or libuv headers, must not allocate on pop, and allocates or frees
 * messages only outside the queue's lock (rings, heaps and tables grow by doubling under it,
 * which is rare and amortised). One mutex per queue: every critical section is a few pointer
 * moves and at most a heap sift, so striping by topic would buy little for its complexity.
 */
#include "queue.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "../core/registry.h"
#include "../core/zv.h"

#define INITIAL_SLOTS 8

enum { READY = 1, DELAYED = 2, LEASED = 3 };

typedef struct topic topic_t;

typedef struct msg {
  struct msg *id_next;    /* chain of the id table */
  topic_t *topic;
  uint64_t id;
  uint64_t lease;         /* 0 unless LEASED */
  uint64_t deadline_ns;   /* DELAYED: visible at; LEASED: lease ends at */
  uint64_t enqueued_ns;
  size_t heap_at;         /* index in the topic's heap while DELAYED or LEASED */
  uint32_t attempt;
  int state;
  int type;
  size_t plen, hlen;
  char data[];            /* payload, then headers */
} msg_t;

struct topic {
  topic_t *next;          /* chain of the topic table */
  uint32_t hash;
  size_t count;           /* messages not yet acked or dropped */
  msg_t **ring;           /* READY, FIFO: ring[(head + i) & (ring_cap - 1)] */
  size_t head, ready, ring_cap;
  msg_t **heap;           /* DELAYED and LEASED, min by deadline_ns */
  size_t nheap, heap_cap;
  size_t len;
  char name[];
};

struct zv_queue_s {
  pthread_mutex_t lock;
  uint64_t next_id, next_lease;
  msg_t **ids;            /* id table, chained, mask = id_cap - 1 */
  size_t id_cap;
  size_t nids;            /* live messages; written under the lock, read without by pop */
  topic_t **topics;
  size_t topic_cap, ntopics;
};

uint64_t zv_queue_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int zv_queue_new(zv_queue_t **out) {
  zv_queue_t *q = zv_alloc(sizeof *q);
  if (!q) return ZV_ENOMEM;
  memset(q, 0, sizeof *q);
  q->ids = zv_alloc(INITIAL_SLOTS * sizeof *q->ids);
  q->topics = zv_alloc(INITIAL_SLOTS * sizeof *q->topics);
  if (!q->ids || !q->topics) {
    zv_free(q->ids);
    zv_free(q->topics);
    zv_free(q);
    return ZV_ENOMEM;
  }
  memset(q->ids, 0, INITIAL_SLOTS * sizeof *q->ids);
  memset(q->topics, 0, INITIAL_SLOTS * sizeof *q->topics);
  q->id_cap = q->topic_cap = INITIAL_SLOTS;
  pthread_mutex_init(&q->lock, NULL);
  *out = q;
  return 0;
}

void zv_queue_free(zv_queue_t *q) {
  if (!q) return;
  for (size_t i = 0; i < q->id_cap; i++) {
    msg_t *m = q->ids[i];
    while (m) {
      msg_t *next = m->id_next;
      zv_free(m);
      m = next;
    }
  }
  for (size_t i = 0; i < q->topic_cap; i++) {
    topic_t *t = q->topics[i];
    while (t) {
      topic_t *next = t->next;
      zv_free(t->ring);
      zv_free(t->heap);
      zv_free(t);
      t = next;
    }
  }
  zv_free(q->ids);
  zv_free(q->topics);
  pthread_mutex_destroy(&q->lock);
  zv_free(q);
}

static uint64_t now_or_clock(uint64_t now_ns) {
  return now_ns ? now_ns : zv_queue_clock();
}

/* --- the id table ----------------------------------------------------------------------------- */

static size_t id_slot(uint64_t id, size_t cap) {
  return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

/* Grows the table when it is full; on failure the table stays as it was (only slower). */
static void ids_grow(zv_queue_t *q) {
  size_t cap = q->id_cap * 2;
  msg_t **ids = zv_alloc(cap * sizeof *ids);
  if (!ids) return;
  memset(ids, 0, cap * sizeof *ids);
  for (size_t i = 0; i < q->id_cap; i++) {
    msg_t *m = q->ids[i];
    while (m) {
      msg_t *next = m->id_next;
      size_t s = id_slot(m->id, cap);
      m->id_next = ids[s];
      ids[s] = m;
      m = next;
    }
  }
  zv_free(q->ids);
  q->ids = ids;
  q->id_cap = cap;
}

static msg_t *ids_find(zv_queue_t *q, uint64_t id) {
  msg_t *m = q->ids[id_slot(id, q->id_cap)];
  while (m && m->id != id) m = m->id_next;
  return m;
}

static void ids_remove(zv_queue_t *q, msg_t *m) {
  msg_t **pp = &q->ids[id_slot(m->id, q->id_cap)];
  while (*pp != m) pp = &(*pp)->id_next;
  *pp = m->id_next;
  __atomic_store_n(&q->nids, q->nids - 1, __ATOMIC_RELEASE);
}

/* --- topics ----------------------------------------------------------------------------------- */

static topic_t *topic_find(zv_queue_t *q, const char *name, size_t len, uint32_t h) {
  topic_t *t = q->topics[h & (q->topic_cap - 1)];
  while (t && !(t->hash == h && t->len == len && memcmp(t->name, name, len) == 0)) t = t->next;
  return t;
}

static void topics_grow(zv_queue_t *q) {
  size_t cap = q->topic_cap * 2;
  topic_t **topics = zv_alloc(cap * sizeof *topics);
  if (!topics) return;
  memset(topics, 0, cap * sizeof *topics);
  for (size_t i = 0; i < q->topic_cap; i++) {
    topic_t *t = q->topics[i];
    while (t) {
      topic_t *next = t->next;
      t->next = topics[t->hash & (cap - 1)];
      topics[t->hash & (cap - 1)] = t;
      t = next;
    }
  }
  zv_free(q->topics);
  q->topics = topics;
  q->topic_cap = cap;
}

/* The topic, created when missing (under the lock; topics are few and live as long as q). */
static topic_t *topic_get(zv_queue_t *q, const char *name, size_t len, uint32_t h) {
  topic_t *t = topic_find(q, name, len, h);
  if (t) return t;
  t = zv_alloc(sizeof *t + len + 1);
  if (!t) return NULL;
  memset(t, 0, sizeof *t);
  t->hash = h;
  t->len = len;
  memcpy(t->name, name, len);
  t->name[len] = 0;
  if (q->ntopics >= q->topic_cap) topics_grow(q);
  t->next = q->topics[h & (q->topic_cap - 1)];
  q->topics[h & (q->topic_cap - 1)] = t;
  q->ntopics++;
  return t;
}

/* --- the ring (READY) ------------------------------------------------------------------------- */

static int ring_push(topic_t *t, msg_t *m) {
  if (t->ready == t->ring_cap) {
    size_t cap = t->ring_cap ? t->ring_cap * 2 : INITIAL_SLOTS;
    msg_t **ring = zv_alloc(cap * sizeof *ring);
    if (!ring) return ZV_ENOMEM;
    for (size_t i = 0; i < t->ready; i++) ring[i] = t->ring[(t->head + i) & (t->ring_cap - 1)];
    zv_free(t->ring);
    t->ring = ring;
    t->ring_cap = cap;
    t->head = 0;
  }
  t->ring[(t->head + t->ready) & (t->ring_cap - 1)] = m;
  t->ready++;
  m->state = READY;
  return 0;
}

/* --- the heap (DELAYED, LEASED) --------------------------------------------------------------- */

static void heap_set(topic_t *t, size_t i, msg_t *m) {
  t->heap[i] = m;
  m->heap_at = i;
}

static void heap_up(topic_t *t, size_t i) {
  msg_t *m = t->heap[i];
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (t->heap[p]->deadline_ns <= m->deadline_ns) break;
    heap_set(t, i, t->heap[p]);
    i = p;
  }
  heap_set(t, i, m);
}

static void heap_down(topic_t *t, size_t i) {
  msg_t *m = t->heap[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= t->nheap) break;
    if (c + 1 < t->nheap && t->heap[c + 1]->deadline_ns < t->heap[c]->deadline_ns) c++;
    if (m->deadline_ns <= t->heap[c]->deadline_ns) break;
    heap_set(t, i, t->heap[c]);
    i = c;
  }
  heap_set(t, i, m);
}

static int heap_push(topic_t *t, msg_t *m) {
  if (t->nheap == t->heap_cap) {
    size_t cap = t->heap_cap ? t->heap_cap * 2 : INITIAL_SLOTS;
    msg_t **heap = zv_realloc(t->heap, cap * sizeof *heap);
    if (!heap) return ZV_ENOMEM;
    t->heap = heap;
    t->heap_cap = cap;
  }
  heap_set(t, t->nheap++, m);
  heap_up(t, t->nheap - 1);
  return 0;
}

static void heap_remove(topic_t *t, msg_t *m) {
  size_t i = m->heap_at;
  msg_t *last = t->heap[--t->nheap];
  if (i == t->nheap) return;
  heap_set(t, i, last);
  if (i > 0 && t->heap[(i - 1) / 2]->deadline_ns > last->deadline_ns) heap_up(t, i);
  else heap_down(t, i);
}

/* Moves due heap entries to the ring tail, at most ZV_QUEUE_PROMOTE of them. */
static void promote(topic_t *t, uint64_t now) {
  for (int n = 0; n < ZV_QUEUE_PROMOTE && t->nheap && t->heap[0]->deadline_ns <= now; n++) {
    msg_t *m = t->heap[0];
    if (ring_push(t, m) != 0) return;   /* no memory: it stays due in the heap */
    heap_remove(t, m);
    if (m->lease) {
      m->lease = 0;
      m->attempt++;
    }
  }
}

/* --- operations ------------------------------------------------------------------------------- */

int zv_queue_push(zv_queue_t *q, const char *topic, size_t tlen, int type, const char *payload,
                  size_t plen, const char *headers, size_t hlen, uint64_t delay_ns,
                  uint64_t enqueued_ns, uint64_t now_ns, uint64_t *id) {
  if (tlen == 0) return ZV_EINVAL;
  if (tlen > ZV_QUEUE_MAX_TOPIC) return ZV_ETOOLONG;
  if (plen > SIZE_MAX / 2 || hlen > SIZE_MAX / 2) return ZV_ETOOLONG;
  msg_t *m = zv_alloc(sizeof *m + plen + hlen);
  if (!m) return ZV_ENOMEM;
  memset(m, 0, sizeof *m);
  m->attempt = 1;
  m->type = type;
  m->enqueued_ns = enqueued_ns;
  m->plen = plen;
  m->hlen = hlen;
  if (plen) memcpy(m->data, payload, plen);
  if (hlen) memcpy(m->data + plen, headers, hlen);
  uint32_t h = (uint32_t)zv_hash64(topic, tlen);
  uint64_t now = delay_ns ? now_or_clock(now_ns) : 0;
  int rc = 0;

  pthread_mutex_lock(&q->lock);
  topic_t *t = topic_get(q, topic, tlen, h);
  if (!t) {
    rc = ZV_ENOMEM;
  } else {
    m->topic = t;
    if (delay_ns) {
      m->state = DELAYED;
      m->deadline_ns = now + delay_ns;
      rc = heap_push(t, m);
    } else {
      rc = ring_push(t, m);
    }
  }
  if (rc == 0) {
    m->id = ++q->next_id;
    if (q->nids >= q->id_cap) ids_grow(q);
    size_t s = id_slot(m->id, q->id_cap);
    m->id_next = q->ids[s];
    q->ids[s] = m;
    __atomic_store_n(&q->nids, q->nids + 1, __ATOMIC_RELEASE);
    t->count++;
    *id = m->id;
  }
  pthread_mutex_unlock(&q->lock);

  if (rc) zv_free(m);
  return rc;
}

int zv_queue_pop(zv_queue_t *q, const char *topic, size_t tlen, uint64_t visibility_ns,
                 uint64_t now_ns, char *buf, size_t cap, zv_queue_msg_t *out) {
  /*
   * No message in any topic (every worker of an idle app polls this): no lock, no hash. A push
   * that happened before this call (in this thread, or one it synchronised with) is seen; one
   * racing with it may be missed, as if it came just after.
   */
  if (__atomic_load_n(&q->nids, __ATOMIC_ACQUIRE) == 0) return ZV_ENOTFOUND;
  uint32_t h = (uint32_t)zv_hash64(topic, tlen);
  int rc = ZV_ENOTFOUND;

  pthread_mutex_lock(&q->lock);
  topic_t *t = topic_find(q, topic, tlen, h);
  /* A topic with nothing in it (an idle worker's poll) needs no clock: read it only here. */
  if (t && (t->ready || t->nheap)) {
    uint64_t now = now_or_clock(now_ns);
    promote(t, now);
    if (t->ready) {
      msg_t *m = t->ring[t->head];
      out->payload_len = m->plen;
      out->headers_len = m->hlen;
      if (m->plen + m->hlen > cap) {
        rc = ZV_ERANGE;
      } else {
        m->state = LEASED;
        m->lease = ++q->next_lease;
        m->deadline_ns = now + visibility_ns;
        rc = heap_push(t, m);
        if (rc == 0) {
          t->head = (t->head + 1) & (t->ring_cap - 1);
          t->ready--;
          memcpy(buf, m->data, m->plen + m->hlen);
          out->id = m->id;
          out->lease = m->lease;
          out->attempt = m->attempt;
          out->type = m->type;
          out->enqueued_ns = m->enqueued_ns;
        } else {
          m->state = READY;
          m->lease = 0;
        }
      }
    }
  }
  pthread_mutex_unlock(&q->lock);
  return rc;
}

/* The leased message (id, lease), unlinked from its topic's heap; NULL when there is none. */
static msg_t *take_leased(zv_queue_t *q, uint64_t id, uint64_t lease) {
  msg_t *m = lease ? ids_find(q, id) : NULL;
  if (!m || m->state != LEASED || m->lease != lease) return NULL;
  heap_remove(m->topic, m);
  m->lease = 0;
  return m;
}

int zv_queue_ack(zv_queue_t *q, uint64_t id, uint64_t lease) {
  pthread_mutex_lock(&q->lock);
  msg_t *m = take_leased(q, id, lease);
  if (m) {
    ids_remove(q, m);
    m->topic->count--;
  }
  pthread_mutex_unlock(&q->lock);
  if (!m) return ZV_ENOTFOUND;
  zv_free(m);
  return 0;
}

int zv_queue_nack(zv_queue_t *q, uint64_t id, uint64_t lease, int requeue, uint64_t delay_ns,
                  uint64_t now_ns) {
  uint64_t now = requeue && delay_ns ? now_or_clock(now_ns) : 0;
  int rc = 0;
  msg_t *drop = NULL;
  pthread_mutex_lock(&q->lock);
  msg_t *m = take_leased(q, id, lease);
  if (!m) {
    rc = ZV_ENOTFOUND;
  } else if (!requeue) {
    ids_remove(q, m);
    m->topic->count--;
    drop = m;
  } else {
    m->attempt++;
    if (delay_ns) {
      m->state = DELAYED;
      m->deadline_ns = now + delay_ns;
      rc = heap_push(m->topic, m);
    } else {
      rc = ring_push(m->topic, m);
    }
    if (rc) {
      /* No memory to requeue: lease it again until now, so the next pop brings it back. */
      m->state = LEASED;
      m->lease = ++q->next_lease;
      m->deadline_ns = 0;
      m->attempt--;
      if (heap_push(m->topic, m) != 0) m->state = READY;   /* lost: heap and ring both full */
    }
  }
  pthread_mutex_unlock(&q->lock);
  zv_free(drop);
  return rc;
}

int zv_queue_len(zv_queue_t *q, const char *topic, size_t tlen, size_t *n) {
  uint32_t h = (uint32_t)zv_hash64(topic, tlen);
  pthread_mutex_lock(&q->lock);
  topic_t *t = topic_find(q, topic, tlen, h);
  *n = t ? t->count : 0;
  pthread_mutex_unlock(&q->lock);
  return 0;
}

/* --- the registry: one queue per name, shared by every worker thread ------------------------- */

static zv_registry_t queues = ZV_REGISTRY_INIT;

static int queue_create(const void *arg, void **obj) {
  (void)arg;
  return zv_queue_new((zv_queue_t **)obj);
}

int zv_queue_open(const char *name, zv_queue_t **out) {
  return zv_registry_open(&queues, name, NULL, queue_create, NULL, (void **)out);
}

void zv_queue_release(zv_queue_t *q) {
  if (zv_registry_release(&queues, q)) zv_queue_free(q);
}
