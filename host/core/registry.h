/*
 * registry.h: process-wide named objects shared by every worker thread (the memory cache, the
 * limiter's buckets, the memory queue, ...). Each worker's Lua state opens an object by name;
 * the first open creates it, later opens share it, and the last release frees it.
 *
 *   static zv_registry_t caches = ZV_REGISTRY_INIT;       one per kind of object, static
 *
 *   caches: head -> { "default:67108864", refs 3, obj } -> { "sessions:1048576", refs 1, obj }
 *
 * The registry owns the entries and their names, never the objects: the caller creates an object
 * in create() (called under the registry's lock, so two threads cannot both create one name) and
 * frees it when zv_registry_release says the last reference went. Lookups are linear: a process
 * has a handful of these.
 */
#ifndef ZV_REGISTRY_H
#define ZV_REGISTRY_H

#include <pthread.h>
#include <stddef.h>

typedef struct zv__registry_entry_s zv__registry_entry_t;

typedef struct {
  pthread_mutex_t lock;
  zv__registry_entry_t *head;
} zv_registry_t;

#define ZV_REGISTRY_INIT {PTHREAD_MUTEX_INITIALIZER, NULL}

/*
 * Opens the object called name. When it exists, same(obj, arg) decides whether the caller's
 * options match: 0 shares it (one more reference), anything else is returned as the error
 * (ZV_ECONFLICT, typically) and nothing changes; same may be NULL (always match). When it does
 * not exist, create(arg, &obj) makes it and it is registered with one reference. Returns 0 with
 * *out set, create's error, or ZV_ENOMEM.
 */
int zv_registry_open(zv_registry_t *r, const char *name, int (*same)(void *obj, const void *arg),
                     int (*create)(const void *arg, void **obj), const void *arg, void **out);

/*
 * Drops one reference to obj (NULL does nothing). Returns 1 when that was the last one: obj is
 * then unregistered and the caller frees it; 0 otherwise.
 */
int zv_registry_release(zv_registry_t *r, void *obj);

#endif
