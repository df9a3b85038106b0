/*
 * l_bus_core.c: the zever.bus_core binding (lua/adapters/eventbus/inproc.lua wraps it): hubs
 * shared by the worker threads, and mailboxes drained on the attaching state's event loop.
 *
 *   core.open(name)                  -> hub | nil, message, code
 *   hub:publish(topic, payload)      -> delivered, dropped | nil, message, code
 *   hub:published()                  -> messages published on the hub (every state's)
 *   hub:attach(cap, fn)              -> box: fn(topic, payload) runs on this state's loop for
 *                                       each message, in publish order (its errors are
 *                                       reported on stderr); a full box drops the newest
 *   box:counts()                     -> dropped, pending
 *   box:detach()                     no more messages (idempotent; also __gc and the state's
 *                                       loop closing)
 *   hub:release()                    drops this state's reference (also __gc)
 *
 * A box's uv_async_t lives in a struct of its own, freed in its close callback; the Lua object
 * points to it and is cleared when the box goes first (the loop's teardown). A box holds a
 * reference to its hub (bus.h), so a hub outlives its boxes.
 */
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "../core/zv.h"
#include "../runtime/lbind.h"
#include "../runtime/runtime.h"
#include "bus.h"

#define HUB_MT "zever.bus_core"
#define BOX_MT "zever.bus_core.box"

typedef struct lbox_s {
  zv_loop_item_t item;        /* torn down when the state's loop closes */
  uv_async_t async;
  zv_bus_t *hub;              /* kept alive by the box itself (bus.h) */
  zv_bus_box_t *box;
  zv_loop_t *loop;            /* its L is the state inside loop.run() when a callback runs */
  int fn_ref;
  struct lbox_s **slot;       /* the Lua object's pointer to this, or NULL once collected */
} lbox_t;

static zv_bus_t *check_hub(lua_State *L) {
  return zv_l_checkhandle(L, HUB_MT, "bus");
}

static void wake(void *ctx) {
  uv_async_send(&((lbox_t *)ctx)->async);
}

static void drain(uv_async_t *h) {
  lbox_t *lb = h->data;
  lua_State *L = lb->loop->L;
  zv_bus_msg_t *m;
  if (!L || lb->loop->closing) return;
  while (lb->box && lb->fn_ref != LUA_NOREF && (m = zv_bus_pop(lb->box))) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, lb->fn_ref);
    lua_pushlstring(L, m->data, m->tlen);
    lua_pushlstring(L, m->data + m->tlen, m->dlen);
    zv_bus_msg_unref(m);
    zv_loop_pcall(L, 2, 0, "eventbus delivery");
  }
}

static void free_lbox(uv_handle_t *h) {
  zv_free(h->data);
}

/* Detaches and closes the box; L (any thread of the box's state, or NULL while the state
 * closes) drops the callback's reference. */
static void box_close(lbox_t *lb, lua_State *L) {
  if (lb->slot) *lb->slot = NULL;
  zv_bus_detach(lb->hub, lb->box);   /* also drops the box's reference to the hub */
  lb->box = NULL;
  if (L && lb->fn_ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, lb->fn_ref);
  lb->fn_ref = LUA_NOREF;
  zv_loop_remove(&lb->item);
  uv_close((uv_handle_t *)&lb->async, free_lbox);
}

static void box_teardown(zv_loop_item_t *item) {
  box_close(ZV_CONTAINER_OF(item, lbox_t, item), NULL);
}

static int l_open(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  void **slot = zv_l_newhandle(L, HUB_MT);
  zv_bus_t *b;
  int rc = zv_bus_open(name, &b);
  if (rc) return zv_l_fail(L, rc);
  *slot = b;
  return 1;
}

static int l_release(lua_State *L) {
  void **slot = luaL_checkudata(L, 1, HUB_MT);
  if (*slot) zv_bus_release(*slot);
  *slot = NULL;
  return 0;
}

