/*
 * html.h: HTML escaping of text, for zever.template's <%= %> (lua/zever/template.lua calls it
 * through LuaJIT's FFI: html_ffi.h). Pure: no Lua, no allocation, no state.
 *
 * Five bytes are escaped, as OWASP's rule for text and quoted attributes asks:
 *   &  -> &amp;     <  -> &lt;     >  -> &gt;     "  -> &quot;     '  -> &#39;
 * Every other byte, UTF-8 and control bytes included, is copied as it is.
 */
#ifndef ZV_HTML_H
#define ZV_HTML_H

#include "html_ffi.h"

#endif
