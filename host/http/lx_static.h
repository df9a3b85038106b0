/*
 * lx_static.h: what l_http.c takes from lx_static.c: http.listen's `static` option turned into
 * the mounts stream.c serves. Not for use outside the zever.http binding.
 */
#ifndef ZV_HTTP_LX_STATIC_H
#define ZV_HTTP_LX_STATIC_H

#include <lua.h>

#include "static.h"

/* Reads opts.static of the table at idx (nil: returns NULL) and builds the mounts. Raises a Lua
 * error for a malformed option (holding no memory then). The caller owns the result and frees
 * it with zv__http_statics_free. */
zv_static_t *zv__http_statics_new(lua_State *L, int idx);
void zv__http_statics_free(const zv_static_t *s);

#endif
