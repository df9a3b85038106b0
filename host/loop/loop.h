/*
 * loop.h: the per-Lua-state event loop: a libuv loop plus the list of everything that owns
 * handles on it, so that closing the loop can close them all.
 *
 * It must not include lua.h: the HTTP server core (host/http/server.c) registers itself here
 * and is built into benchmarks and fuzz targets without Lua. The runtime (runtime/loop_state.c)
 * keeps one zv_loop_t per lua_State and gives it to the bindings (runtime/runtime.h).
 *
 *   zv_loop_t
 *   +--------------+     items: a circular list of zv_loop_item_t, one per owner of handles
 *   | uv_loop_t uv |     (a timer, a signal watcher, an HTTP server, a thread pool's async).
 *   | items  <-----+---> [timer] <-> [server] <-> [async] <-> (back to items)
 *   | L, running   |
 *   | co[], nco    |     idle coroutines of L's state (the runtime's pool; opaque here)
 *   +--------------+
 *
 * An item's teardown closes its handles (uv_close); its close callbacks free it. zv_loop_close
 * calls every teardown, runs the loop until the close callbacks ran, and closes the loop.
 */
#ifndef ZV_LOOP_H
#define ZV_LOOP_H

#include <uv.h>

/* How many idle coroutines a loop keeps for reuse (see zv_co_take in runtime/runtime.h). */
#define ZV_LOOP_COROUTINES 256

typedef struct zv_loop_item_s zv_loop_item_t;
struct zv_loop_item_s {
  zv_loop_item_t *prev, *next;
  /* Closes the item's handles; called at most once, by zv_loop_close. The item must remove
   * itself from the list (zv_loop_remove) before or inside this call. */
  void (*teardown)(zv_loop_item_t *item);
};

typedef struct {
  uv_loop_t uv;
  zv_loop_item_t items;  /* the list head; never torn down */
  void *L;               /* the lua_State inside loop.run(), NULL outside; opaque here */
  int running;           /* inside uv_run */
  int closing;           /* inside zv_loop_close: close callbacks must not call into Lua */
  int tb_ref;            /* the binding's registry reference to its traceback handler */
  /* The state's one pool of idle coroutines (runtime/runtime.h, zv_co_take): lua_State
   * pointers, opaque here, each pinned by the registry reference beside it. */
  void *co[ZV_LOOP_COROUTINES];
  int co_ref[ZV_LOOP_COROUTINES];
  int nco;
} zv_loop_t;

/* Initializes the loop; returns 0 or ZV_ENOMEM/ZV_EIO. */
int zv_loop_init(zv_loop_t *loop);

/* Adds an item to the loop's list; the item must not be in a list already. */
void zv_loop_add(zv_loop_t *loop, zv_loop_item_t *item);

/* Removes an item from its list; does nothing when it is not in one. */
void zv_loop_remove(zv_loop_item_t *item);

/*
 * Tears every item down, runs the loop until all close callbacks ran, closes any handle that
 * is left (an owner that forgot to register) and closes the libuv loop. The zv_loop_t memory
 * stays the caller's.
 */
void zv_loop_close(zv_loop_t *loop);

#endif