static int l_publish(lua_State *L) {
  zv_bus_t *b = check_hub(L);
  size_t tlen, dlen, delivered, dropped;
  const char *topic = luaL_checklstring(L, 2, &tlen);
  const char *data = luaL_checklstring(L, 3, &dlen);
  int rc = zv_bus_publish(b, topic, tlen, data, dlen, &delivered, &dropped);
  if (rc) return zv_l_fail(L, rc);
  lua_pushnumber(L, (lua_Number)delivered);
  lua_pushnumber(L, (lua_Number)dropped);
  return 2;
}

static int l_published(lua_State *L) {
  lua_pushnumber(L, (lua_Number)zv_bus_published(check_hub(L)));
  return 1;
}

static int l_attach(lua_State *L) {
  zv_bus_t *b = check_hub(L);
  lua_Number cap = luaL_checknumber(L, 2);
  luaL_checktype(L, 3, LUA_TFUNCTION);
  zv_loop_t *loop = zv_loop_of(L);
  lbox_t **slot = lua_newuserdata(L, sizeof *slot);
  *slot = NULL;
  luaL_getmetatable(L, BOX_MT);
  lua_setmetatable(L, -2);
  lbox_t *lb = zv_alloc(sizeof *lb);
  if (!lb) return zv_l_fail(L, ZV_ENOMEM);
  memset(lb, 0, sizeof *lb);
  /* The async is ready before the box joins the hub: a publisher on another thread may wake
   * it at once. Its callback runs on this thread's loop, so not before this function returns. */
  if (uv_async_init(&loop->uv, &lb->async, drain)) {
    zv_free(lb);
    return zv_l_fail(L, ZV_ENOMEM);
  }
  lb->async.data = lb;
  /* A mailbox never keeps a loop running by itself (a script's loop.run() ends when its own
   * work is done); in a server the loop runs anyway. */
  uv_unref((uv_handle_t *)&lb->async);
  lb->loop = loop;
  lb->hub = b;
  lb->fn_ref = LUA_NOREF;
  int rc = zv_bus_attach(b, cap >= 1 && cap <= 16777216 ? (size_t)cap : 0, wake, lb, &lb->box);
  if (rc) {
    uv_close((uv_handle_t *)&lb->async, free_lbox);
    return zv_l_fail(L, rc);
  }
  lua_pushvalue(L, 3);
  lb->fn_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lb->item.prev = lb->item.next = NULL;
  lb->item.teardown = box_teardown;
  zv_loop_add(loop, &lb->item);
  lb->slot = slot;
  *slot = lb;
  return 1;
}

static int l_counts(lua_State *L) {
  lbox_t **slot = luaL_checkudata(L, 1, BOX_MT);
  uint64_t dropped = 0;
  size_t pending = 0;
  if (*slot) zv_bus_box_counts((*slot)->box, &dropped, &pending);
  lua_pushnumber(L, (lua_Number)dropped);
  lua_pushnumber(L, (lua_Number)pending);
  return 2;
}

static int l_detach(lua_State *L) {
  lbox_t **slot = luaL_checkudata(L, 1, BOX_MT);
  if (*slot) box_close(*slot, L);
  return 0;
}

static const luaL_Reg hub_methods[] = {
  {"publish", l_publish},
  {"published", l_published},
  {"attach", l_attach},
  {"release", l_release},
  {NULL, NULL},
};

static const luaL_Reg box_methods[] = {
  {"counts", l_counts},
  {"detach", l_detach},
  {NULL, NULL},
};

static const luaL_Reg funcs[] = {
  {"open", l_open},
  {NULL, NULL},
};

int luaopen_zever_bus_core(lua_State *L);
int luaopen_zever_bus_core(lua_State *L) {
  zv_l_newmeta(L, BOX_MT, box_methods, l_detach);
  zv_l_newclass(L, HUB_MT, hub_methods, l_release, funcs);
  return 1;
}
