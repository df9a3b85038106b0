/*
 * lx_stream.h: what l_http.c shares with lx_stream.c (the streaming half of the zever.http
 * request object: sized heads, back-pressure and close watches). Not for use outside the
 * zever.http binding.
 */
#ifndef ZV_HTTP_LX_STREAM_H
#define ZV_HTTP_LX_STREAM_H

#include <lauxlib.h>
#include <lua.h>

#include "server.h"

/* The request object (a full userdata). c is NULL once answered or once the connection closed;
 * the connection points back through c->data. watch_ref is a Lua function waiting for the
 * connection (lx_stream.c); sized/left count what a Content-Length head still owes. */
typedef struct {
  zv_http_sconn_t *c;
  uint8_t answered, streaming, cancelled, sized;
  uint64_t left;
  uint64_t body_pos;      /* what req:body_read took of a buffered body (lx_body.c) */
  int watch_ref;
} zv__http_req_t;

/* Headers a Lua caller passes as a flat array of name, value: up to ZV__HTTP_STACK_HDRS of them
 * go in the caller's stack array, more in a userdata left on the Lua stack. The strings stay
 * referenced by the table while the caller uses them; numbers are converted on the stack and
 * stay there. Returns the number of headers; raises on a malformed array (l_http.c). */
#define ZV__HTTP_STACK_HDRS 32
size_t zv__http_get_headers(lua_State *L, int idx, zv_http_str_t **hdrs, zv_http_str_t *stack);

/* The request at index 1, checked against the two metatables (upvalues 1 and 2). */
zv__http_req_t *zv__http_check_req(lua_State *L);

/* The request's methods lx_stream.c adds (registered like l_http.c's own, same upvalues). */
extern const luaL_Reg zv__http_stream_methods[];

/* The request's body-reading methods (lx_body.c), registered the same way. */
extern const luaL_Reg zv__http_body_methods[];

/* Registers the metatable of the WebSocket frame readers (req:upgrade). */
void zv__http_ws_open(lua_State *L);

/* Calls r's watcher (and forgets it) with ok: true when the queue drained, false when the
 * connection closed. L is the state's main thread; an error in the watcher is reported. */
void zv__http_watch_fire(lua_State *L, zv__http_req_t *r, int ok);

#endif
