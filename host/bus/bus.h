/*
 * bus.h: a process-wide publish/subscribe hub shared by the worker threads (the inproc adapter of
 * the eventbus battery). A publisher copies a message once; every mailbox attached to the hub
 * gets a reference to it, and its owner (one Lua state, one event loop) is woken to drain it.
 *
 * It must stay free of Lua and libuv: waking a mailbox's loop is the caller's wake function.
 *
 *   zv_bus_t (one per name, in the registry)
 *   +------------------------------------------+
 *   | lock (the box list) | published          |
 *   | boxes -> box -> box                      |
 *   +------------------------------------------+
 *   zv_bus_box_t: | lock | ring[cap] of msg * | head | count | dropped | wake(ctx) |
 *   zv_bus_msg_t: | refs (atomic) | tlen | dlen | topic bytes | payload bytes |
 *
 * Publishing takes the hub's lock (so a mailbox being detached is either fully in or fully out)
 * and each mailbox's spin lock in turn; a full mailbox drops the new message (the newest: what
 * its owner gets is the oldest, in order) and counts it. A mailbox that was empty is woken
 * once, under the hub's lock: wake must be quick and thread-safe (uv_async_send is). The last
 * reference to a message frees it.
 */
#ifndef ZV_BUS_H
#define ZV_BUS_H

#include <stddef.h>
#include <stdint.h>

#define ZV_BUS_MAX_NAME 256
#define ZV_BUS_MAX_MESSAGE (16u << 20)   /* topic + payload bytes */

typedef struct zv_bus_s zv_bus_t;
typedef struct zv_bus_box_s zv_bus_box_t;

typedef struct {
  uint32_t refs;      /* atomic */
  uint32_t tlen;
  size_t dlen;
  char data[];        /* topic, then payload (not NUL-terminated) */
} zv_bus_msg_t;

typedef void (*zv_bus_wake_fn)(void *ctx);

/* The hub called name: the first open creates it, later ones share it; pair with release. */
int zv_bus_open(const char *name, zv_bus_t **out);
void zv_bus_release(zv_bus_t *b);

/*
 * A new mailbox on b holding up to cap messages (>= 1), woken through wake(ctx) when a message
 * arrives in it while it is empty. The mailbox holds a reference to b until it is detached.
 * Returns 0, ZV_EINVAL or ZV_ENOMEM.
 */
int zv_bus_attach(zv_bus_t *b, size_t cap, zv_bus_wake_fn wake, void *ctx, zv_bus_box_t **out);

/* Takes box off b (no publish reaches it or wakes it after this returns) and frees it with the
 * messages it still holds. */
void zv_bus_detach(zv_bus_t *b, zv_bus_box_t *box);

/*
 * Publishes one message to every mailbox of b: *delivered mailboxes took it, *dropped were
 * full. Returns 0, ZV_ETOOLONG (over ZV_BUS_MAX_MESSAGE) or ZV_ENOMEM. Allocates the message
 * once (none when no mailbox is attached).
 */
int zv_bus_publish(zv_bus_t *b, const char *topic, size_t tlen, const char *data, size_t dlen,
                   size_t *delivered, size_t *dropped);

/* The oldest message of box, or NULL when it is empty; the caller owns one reference. */
zv_bus_msg_t *zv_bus_pop(zv_bus_box_t *box);

/* Drops one reference to m (the last frees it). */
void zv_bus_msg_unref(zv_bus_msg_t *m);

/* Counters: messages published on b; of box: dropped when full, held now. */
uint64_t zv_bus_published(zv_bus_t *b);
void zv_bus_box_counts(zv_bus_box_t *box, uint64_t *dropped, size_t *pending);

#endif
