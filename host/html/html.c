/*
 * html.c: HTML escaping (html.h). One table lookup per byte: a byte's extra length once
 * escaped (0 for the bytes copied as they are), so the scan that decides "nothing to escape"
 * (the common case: a name, an email address) is a loop of loads and adds. It must not
 * allocate: the caller owns the output buffer.
 */
#include <string.h>

#include "html.h"

/* The length an escaped byte adds: "&amp;" is 5 bytes for 1, so 4. */
static const unsigned char extra[256] = {
  ['&'] = 4, ['<'] = 3, ['>'] = 3, ['"'] = 5, ['\''] = 4,
};

size_t zv_html_escaped_len(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  size_t n = len;
  for (size_t i = 0; i < len; i++) n += extra[p[i]];
  return n;
}

size_t zv_html_escape(const char *s, size_t len, char *out) {
  const unsigned char *p = (const unsigned char *)s;
  char *o = out;
  size_t run = 0;
  for (size_t i = 0; i < len; i++) {
    const char *ent;
    size_t elen;
    switch (p[i]) {
    case '&': ent = "&amp;"; elen = 5; break;
    case '<': ent = "&lt;"; elen = 4; break;
    case '>': ent = "&gt;"; elen = 4; break;
    case '"': ent = "&quot;"; elen = 6; break;
    case '\'': ent = "&#39;"; elen = 5; break;
    default: continue;
    }
    /* Copy the plain run before this byte, then the entity. */
    memcpy(o, s + run, i - run);
    o += i - run;
    memcpy(o, ent, elen);
    o += elen;
    run = i + 1;
  }
  memcpy(o, s + run, len - run);
  o += len - run;
  return (size_t)(o - out);
}
