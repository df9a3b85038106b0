/*
 * registry.c: the named, reference-counted, process-wide objects of registry.h.
 *
 * One mutex per registry guards its list and the reference counts. create() runs under it;
 * nothing here frees an object.
 */
#include "registry.h"

#include <string.h>

#include "zv.h"

struct zv__registry_entry_s {
  zv__registry_entry_t *next;
  void *obj;
  size_t refs;
  char name[];
};

int zv_registry_open(zv_registry_t *r, const char *name, int (*same)(void *obj, const void *arg),
                     int (*create)(const void *arg, void **obj), const void *arg, void **out) {
  zv__registry_entry_t *e;
  size_t n = strlen(name);
  int rc = 0;
  pthread_mutex_lock(&r->lock);
  for (e = r->head; e; e = e->next) {
    if (strcmp(e->name, name) != 0) continue;
    rc = same ? same(e->obj, arg) : 0;
    if (rc == 0) {
      e->refs++;
      *out = e->obj;
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
  }
  e = zv_alloc(sizeof *e + n + 1);
  if (!e) rc = ZV_ENOMEM;
  if (!rc) rc = create(arg, &e->obj);
  if (rc) {
    zv_free(e);
  } else {
    memcpy(e->name, name, n + 1);
    e->refs = 1;
    e->next = r->head;
    r->head = e;
    *out = e->obj;
  }
  pthread_mutex_unlock(&r->lock);
  return rc;
}

int zv_registry_release(zv_registry_t *r, void *obj) {
  zv__registry_entry_t **pp, *gone = NULL;
  if (!obj) return 0;
  pthread_mutex_lock(&r->lock);
  for (pp = &r->head; *pp; pp = &(*pp)->next) {
    if ((*pp)->obj != obj) continue;
    if (--(*pp)->refs == 0) {
      gone = *pp;
      *pp = gone->next;
    }
    break;
  }
  pthread_mutex_unlock(&r->lock);
  zv_free(gone);
  return gone != NULL;
}
