/*
 * loop.c: the event loop's list of handle owners and its orderly close (see loop.h).
 *
 * It must not call into Lua: the binding does that. It must not free items: their own close
 * callbacks do, since only they know when libuv is done with the handles inside.
 */
#include "loop.h"

#include "../core/zv.h"

int zv_loop_init(zv_loop_t *loop) {
  int rc = uv_loop_init(&loop->uv);
  if (rc) return rc == UV_ENOMEM ? ZV_ENOMEM : ZV_EIO;
  loop->items.prev = loop->items.next = &loop->items;
  loop->items.teardown = NULL;
  loop->L = NULL;
  loop->running = 0;
  loop->closing = 0;
  loop->uv.data = loop;
  return 0;
}

void zv_loop_add(zv_loop_t *loop, zv_loop_item_t *item) {
  item->next = &loop->items;
  item->prev = loop->items.prev;
  loop->items.prev->next = item;
  loop->items.prev = item;
}

void zv_loop_remove(zv_loop_item_t *item) {
  if (!item->next) return;
  item->prev->next = item->next;
  item->next->prev = item->prev;
  item->prev = item->next = NULL;
}

static void close_stray(uv_handle_t *h, void *arg) {
  (void)arg;
  /* A handle nobody registered: close it so uv_loop_close succeeds. Its memory is not ours. */
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

void zv_loop_close(zv_loop_t *loop) {
  loop->closing = 1;
  /* Teardowns may run close callbacks later, never now, so the list only shrinks here. */
  while (loop->items.next != &loop->items) {
    zv_loop_item_t *item = loop->items.next;
    zv_loop_remove(item);
    if (item->teardown) item->teardown(item);
  }
  /*
   * Let the teardowns' close callbacks run first: they may close further handles of their own
   * (a server closes its idle and timer handles once its last connection is gone). Closing
   * those here as strays would close them twice.
   */
  for (int i = 0; i < 64 && uv_run(&loop->uv, UV_RUN_NOWAIT); i++) {
  }
  /* Anything still open now is nobody's and would keep uv_run going. */
  uv_walk(&loop->uv, close_stray, NULL);
  uv_run(&loop->uv, UV_RUN_DEFAULT);
  uv_loop_close(&loop->uv);
}
