/*
 * bus.c: the hub and mailboxes of bus.h, and the process-wide registry of hubs.
 *
 * It must not include Lua or libuv headers, must not call wake outside the hub's lock (a box
 * detached after the lock is released must never be woken), and never holds two box locks.
 */
#include "bus.h"

#include <pthread.h>
#include <string.h>

#include "../core/registry.h"
#include "../core/spin.h"
#include "../core/zv.h"

struct zv_bus_box_s {
  zv_bus_box_t *next;         /* hub lock */
  zv_spin_t lock;
  size_t cap, head, count;    /* box lock */
  uint64_t dropped;           /* box lock */
  zv_bus_wake_fn wake;
  void *ctx;
  zv_bus_msg_t *ring[];
};

struct zv_bus_s {
  pthread_mutex_t lock;
  zv_bus_box_t *boxes;
  uint64_t published;         /* atomic */
  char name[ZV_BUS_MAX_NAME + 1];
};

static int bus_create(const void *arg, void **obj) {
  zv_bus_t *b = zv_alloc(sizeof *b);
  if (!b) return ZV_ENOMEM;
  memset(b, 0, sizeof *b);
  pthread_mutex_init(&b->lock, NULL);
  strcpy(b->name, arg);   /* checked by zv_bus_open: at most ZV_BUS_MAX_NAME bytes */
  *obj = b;
  return 0;
}

static zv_registry_t hubs = ZV_REGISTRY_INIT;

int zv_bus_open(const char *name, zv_bus_t **out) {
  if (strlen(name) > ZV_BUS_MAX_NAME) return ZV_ETOOLONG;
  return zv_registry_open(&hubs, name, NULL, bus_create, name, (void **)out);
}

void zv_bus_release(zv_bus_t *b) {
  if (b && zv_registry_release(&hubs, b)) {
    pthread_mutex_destroy(&b->lock);
    zv_free(b);
  }
}

int zv_bus_attach(zv_bus_t *b, size_t cap, zv_bus_wake_fn wake, void *ctx, zv_bus_box_t **out) {
  if (cap < 1 || cap > (1u << 24)) return ZV_EINVAL;
  zv_bus_box_t *box = zv_alloc(sizeof *box + cap * sizeof box->ring[0]);
  if (!box) return ZV_ENOMEM;
  /* The box's own reference to the hub (the caller holds one, so this finds b). */
  zv_bus_t *same;
  if (zv_bus_open(b->name, &same)) {
    zv_free(box);
    return ZV_ENOMEM;
  }
  memset(box, 0, sizeof *box);
  box->cap = cap;
  box->wake = wake;
  box->ctx = ctx;
  pthread_mutex_lock(&b->lock);
  box->next = b->boxes;
  b->boxes = box;
  pthread_mutex_unlock(&b->lock);
  *out = box;
  return 0;
}

void zv_bus_detach(zv_bus_t *b, zv_bus_box_t *box) {
  pthread_mutex_lock(&b->lock);
  for (zv_bus_box_t **p = &b->boxes; *p; p = &(*p)->next) {
    if (*p == box) {
      *p = box->next;
      break;
    }
  }
  pthread_mutex_unlock(&b->lock);
  zv_bus_msg_t *m;
  while ((m = zv_bus_pop(box))) zv_bus_msg_unref(m);
  zv_free(box);
  zv_bus_release(b);
}

void zv_bus_msg_unref(zv_bus_msg_t *m) {
  if (__atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) == 0) zv_free(m);
}

int zv_bus_publish(zv_bus_t *b, const char *topic, size_t tlen, const char *data, size_t dlen,
                   size_t *delivered, size_t *dropped) {
  *delivered = *dropped = 0;
  if (tlen > ZV_BUS_MAX_MESSAGE || dlen > ZV_BUS_MAX_MESSAGE - tlen) return ZV_ETOOLONG;
  __atomic_add_fetch(&b->published, 1, __ATOMIC_RELAXED);
  zv_bus_msg_t *m = NULL;
  pthread_mutex_lock(&b->lock);
  if (b->boxes) {
    m = zv_alloc(sizeof *m + tlen + dlen);
    if (!m) {
      pthread_mutex_unlock(&b->lock);
      return ZV_ENOMEM;
    }
    m->refs = 1;   /* the publisher's, dropped below */
    m->tlen = (uint32_t)tlen;
    m->dlen = dlen;
    memcpy(m->data, topic, tlen);
    if (dlen) memcpy(m->data + tlen, data, dlen);
  }
  for (zv_bus_box_t *box = b->boxes; box; box = box->next) {
    int was_empty = 0, took = 0;
    zv_spin_lock(&box->lock);
    if (box->count < box->cap) {
      size_t at = box->head + box->count;
      if (at >= box->cap) at -= box->cap;
      __atomic_add_fetch(&m->refs, 1, __ATOMIC_RELAXED);
      box->ring[at] = m;
      was_empty = box->count == 0;
      box->count++;
      took = 1;
    } else {
      box->dropped++;
    }
    zv_spin_unlock(&box->lock);
    if (took) (*delivered)++;
    else (*dropped)++;
    if (was_empty) box->wake(box->ctx);
  }
  pthread_mutex_unlock(&b->lock);
  if (m) zv_bus_msg_unref(m);
  return 0;
}

zv_bus_msg_t *zv_bus_pop(zv_bus_box_t *box) {
  zv_bus_msg_t *m = NULL;
  zv_spin_lock(&box->lock);
  if (box->count) {
    m = box->ring[box->head];
    box->head = box->head + 1 == box->cap ? 0 : box->head + 1;
    box->count--;
  }
  zv_spin_unlock(&box->lock);
  return m;
}

uint64_t zv_bus_published(zv_bus_t *b) {
  return __atomic_load_n(&b->published, __ATOMIC_RELAXED);
}

void zv_bus_box_counts(zv_bus_box_t *box, uint64_t *dropped, size_t *pending) {
  zv_spin_lock(&box->lock);
  *dropped = box->dropped;
  *pending = box->count;
  zv_spin_unlock(&box->lock);
}
