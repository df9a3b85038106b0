/*
 * queue.h: the memory queue: topics of messages with at-least-once delivery (a popped message
 * is leased and comes back when the lease runs out), delays, and a process-wide registry so that
 * every worker thread opens the same queue by name (the memory adapter of the queue battery).
 *
 * It must stay free of Lua and libuv: it is benchmarked on its own.
 *
 *   zv_queue_t (one mutex guards all of it)
 *   +-------------------------------------------------------------------+
 *   | ids: id -> msg (chained hash; every live message, any state)       |
 *   | topics: name -> topic (chained hash; a topic lives as long as q)   |
 *   +-------------------------------------------------------------------+
 *   topic: | ring: READY msgs, FIFO    head -> [m][m][m] -> tail          |
 *          | heap: DELAYED and LEASED msgs, a min-heap by deadline_ns     |
 *          | count: every message of the topic not yet acked or dropped   |
 *   msg:   | id | lease | attempt | state | deadline_ns | heap index | payload | headers |
 *
 * A push appends to the ring (or, with a delay, enters the heap as DELAYED). A pop first moves
 * the due entries of the topic's heap to the ring tail (at most ZV_QUEUE_PROMOTE per call: a
 * DELAYED message just becomes READY; a LEASED one whose lease ran out becomes READY with
 * attempt + 1 and its lease token void), then takes the ring head, gives it a fresh lease token
 * and puts it in the heap as LEASED until now + visibility. ack and nack name the message by
 * (id, lease): a token that is not the current lease (the message came back and was popped
 * again, or was settled) settles nothing and returns ZV_ENOTFOUND.
 *
 * Payload and headers are opaque bytes with a type tag the caller chooses. Time is monotonic
 * nanoseconds; now_ns == 0 reads CLOCK_MONOTONIC (specs pass a fake clock starting at 1).
 * enqueued_ns is stored as given and handed back (the adapter passes wall-clock time).
 */
#ifndef ZV_QUEUE_H
#define ZV_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "queue_ffi.h"

#define ZV_QUEUE_MAX_TOPIC 1024
#define ZV_QUEUE_PROMOTE 256

uint64_t zv_queue_clock(void);

/* A private queue. */
int zv_queue_new(zv_queue_t **out);
/* Frees q and every message in it. */
void zv_queue_free(zv_queue_t *q);

/*
 * The process-wide registry: every thread that opens the same name gets the same queue. Pair
 * each open with one zv_queue_release; the last release frees the queue.
 */
int zv_queue_open(const char *name, zv_queue_t **out);
void zv_queue_release(zv_queue_t *q);

/*
 * Stores a copy of payload (and headers, which may be NULL/0) in topic, visible after delay_ns
 * (0: now), and puts its id in *id. ZV_ETOOLONG: topic over ZV_QUEUE_MAX_TOPIC bytes; ZV_EINVAL:
 * an empty topic; ZV_ENOMEM. Allocates the message (one zv_alloc, outside the lock); the first
 * push to a topic allocates the topic; rings and heaps grow by doubling.
 */
int zv_queue_push(zv_queue_t *q, const char *topic, size_t tlen, int type, const char *payload,
                  size_t plen, const char *headers, size_t hlen, uint64_t delay_ns,
                  uint64_t enqueued_ns, uint64_t now_ns, uint64_t *id);

/* zv_queue_pop, the call an idle worker makes per poll, is declared in queue_ffi.h. */

/*
 * Settles a leased message: removes it. ZV_ENOTFOUND when lease is not its current lease. Frees
 * the message (outside the lock).
 */
int zv_queue_ack(zv_queue_t *q, uint64_t id, uint64_t lease);

/*
 * Gives a leased message back: with requeue, it becomes visible again after delay_ns with
 * attempt + 1; without, it is dropped. ZV_ENOTFOUND as zv_queue_ack.
 */
int zv_queue_nack(zv_queue_t *q, uint64_t id, uint64_t lease, int requeue, uint64_t delay_ns,
                  uint64_t now_ns);

/* *n: messages of topic not yet acked or dropped (ready, delayed and leased). */
int zv_queue_len(zv_queue_t *q, const char *topic, size_t tlen, size_t *n);

#endif
